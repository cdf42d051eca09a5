"""housekeeping: an index for each purge statement that had none (interactions and refresh
tokens by expiry, grants by their code's expiry)

Revision ID: 0007
Revises: 0006
"""
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_interactions_expires_at", "interactions", ["expires_at"])
    op.create_index("ix_grants_code_expires_at", "grants", ["code_expires_at"])
    op.create_index("ix_refresh_tokens_expires_at", "refresh_tokens", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_refresh_tokens_expires_at", table_name="refresh_tokens")
    op.drop_index("ix_grants_code_expires_at", table_name="grants")
    op.drop_index("ix_interactions_expires_at", table_name="interactions")
