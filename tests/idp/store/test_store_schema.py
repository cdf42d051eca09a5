"""The store's statements and rows against the schema: Alembic's migrated database equals
schema.py, every statement compiles against that database (on the suite's backend: SQLite or
PostgreSQL), and a row type that no longer matches its statement's columns fails at start."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
from contextlib import contextmanager

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, select, text

from campusid.idp.store import StoreError, open_store
from campusid.idp.store.db import MIGRATIONS, make_engine, schema_head, upgrade
from campusid.idp.store.postgres import PostgresStore
from campusid.idp.store.repository import row_maker
from campusid.idp.store.rows import User
from campusid.idp.store.schema import metadata, users
from campusid.records.store import GradeStore


@pytest.fixture
def migrated(database_url, tmp_path):
    store = open_store(database_url, tmp_path / "data")
    yield database_url, store
    store.close()


def test_the_migrated_schema_is_schema_py(migrated):
    url, _ = migrated
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            differences = compare_metadata(MigrationContext.configure(conn), metadata)
    finally:
        engine.dispose()
    assert differences == []


def test_every_statement_compiles_against_the_migrated_database(migrated):
    """Each statement, as compiled at start, is accepted by the database; and the arguments the
    store builds for it (their order read from SQLAlchemy's compiler: store/database.py, the reason
    pyproject.toml pins SQLAlchemy's minor) are as many as the SQL's placeholders."""
    url, store = migrated
    prepared = store.prepared() + GradeStore(store).prepared()
    assert len(prepared) > 100
    names = [q.name for q in prepared]
    assert len(names) == len(set(names)), "two statements share a name (the round-trip tests tell them by it)"
    if isinstance(store, PostgresStore):
        import asyncpg

        async def prepare_all() -> list[str]:
            conn = await asyncpg.connect(url.replace("postgresql+psycopg://", "postgresql://"))
            failures = []
            try:
                for q in prepared:
                    try:
                        ps = await conn.prepare(q.sql)  # the server parses and plans it: every column must exist
                    except asyncpg.PostgresError as exc:
                        failures.append(f"{q.name}: {exc}")
                        continue
                    if len(ps.get_parameters()) != len(q.args(dict.fromkeys(q.parameters))):
                        failures.append(f"{q.name}: {len(ps.get_parameters())} placeholders, other arguments")
            finally:
                await conn.close()
            return failures

        assert asyncio.run(prepare_all()) == []
        return
    conn = sqlite3.connect(url.split("///", 1)[1])
    failures = []
    for q in prepared:
        try:
            # compiled, not run; sqlite3 refuses a number of arguments that is not the placeholders'
            conn.execute("EXPLAIN " + q.sql, q.args(dict.fromkeys(q.parameters))).fetchall()
        except sqlite3.Error as exc:
            failures.append(f"{q.name}: {exc}")
    conn.close()
    assert failures == []


def test_a_row_type_that_does_not_match_its_statement_fails_at_start(migrated):
    _, store = migrated
    dropped = store.db.prepare("USER_WITHOUT_EMAIL", select(*(c for c in users.c if c.name != "email")))
    with pytest.raises(StoreError, match="not the fields of User"):
        row_maker(User, dropped)
    assert row_maker(User, store.users._by_id)  # the real statement matches


@contextmanager
def migrations(url: str):
    """(a connection to the database at `url`, in one transaction; the Alembic config that runs
    the migrations on it: `command.upgrade(cfg, rev)`, `command.downgrade(cfg, rev)`)."""
    engine = make_engine(url)
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    try:
        with engine.begin() as conn:
            cfg.attributes["connection"] = conn
            yield conn, cfg
    finally:
        engine.dispose()


def test_sessions_signed_in_before_sids_existed_get_one_each_on_upgrade(database_url):
    """Migration 0005 gives every existing session a sid of its own (unique, not null) and the
    password's amr and acr, so a deployment upgrades without signing anyone out."""
    with migrations(database_url) as (conn, cfg):
        command.upgrade(cfg, "0004")
        conn.execute(
            text(
                "INSERT INTO users (id, username, name, role, password_hash, created_at) "
                "VALUES ('u1', 'alice', 'Alice', 'student', 'x', 0)"
            )
        )
        for n in (1, 2):
            conn.execute(
                text(
                    "INSERT INTO sessions (id_hash, user_id, auth_time, created_at, expires_at) "
                    f"VALUES ('{n:064x}', 'u1', 0, 0, 99)"
                )
            )
        command.upgrade(cfg, "head")
        rows = conn.execute(text("SELECT sid, amr, acr FROM sessions")).all()
    assert len({r.sid for r in rows}) == 2 and all(r.sid for r in rows)
    assert {(r.amr, r.acr) for r in rows} == {("pwd", "urn:campusid:acr:pwd")}


def test_a_sqlite_connection_maps_the_database_file(tmp_path):
    """Each connection memory-maps the file (store/sqlite.py, bench/README.md "Growth"): on a grown
    database the map saves most of the read() calls of the random-leaf lookups."""
    store = open_store(f"sqlite:///{tmp_path / 'campusid.db'}", tmp_path / "data")
    try:
        raw = store.db._conn().raw
        assert raw.execute("PRAGMA mmap_size").fetchone()[0] >= 1 << 30
    finally:
        store.close()


def test_migration_0011_puts_one_user_sid_index_on_grants_in_place_of_two_and_downgrades(database_url):
    """0011 replaces ix_grants_user_id and ix_grants_sid by ix_grants_user_id_sid; its downgrade
    gives the two back."""

    def grant_indexes(conn) -> dict[str, list[str]]:
        found = {ix["name"]: ix["column_names"] for ix in inspect(conn).get_indexes("grants")}
        return {
            name: columns
            for name, columns in found.items()
            if name in ("ix_grants_user_id", "ix_grants_sid", "ix_grants_user_id_sid")
        }

    with migrations(database_url) as (conn, cfg):
        command.upgrade(cfg, "0010")
        before = grant_indexes(conn)
        command.upgrade(cfg, "0011")
        upgraded = grant_indexes(conn)
        command.downgrade(cfg, "0010")
        downgraded = grant_indexes(conn)
    two = {"ix_grants_user_id": ["user_id"], "ix_grants_sid": ["sid"]}
    assert before == two
    assert upgraded == {"ix_grants_user_id_sid": ["user_id", "sid"]}
    assert downgraded == two


def test_the_head_known_without_alembic_is_alembics_head_and_the_chain_is_one_line():
    """db.schema_head() reads the head from the file names; it is right only while every file
    NNNN_what.py holds revision "NNNN" and each revises the one before it."""
    from alembic.script import ScriptDirectory

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    script = ScriptDirectory.from_config(cfg)
    assert schema_head() == script.get_current_head()
    chain = list(reversed(list(script.walk_revisions())))
    assert [r.revision for r in chain] == sorted(r.revision for r in chain)
    for before, after in zip(chain, chain[1:], strict=False):
        assert after.down_revision == before.revision
    for rev in chain:
        assert rev.path.rsplit("/", 1)[1].split("_", 1)[0] == rev.revision


def test_a_database_behind_the_head_is_migrated_and_one_at_the_head_is_left_alone(database_url, tmp_path):
    with migrations(database_url) as (_, cfg):
        command.upgrade(cfg, "0010")
    engine = make_engine(database_url)
    try:
        assert upgrade(engine, tmp_path) == schema_head()
        with engine.connect() as conn:
            assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar() == schema_head()
            assert "ix_grants_user_id_sid" in {i["name"] for i in inspect(conn).get_indexes("grants")}
    finally:
        engine.dispose()
    # At the head, a fresh process (as each CLI command is) opens the store without Alembic.
    probe = (
        "import sys; from pathlib import Path; from campusid.idp.store.db import make_engine, upgrade;"
        f"e = make_engine({database_url!r}); print(upgrade(e, Path({str(tmp_path)!r})));"
        "e.dispose(); print(sorted(m for m in sys.modules if m.split('.')[0] == 'alembic'))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split("\n")[:2] == [schema_head(), "[]"], out.stdout + out.stderr
