"""an app apart from its protocol's registration: the OIDC part of every app (secret, redirect URIs,
sector, grant types, logout URIs) moves from clients to oidc_registrations, one row per web or
native app; clients keeps what every face's apps have (owner, review, bundles, require_mfa)

Revision ID: 0012
Revises: 0011
"""
import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

# The registration's columns, as clients held them.
MOVED = (
    "secret_hash",
    "redirect_uris",
    "sector_identifier_uri",
    "grant_types",
    "granted_grant_types",
    "post_logout_redirect_uris",
    "backchannel_logout_uri",
)


def upgrade() -> None:
    op.create_table(
        "oidc_registrations",
        sa.Column("client_id", sa.String(64), nullable=False),
        sa.Column("secret_hash", sa.String(64)),
        sa.Column("redirect_uris", sa.JSON(), nullable=False),
        sa.Column("sector_identifier_uri", sa.String(2000)),
        sa.Column("grant_types", sa.JSON(), nullable=False, server_default="[]"),
        sa.Column("granted_grant_types", sa.JSON(), nullable=False, server_default="[]"),
        sa.Column("post_logout_redirect_uris", sa.JSON(), nullable=False, server_default="[]"),
        sa.Column("backchannel_logout_uri", sa.String(2000)),
        sa.ForeignKeyConstraint(["client_id"], ["clients.client_id"], name="fk_oidc_registrations_client_id_clients"),
        sa.PrimaryKeyConstraint("client_id", name="pk_oidc_registrations"),
    )
    columns = ", ".join(("client_id", *MOVED))
    op.execute(f"INSERT INTO oidc_registrations ({columns}) SELECT {columns} FROM clients")  # noqa: S608 - our names
    # Native ALTER TABLE … DROP COLUMN on both databases (SQLite 3.35+): a batch rebuild would drop
    # and recreate clients, which the foreign keys of client_events forbid while they are enforced.
    for column in MOVED:
        op.execute(f"ALTER TABLE clients DROP COLUMN {column}")


def downgrade() -> None:
    with op.batch_alter_table("clients") as batch:
        batch.add_column(sa.Column("secret_hash", sa.String(64)))
        batch.add_column(sa.Column("redirect_uris", sa.JSON(), nullable=False, server_default="[]"))
        batch.add_column(sa.Column("sector_identifier_uri", sa.String(2000)))
        batch.add_column(sa.Column("grant_types", sa.JSON(), nullable=False, server_default="[]"))
        batch.add_column(sa.Column("granted_grant_types", sa.JSON(), nullable=False, server_default="[]"))
        batch.add_column(sa.Column("post_logout_redirect_uris", sa.JSON(), nullable=False, server_default="[]"))
        batch.add_column(sa.Column("backchannel_logout_uri", sa.String(2000)))
    for column in MOVED:
        op.execute(
            f"UPDATE clients SET {column} = (SELECT r.{column} FROM oidc_registrations r "  # noqa: S608 - our names
            "WHERE r.client_id = clients.client_id) WHERE client_id IN (SELECT client_id FROM oidc_registrations)"
        )
    op.drop_table("oidc_registrations")
