"""Refresh-token rotation is one transaction: the presented token is marked used and its
successor stored together (RFC 9700 4.14.2). Were they two statements, a database failure between
them would leave the client's token used with no successor, and the client's next try would be a
reuse that revokes the whole family: a grant lost (the PostgreSQL-restart fault test found this)."""

from __future__ import annotations

import time

import pytest

from campusid.idp.store.errors import StoreError
from tests.idp.conftest import NATIVE_REDIRECT
from tests.idp.helpers import run
from tests.idp.store.test_housekeeping import GRANT_COLS, REFRESH_COLS, count, seed


def seed_family(idp, now: int) -> None:
    url = idp.settings.database_url
    grant = ("g1", "gc1", idp.native_id, idp.student.id, NATIVE_REDIRECT, "c", "openid", now, now, now + 60, now)
    seed(url, "grants", GRANT_COLS, [grant])
    tokens = [("old", "g1", now, now + 3600, None), ("taken", "g1", now, now + 3600, now)]
    seed(url, "refresh_tokens", REFRESH_COLS, tokens)


def test_a_rotation_that_cannot_store_its_successor_leaves_the_presented_token_unused(idp):
    now = int(time.time())
    seed_family(idp, now)
    # the successor's digest collides with a stored token: its INSERT fails inside the transaction
    with pytest.raises(StoreError):
        run(idp.store, idp.store.grants.rotate_refresh("old", now, "taken", now + 3600))
    url = idp.settings.database_url
    assert count(url, "SELECT count(*) FROM refresh_tokens WHERE token_hash = 'old' AND used_at IS NULL") == 1
    # and the token still rotates, once, with its successor stored
    grant = run(idp.store, idp.store.grants.rotate_refresh("old", now, "new", now + 3600))
    assert grant is not None and grant.id == "g1"
    assert count(url, "SELECT count(*) FROM refresh_tokens WHERE token_hash = 'new' AND grant_id = 'g1'") == 1
    assert run(idp.store, idp.store.grants.rotate_refresh("old", now, "newer", now + 3600)) is None
    assert count(url, "SELECT count(*) FROM refresh_tokens WHERE token_hash = 'newer'") == 0
