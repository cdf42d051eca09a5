"""device authorization grant (RFC 8628): the device_codes table, and the grant types an app asks
for and its review granted (clients.grant_types, clients.granted_grant_types)

Revision ID: 0006
Revises: 0005
"""
import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Existing apps ask for, and were granted, no grant type beyond the code flow and refresh.
    with op.batch_alter_table("clients") as batch:
        batch.add_column(sa.Column("grant_types", sa.JSON(), nullable=False, server_default="[]"))
        batch.add_column(sa.Column("granted_grant_types", sa.JSON(), nullable=False, server_default="[]"))
    op.create_table(
        "device_codes",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("device_code_hash", sa.String(64), nullable=False),
        sa.Column("user_code_hash", sa.String(64), nullable=False),
        sa.Column("client_id", sa.String(64), nullable=False),
        sa.Column("scope", sa.String(1000), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("user_id", sa.String(32)),
        sa.Column("auth_time", sa.BigInteger()),
        sa.Column("sid", sa.String(64)),
        sa.Column("amr", sa.String(64)),
        sa.Column("acr", sa.String(64)),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("expires_at", sa.BigInteger(), nullable=False),
        sa.Column("poll_interval", sa.Integer(), nullable=False),
        sa.Column("polled_at_ms", sa.BigInteger()),
        sa.Column("decided_at", sa.BigInteger()),
        sa.Column("redeemed_at", sa.BigInteger()),
        sa.PrimaryKeyConstraint("id", name="pk_device_codes"),
        sa.UniqueConstraint("device_code_hash", name="uq_device_codes_device_code_hash"),
        sa.UniqueConstraint("user_code_hash", name="uq_device_codes_user_code_hash"),
    )
    op.create_index("ix_device_codes_expires_at", "device_codes", ["expires_at"])


def downgrade() -> None:
    op.drop_table("device_codes")
    with op.batch_alter_table("clients") as batch:
        batch.drop_column("granted_grant_types")
        batch.drop_column("grant_types")
