"""CAS (Apereo CAS Protocol 3.0.3): the registration of CAS apps (cas_registrations: services and
the proxy grant; cas_services: each service by origin, for /cas/login's lookup), the tickets kept
as hashes (cas_tickets), the tickets validated in each session (cas_validations, for single
logout), and logout_notices for every face (face, target, session_index)

Revision ID: 0013
Revises: 0012
"""
import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "cas_registrations",
        sa.Column("client_id", sa.String(64), nullable=False),
        sa.Column("services", sa.JSON(), nullable=False),
        sa.Column("grant_types", sa.JSON(), nullable=False, server_default="[]"),
        sa.Column("granted_grant_types", sa.JSON(), nullable=False, server_default="[]"),
        sa.ForeignKeyConstraint(["client_id"], ["clients.client_id"], name="fk_cas_registrations_client_id_clients"),
        sa.PrimaryKeyConstraint("client_id", name="pk_cas_registrations"),
    )
    op.create_table(
        "cas_services",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("origin", sa.String(300), nullable=False),
        sa.Column("path", sa.String(2048), nullable=False),
        sa.Column("client_id", sa.String(64), nullable=False),
        sa.ForeignKeyConstraint(["client_id"], ["clients.client_id"], name="fk_cas_services_client_id_clients"),
        sa.PrimaryKeyConstraint("id", name="pk_cas_services"),
    )
    op.create_index("ix_cas_services_origin", "cas_services", ["origin"])
    op.create_index("ix_cas_services_client_id", "cas_services", ["client_id"])
    op.create_table(
        "cas_tickets",
        sa.Column("id_hash", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(8), nullable=False),
        sa.Column("client_id", sa.String(64), nullable=False),
        sa.Column("service", sa.String(2048), nullable=False),
        sa.Column("user_id", sa.String(32), nullable=False),
        sa.Column("sid", sa.String(64), nullable=False),
        sa.Column("auth_time", sa.BigInteger(), nullable=False),
        sa.Column("new_login", sa.Boolean(), nullable=False),
        sa.Column("proxies", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("expires_at", sa.BigInteger(), nullable=False),
        sa.Column("session_expires_at", sa.BigInteger(), nullable=False),
        sa.Column("used_at", sa.BigInteger()),
        sa.PrimaryKeyConstraint("id_hash", name="pk_cas_tickets"),
    )
    op.create_index("ix_cas_tickets_expires_at", "cas_tickets", ["expires_at"])
    op.create_index("ix_cas_tickets_user_id_sid", "cas_tickets", ["user_id", "sid"])
    op.create_index("ix_cas_tickets_client_id", "cas_tickets", ["client_id"])
    op.create_table(
        "cas_validations",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False),
        sa.Column("client_id", sa.String(64), nullable=False),
        sa.Column("user_id", sa.String(32), nullable=False),
        sa.Column("sid", sa.String(64), nullable=False),
        sa.Column("service", sa.String(2048), nullable=False),
        sa.Column("ticket_sealed", sa.String(255), nullable=False),
        sa.Column("validated_at", sa.BigInteger(), nullable=False),
        sa.Column("expires_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_cas_validations"),
    )
    op.create_index("ix_cas_validations_expires_at", "cas_validations", ["expires_at"])
    op.create_index("ix_cas_validations_user_id_sid", "cas_validations", ["user_id", "sid"])
    op.create_index("ix_cas_validations_client_id", "cas_validations", ["client_id"])
    # Every notice queued so far is an OIDC back-channel one.
    with op.batch_alter_table("logout_notices") as batch:
        batch.add_column(sa.Column("face", sa.String(16), nullable=False, server_default="oidc"))
        batch.add_column(sa.Column("target", sa.String(2048)))
        batch.add_column(sa.Column("session_index", sa.String(255)))


def downgrade() -> None:
    op.execute("DELETE FROM logout_notices WHERE face <> 'oidc'")
    with op.batch_alter_table("logout_notices") as batch:
        batch.drop_column("session_index")
        batch.drop_column("target")
        batch.drop_column("face")
    op.drop_table("cas_validations")
    op.drop_table("cas_tickets")
    op.drop_table("cas_services")
    op.drop_table("cas_registrations")
