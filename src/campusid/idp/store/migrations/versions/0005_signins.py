"""sign-ins: disabled accounts; each session's public id (sid) and how the user authenticated
(amr, acr), carried by interactions and grants into ID tokens; indexes for ending a user's or a
session's sessions and grants

Revision ID: 0005
Revises: 0004
"""
import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("users", sa.Column("disabled_at", sa.BigInteger()))
    op.add_column("sessions", sa.Column("sid", sa.String(64)))
    op.add_column("sessions", sa.Column("amr", sa.String(64), nullable=False, server_default="pwd"))
    op.add_column("sessions", sa.Column("acr", sa.String(64), nullable=False, server_default="urn:campusid:acr:pwd"))
    # Sessions that exist already get a sid of their own: the digest of their id (unique, and as
    # opaque as a fresh random value, since the id's digest reveals nothing of the cookie).
    op.execute("UPDATE sessions SET sid = id_hash")
    with op.batch_alter_table("sessions") as batch:
        batch.alter_column("sid", existing_type=sa.String(64), nullable=False)
        batch.create_unique_constraint("uq_sessions_sid", ["sid"])
    op.create_index("ix_sessions_user_id", "sessions", ["user_id"])
    for name in ("sid", "amr", "acr"):
        op.add_column("interactions", sa.Column(name, sa.String(64)))
        op.add_column("grants", sa.Column(name, sa.String(64)))
    op.create_index("ix_grants_sid", "grants", ["sid"])
    op.create_index("ix_grants_user_id", "grants", ["user_id"])


def downgrade() -> None:
    op.drop_index("ix_grants_user_id", table_name="grants")
    op.drop_index("ix_grants_sid", table_name="grants")
    for name in ("acr", "amr", "sid"):
        with op.batch_alter_table("grants") as batch:
            batch.drop_column(name)
        with op.batch_alter_table("interactions") as batch:
            batch.drop_column(name)
    op.drop_index("ix_sessions_user_id", table_name="sessions")
    with op.batch_alter_table("sessions") as batch:
        batch.drop_constraint("uq_sessions_sid", type_="unique")
        batch.drop_column("acr")
        batch.drop_column("amr")
        batch.drop_column("sid")
    with op.batch_alter_table("users") as batch:
        batch.drop_column("disabled_at")
