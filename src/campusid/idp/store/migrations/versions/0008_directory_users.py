"""directory accounts: where each user comes from ("local" or "directory") and a directory
account's stable identifier (entryUUID / objectGUID), a unique index; an index on source for sync

Revision ID: 0008
Revises: 0006
"""
import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("users", sa.Column("source", sa.String(16), nullable=False, server_default="local"))
    op.add_column("users", sa.Column("external_id", sa.String(255)))
    # a unique index (not a constraint): SQLite adds it without rebuilding users, which others reference
    op.create_index("ix_users_external_id", "users", ["external_id"], unique=True)
    op.create_index("ix_users_source", "users", ["source"])


def downgrade() -> None:
    op.drop_index("ix_users_source", table_name="users")
    op.drop_index("ix_users_external_id", table_name="users")
    with op.batch_alter_table("users") as batch:
        batch.drop_column("external_id")
        batch.drop_column("source")
