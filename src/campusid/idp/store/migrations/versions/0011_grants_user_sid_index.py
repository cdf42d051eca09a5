"""grants: one (user_id, sid) index in place of the two on user_id and on sid. Every statement
that ends the grants of a session knows the session's user (store/statements.py), and those of
a user read the index's first column, so one B-tree serves both and each issued code updates
one index fewer

Revision ID: 0011
Revises: 0010
"""
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_grants_user_id_sid", "grants", ["user_id", "sid"])
    op.drop_index("ix_grants_sid", table_name="grants")
    op.drop_index("ix_grants_user_id", table_name="grants")


def downgrade() -> None:
    op.create_index("ix_grants_user_id", "grants", ["user_id"])
    op.create_index("ix_grants_sid", "grants", ["sid"])
    op.drop_index("ix_grants_user_id_sid", table_name="grants")
