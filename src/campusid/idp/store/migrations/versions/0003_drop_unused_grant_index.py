"""drop ix_grants_user_client: no query reads grants by user and client, and every issued code
paid for keeping it up to date

Revision ID: 0003
Revises: 0002
"""
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.drop_index("ix_grants_user_client", table_name="grants")


def downgrade() -> None:
    op.create_index("ix_grants_user_client", "grants", ["user_id", "client_id"])
