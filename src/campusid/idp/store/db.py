"""Opening the store: migrations on first use (Alembic, through a synchronous SQLAlchemy engine
that exists only for them), then the async store for the database the URL names."""

from __future__ import annotations

import contextlib
import fcntl
import logging
from pathlib import Path

from sqlalchemy import create_engine, event, make_url, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError, OperationalError

from campusid.idp.store.errors import StoreError
from campusid.idp.store.store import Store

log = logging.getLogger("campusid.store")
MIGRATIONS = Path(__file__).parent / "migrations"


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA busy_timeout=10000")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


def make_engine(url: str) -> Engine:
    """The synchronous engine Alembic migrates with (and tests inspect with); never used by requests."""
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"check_same_thread": False})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    # Pre-ping: after a PostgreSQL restart the first migration or inspection must not fail on a
    # connection the server closed; these are rare, so the extra round trip costs nothing.
    return create_engine(url, pool_size=2, max_overflow=2, pool_pre_ping=True, pool_recycle=1800)


@contextlib.contextmanager
def _migration_lock(engine: Engine, data_dir: Path):
    """Serialise migrations between processes: an advisory lock on PostgreSQL, a file lock for SQLite."""
    if engine.dialect.name == "postgresql":
        with engine.connect() as conn:
            conn.execute(text("SELECT pg_advisory_lock(72873101)"))
            try:
                yield
            finally:
                conn.execute(text("SELECT pg_advisory_unlock(72873101)"))
                conn.commit()
        return
    data_dir.mkdir(parents=True, exist_ok=True)
    with open(data_dir / ".migrate.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def schema_head() -> str:
    """The newest migration's revision, known without importing Alembic: each file in versions/
    is named after its revision (`NNNN_what.py` holds `revision = "NNNN"`) and they form one chain
    (tests/idp/store/test_store_schema.py holds both), so the head is the highest prefix."""
    return max(p.name.split("_", 1)[0] for p in (MIGRATIONS / "versions").glob("[0-9][0-9][0-9][0-9]_*.py"))


def _revision_in_place(engine: Engine) -> str | None:
    """The revision Alembic recorded, or None when there is none yet (or the database cannot be
    read: the full path below then says why)."""
    try:
        with engine.connect() as conn:
            return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
    except DBAPIError:
        return None


def upgrade(engine: Engine, data_dir: Path) -> str:
    """Bring the schema to the newest migration; returns the revision now in place. A database
    already at the head costs one SELECT: every CLI command and worker start comes through here."""
    head = schema_head()
    if _revision_in_place(engine) == head:
        return head
    from alembic import command
    from alembic.config import Config
    from alembic.runtime.migration import MigrationContext

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    try:
        with _migration_lock(engine, data_dir), engine.begin() as conn:
            current = MigrationContext.configure(conn).get_current_revision()
            if current != head:
                cfg.attributes["connection"] = conn
                command.upgrade(cfg, "head")
    except OperationalError as exc:
        raise StoreError(f"cannot open the database: {exc.orig}") from None
    return head


def store_for(database_url: str) -> Store:
    """The async store for a SQLAlchemy URL (its statements compiled for that database)."""
    url = make_url(database_url)
    if url.get_backend_name() == "postgresql":
        from campusid.idp.store.postgres import PostgresDatabase, PostgresStore

        dsn = url.set(drivername="postgresql").render_as_string(hide_password=False)
        return PostgresStore(PostgresDatabase(dsn))
    if url.get_backend_name() == "sqlite" and url.database and url.database != ":memory:":
        from campusid.idp.store.sqlite import SQLiteDatabase, SQLiteStore

        return SQLiteStore(SQLiteDatabase(url.database))
    raise StoreError(f"unsupported database URL {url.render_as_string()!r}: use sqlite:///FILE or postgresql://…")


def open_store(database_url: str, data_dir: Path, migrate: bool = True) -> Store:
    """Migrate the database (unless `migrate` is False) and return its store."""
    if migrate:
        engine = make_engine(database_url)
        try:
            upgrade(engine, data_dir)
        finally:
            engine.dispose()
    return store_for(database_url)
