"""single logout: the post-logout redirect URIs and back-channel logout URI an app registers
(clients.post_logout_redirect_uris, clients.backchannel_logout_uri), and the queue of logout
notices every worker drains (logout_notices)

Revision ID: 0010
Revises: 0006
"""
import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Existing apps registered neither: RP-initiated logout shows "signed out", nobody is notified.
    with op.batch_alter_table("clients") as batch:
        batch.add_column(sa.Column("post_logout_redirect_uris", sa.JSON(), nullable=False, server_default="[]"))
        batch.add_column(sa.Column("backchannel_logout_uri", sa.String(2000)))
    op.create_table(
        "logout_notices",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False),
        sa.Column("client_id", sa.String(64), nullable=False),
        sa.Column("user_id", sa.String(32), nullable=False),
        sa.Column("sid", sa.String(64), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("next_at", sa.BigInteger(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("claim", sa.String(32)),
        sa.Column("failed_at", sa.BigInteger()),
        sa.PrimaryKeyConstraint("id", name="pk_logout_notices"),
    )
    op.create_index("ix_logout_notices_next_at", "logout_notices", ["failed_at", "next_at"])
    op.create_index("ix_logout_notices_sid", "logout_notices", ["sid"])
    # Suspending an app revokes its grants and notifies its sessions: found by client_id.
    op.create_index("ix_grants_client_id", "grants", ["client_id"])


def downgrade() -> None:
    op.drop_index("ix_grants_client_id", "grants")
    op.drop_table("logout_notices")
    with op.batch_alter_table("clients") as batch:
        batch.drop_column("backchannel_logout_uri")
        batch.drop_column("post_logout_redirect_uris")
