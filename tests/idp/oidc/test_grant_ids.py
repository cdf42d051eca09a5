"""Grant ids (protocol/ids.py): 32 hex digits led by a millisecond clock, so grants are inserted
at the right edge of their B-trees; unique by their 80 random bits; made wherever a grant starts
(the code flow's authorization, the device grant's redemption)."""

from __future__ import annotations

import re
import secrets
import time

from sqlalchemy import text

from campusid.idp.oidc.rules.grant_ids import GRANT_ID_LENGTH, new_grant_id
from campusid.idp.store.db import make_engine
from tests.idp.conftest import NATIVE_REDIRECT
from tests.idp.device_helpers import decide, device_app, poll, start
from tests.idp.helpers import Clock, auth_params, code_exchange, login_through_pages

GRANT_ID = re.compile(r"^[0-9a-f]{32}$")


def ms_of(grant_id: str) -> int:
    return int(grant_id[:12], 16)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def test_an_id_is_32_hex_digits_led_by_its_millisecond():
    assert GRANT_ID_LENGTH == 32
    for ms in (0, 1, 1_795_920_159_123, (1 << 48) - 1):
        grant_id = new_grant_id(ms)
        assert GRANT_ID.match(grant_id) and ms_of(grant_id) == ms, grant_id


def test_an_id_of_a_later_millisecond_sorts_after_every_id_of_an_earlier_one():
    # whatever the random bits: the clock leads, as text and as the database compares the column
    for _ in range(2000):
        earlier = secrets.randbelow(1 << 47)
        later = earlier + 1 + secrets.randbelow(1000)
        assert new_grant_id(earlier) < new_grant_id(later)


def test_ids_made_in_a_tight_loop_are_unique_and_sort_in_the_order_they_were_made():
    before = now_ms()
    ids = [new_grant_id() for _ in range(100_000)]
    after = now_ms()
    assert len(set(ids)) == len(ids)
    assert all(GRANT_ID.match(i) for i in ids)
    assert before <= ms_of(ids[0]) and ms_of(ids[-1]) <= after
    # sorting the ids keeps the order in which their milliseconds were made (many share one:
    # the random part tells them apart, and is never repeated)
    assert [ms_of(i) for i in sorted(ids)] == [ms_of(i) for i in ids]
    assert len({i[12:] for i in ids}) == len(ids)


def grant_ids(url: str) -> list[str]:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return [row[0] for row in conn.execute(text("SELECT id FROM grants ORDER BY created_at, id"))]
    finally:
        engine.dispose()


def test_the_code_flow_and_the_device_grant_start_grants_with_such_ids(idp, browser):
    before = now_ms()
    flow = auth_params(idp.native_id, NATIVE_REDIRECT, scope="openid")
    code = login_through_pages(browser, idp.issuer, flow, "alice")["code"]
    first = grant_ids(idp.settings.database_url)
    r = browser.post("/oauth/token", data=code_exchange(flow, code, NATIVE_REDIRECT, client_id=idp.native_id))
    assert r.status_code == 200, r.text

    idp.ctx.clock = clock = Clock()
    device_app(idp, "bot")
    started = start(browser, "bot").json()
    decide(browser, idp.issuer, started["user_code"])
    clock.advance(5)
    assert poll(browser, "bot", started["device_code"]).status_code == 200
    after = now_ms()

    ids = grant_ids(idp.settings.database_url)
    assert len(first) == 1 and len(ids) == 2 and first[0] in ids
    assert all(GRANT_ID.match(i) and before <= ms_of(i) <= after for i in ids), ids
    assert ms_of(first[0]) <= ms_of(next(i for i in ids if i != first[0]))
