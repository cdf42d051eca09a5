"""events: the security audit trail (sign-ins, tokens, consents, keys, apps)

Revision ID: 0004
Revises: 0003
"""
import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "events",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True),
        sa.Column("at", sa.BigInteger(), nullable=False),
        sa.Column("type", sa.String(32), nullable=False),
        sa.Column("username", sa.String(64)),
        sa.Column("client_id", sa.String(64)),
        sa.Column("ip", sa.String(64)),
        sa.Column("detail", sa.String(500), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_events"),
    )
    op.create_index("ix_events_at", "events", ["at"])
    op.create_index("ix_events_type_id", "events", ["type", "id"])
    op.create_index("ix_events_username_id", "events", ["username", "id"])
    op.create_index("ix_events_client_id_id", "events", ["client_id", "id"])


def downgrade() -> None:
    op.drop_table("events")
