"""Alembic environment: runs on the connection the caller hands over (see store.db.upgrade)."""

from alembic import context

from campusid.idp.store.schema import metadata

connection = context.config.attributes.get("connection")
if connection is None:  # pragma: no cover - only `alembic` on the command line lands here
    raise SystemExit("run migrations with `campusid db upgrade`")
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
