"""Engine creation, migrations on first use, and the `Store` that groups the repositories."""

from __future__ import annotations

import contextlib
import fcntl
import logging
from pathlib import Path

from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError

from campusid.idp.store.errors import StoreError
from campusid.idp.store.hot import hot_path_for
from campusid.idp.store.repos import (
    ClientRepo,
    ConsentRepo,
    GradeRepo,
    GrantRepo,
    InteractionRepo,
    KeyRepo,
    SessionRepo,
    UserRepo,
)

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
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, pool_size=8, max_overflow=16, connect_args={"check_same_thread": False})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    # No pre-ping: it would add a round trip to every checkout. A connection the server dropped
    # fails one request and SQLAlchemy then invalidates the pool; pool_recycle retires old ones.
    return create_engine(url, pool_size=8, max_overflow=16, pool_recycle=1800)


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


def upgrade(engine: Engine, data_dir: Path) -> str:
    """Bring the schema to the newest migration; returns the revision now in place."""
    from alembic import command
    from alembic.config import Config
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    head = ScriptDirectory.from_config(cfg).get_current_head()
    try:
        with _migration_lock(engine, data_dir), engine.begin() as conn:
            current = MigrationContext.configure(conn).get_current_revision()
            if current != head:
                cfg.attributes["connection"] = conn
                command.upgrade(cfg, "head")
    except OperationalError as exc:
        raise StoreError(f"cannot open the database: {exc.orig}") from None
    return head


class Store:
    """Every repository over one engine, and the async hot path over the same database."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.users = UserRepo(engine)
        self.clients = ClientRepo(engine)
        self.keys = KeyRepo(engine)
        self.sessions = SessionRepo(engine)
        self.interactions = InteractionRepo(engine)
        self.grants = GrantRepo(engine)
        self.consents = ConsentRepo(engine)
        self.grades = GradeRepo(engine)
        self.hot = hot_path_for(engine.url)

    def close(self) -> None:
        self.hot.backend.close()
        self.engine.dispose()


def open_store(database_url: str, data_dir: Path, migrate: bool = True) -> Store:
    engine = make_engine(database_url)
    if migrate:
        upgrade(engine, data_dir)
    return Store(engine)
