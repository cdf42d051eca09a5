"""bench/run.py --scale's seeder (bench/README.md, "Growth"): the grown database it writes keeps the
schema's rules, and the purge deletes exactly its expired rows and no live one."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import func, select, text

from campusid.idp.store import open_store
from campusid.idp.store.db import make_engine
from campusid.idp.store.schema import clients, grants, refresh_tokens, sessions, users

RUN_PY = Path(__file__).resolve().parents[3] / "bench" / "run.py"


@pytest.fixture(scope="module")
def bench_run():
    spec = importlib.util.spec_from_file_location("bench_run", RUN_PY)
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_run"] = module  # the dataclasses resolve their module by name
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("bench_run", None)


def _counts(engine) -> dict[str, int]:
    with engine.connect() as c:
        tables = (users, sessions, grants, refresh_tokens)
        return {t.name: c.execute(select(func.count()).select_from(t)).scalar() for t in tables}


@pytest.mark.timeout(300)
def test_the_grown_database_is_consistent_and_the_purge_leaves_exactly_its_live_rows(bench_run, database_url, tmp_path):
    store = open_store(database_url, tmp_path / "data")
    now = int(time.time())
    engine = make_engine(database_url)
    with engine.begin() as c:
        c.execute(users.insert(), {"id": "u-owner", "username": "dev", "name": "Dev", "role": "developer",
                                   "password_hash": "the owner's", "created_at": now})  # fmt: skip
        c.execute(clients.insert(), {"client_id": "app-web", "name": "Web", "type": "web", "state": "active",
                                     "redirect_uris": ["https://rp.example/callback"], "scopes": ["openid"],
                                     "granted_scopes": ["openid"], "justifications": {}, "owner_id": "u-owner",
                                     "created_at": now, "updated_at": now})  # fmt: skip
    postgres = database_url.startswith("postgresql")
    server = bench_run.Server(
        "postgres" if postgres else "sqlite", "http://127.0.0.1", None,
        [{"client_id": "app-web", "type": "web", "redirect_uris": ["https://rp.example/callback"]}],
        {}, tmp_path / "log", password_hash="$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA",
        env={"CAMPUSID_DATA_DIR": str(tmp_path)},  # where the SQLite file is
        db_name=database_url.rsplit("/", 1)[1] if postgres else None,
    )  # fmt: skip
    scale = 0.0006  # 600 users, 600 live and 3,000 expired rows
    want = bench_run.scale_sizes(scale)
    written = bench_run.seed_grown(server, scale)
    grants_n = want["live_grants"] + want["expired_grants"]
    assert written == {
        "users": want["users"],
        **{f"{k}_{t}": want[f"{k}_{'grants' if t == 'refresh_tokens' else t}"]
           for k in ("live", "expired") for t in ("sessions", "grants", "refresh_tokens")},
    }  # fmt: skip
    assert _counts(engine) == {"users": want["users"] + 1, "sessions": want["live_sessions"] + want["expired_sessions"],
                               "grants": grants_n, "refresh_tokens": grants_n}  # fmt: skip
    with engine.connect() as c:
        # every reference resolves (the foreign keys, and the grants' users and sessions' users)
        orphans = c.execute(text(
            "SELECT (SELECT count(*) FROM sessions s WHERE NOT EXISTS (SELECT 1 FROM users u WHERE u.id = s.user_id))"
            " + (SELECT count(*) FROM grants g WHERE NOT EXISTS (SELECT 1 FROM users u WHERE u.id = g.user_id))"
            " + (SELECT count(*) FROM refresh_tokens r"
            "    WHERE NOT EXISTS (SELECT 1 FROM grants g WHERE g.id = r.grant_id))"
        )).scalar()  # fmt: skip
        assert orphans == 0
        assert (
            c.execute(select(func.count(func.distinct(users.c.password_hash)))).scalar() == 2
        )  # the owner's, and one reused for every seeded user
        # the secrets' digests are SHA-256 hex, each distinct
        assert c.execute(select(func.count(func.distinct(grants.c.code_hash)))).scalar() == grants_n
        assert c.execute(select(func.min(func.length(refresh_tokens.c.token_hash)))).scalar() == 64

    store.janitor.purge_pace = 0
    purged = asyncio.run(store.janitor.purge(now=now, tokens_before=now - 900, events_before=now - 90 * 86400))
    assert purged["sessions"] == want["expired_sessions"]
    assert purged["grants"] == purged["refresh_tokens"] == want["expired_grants"]
    assert _counts(engine) == {"users": want["users"] + 1, "sessions": want["live_sessions"],
                               "grants": want["live_grants"], "refresh_tokens": want["live_grants"]}  # fmt: skip
    engine.dispose()
    store.close()
