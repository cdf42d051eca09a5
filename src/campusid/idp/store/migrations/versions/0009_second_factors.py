"""second factors and the account page: the factors and recovery_codes tables, apps approved with
--require-mfa (clients.require_mfa), and what /account shows of a session (ip, user_agent,
last_seen_at)

Revision ID: 0009
Revises: 0006
"""
import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("clients") as batch:
        batch.add_column(sa.Column("require_mfa", sa.Boolean(), nullable=False, server_default=sa.false()))
    with op.batch_alter_table("sessions") as batch:
        batch.add_column(sa.Column("ip", sa.String(64)))
        batch.add_column(sa.Column("user_agent", sa.String(200)))
        batch.add_column(sa.Column("last_seen_at", sa.BigInteger()))
    op.create_table(
        "factors",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("user_id", sa.String(32), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("label", sa.String(100), nullable=False),
        sa.Column("secret_enc", sa.LargeBinary()),
        sa.Column("credential_id", sa.String(1400)),
        sa.Column("public_key", sa.LargeBinary()),
        sa.Column("sign_count", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("last_step", sa.BigInteger()),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("confirmed_at", sa.BigInteger()),
        sa.Column("last_used_at", sa.BigInteger()),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name="fk_factors_user_id_users"),
        sa.PrimaryKeyConstraint("id", name="pk_factors"),
        sa.UniqueConstraint("credential_id", name="uq_factors_credential_id"),
    )
    op.create_index("ix_factors_user_id", "factors", ["user_id"])
    op.create_table(
        "recovery_codes",
        sa.Column("user_id", sa.String(32), nullable=False),
        sa.Column("code_hash", sa.String(64), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("used_at", sa.BigInteger()),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name="fk_recovery_codes_user_id_users"),
        sa.PrimaryKeyConstraint("user_id", "code_hash", name="pk_recovery_codes"),
    )


def downgrade() -> None:
    op.drop_table("recovery_codes")
    op.drop_index("ix_factors_user_id", table_name="factors")
    op.drop_table("factors")
    with op.batch_alter_table("sessions") as batch:
        batch.drop_column("last_seen_at")
        batch.drop_column("user_agent")
        batch.drop_column("ip")
    with op.batch_alter_table("clients") as batch:
        batch.drop_column("require_mfa")
