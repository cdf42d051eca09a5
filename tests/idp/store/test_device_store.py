"""The store's device-code methods on the suite's database (SQLite, or PostgreSQL with its pool, where
the concurrent calls really overlap): one decision and one redemption win, and the purge removes
expired codes only, a bounded batch at a time."""

from __future__ import annotations

import asyncio
import time

import pytest

from campusid.idp.crypto import new_token, token_hash
from campusid.idp.signin.authn import password_sign_in
from campusid.idp.store import open_store
from campusid.idp.store.devices import APPROVED, DENIED, PENDING, REDEEMED
from campusid.idp.store.rows import DeviceCode, Session, SignIn
from tests.idp.helpers import make_user, run


@pytest.fixture
def store(database_url, tmp_path):
    s = open_store(database_url, tmp_path / "data")
    yield s
    s.close()


def code(client_id: str, now: int, expires_in: int = 600) -> tuple[str, DeviceCode]:
    device_code = new_token(32)
    return device_code, DeviceCode(
        id=new_token(16),
        device_code_hash=token_hash(device_code),
        user_code_hash=token_hash(new_token(8)),
        client_id=client_id,
        scope="openid",
        status=PENDING,
        user_id=None,
        auth_time=None,
        sid=None,
        amr=None,
        acr=None,
        created_at=now,
        expires_at=now + expires_in,
        poll_interval=5,
        polled_at_ms=None,
        decided_at=None,
        redeemed_at=None,
    )


def signed_in(store, user_id: str, now: int) -> SignIn:
    """A live browser session of the user: the sign-in a device code is approved in."""
    sign_in = password_sign_in(user_id, now)
    session = Session(token_hash(new_token()), user_id, now, now, now + 3600, sign_in.sid, sign_in.amr, sign_in.acr)
    run(store, store.sessions.start(session))
    return sign_in


def test_of_concurrent_decisions_and_redemptions_exactly_one_wins(store):
    user = make_user(store, "alice")
    now = int(time.time())
    device_code, row = code("bot", now)
    sign_in = signed_in(store, user.id, now)

    async def main() -> tuple[list[bool], list, bool]:
        async with store:
            await store.devices.create(row)
            decisions = await asyncio.gather(*(store.devices.decide(row.id, APPROVED, sign_in, now) for _ in range(10)))
            redemptions = await asyncio.gather(
                *(store.devices.redeem(row.device_code_hash, "bot", now, new_token(16)) for _ in range(20))
            )
            return decisions, redemptions, await store.devices.decide(row.id, DENIED, sign_in, now)

    decisions, redemptions, decided_again = asyncio.run(main())
    assert decisions.count(True) == 1 and decided_again is False
    winners = [r for r in redemptions if r is not None]
    assert len(winners) == 1 and winners[0][0].status == REDEEMED
    grant = run(store, store.grants.get(winners[0][1].id))
    assert grant is not None and grant.user_id == user.id and grant.code_hash is None and grant.auth_time == now
    assert (grant.sid, grant.amr, grant.acr) == (sign_in.sid, sign_in.amr, sign_in.acr)  # into its ID tokens
    assert device_code not in repr(run(store, store.devices.of_client(row.device_code_hash, "bot")))


def test_a_redemption_needs_the_right_client_an_unexpired_approved_code_and_its_session(store):
    user = make_user(store, "alice")
    now = int(time.time())
    sign_in = signed_in(store, user.id, now)
    _, pending = code("bot", now)
    _, expired = code("bot", now - 700)
    _, orphan = code("bot", now)
    for row in (pending, expired, orphan):
        run(store, store.devices.create(row))
    assert run(store, store.devices.redeem(pending.device_code_hash, "bot", now, "g1")) is None  # pending
    assert run(store, store.devices.decide(expired.id, APPROVED, sign_in, now)) is False  # expired
    assert run(store, store.devices.decide(pending.id, APPROVED, sign_in, now)) is True
    assert run(store, store.devices.redeem(pending.device_code_hash, "other", now, "g2")) is None
    assert run(store, store.devices.redeem(pending.device_code_hash, "bot", now, "g3")) is not None
    # approved in a session that has since ended (signed out, account disabled): nothing
    gone = password_sign_in(user.id, now)
    assert run(store, store.devices.decide(orphan.id, APPROVED, gone, now)) is True
    assert run(store, store.devices.redeem(orphan.device_code_hash, "bot", now, "g4")) is None


def test_the_purge_deletes_expired_codes_in_bounded_batches(store):
    now = int(time.time())
    rows = [code("bot", now - 1000)[1] for _ in range(3)] + [code("bot", now)[1]]
    for row in rows:
        run(store, store.devices.create(row))
    assert run(store, store.janitor.purge_expired_device_codes(now, batch=2)) == 2
    assert run(store, store.janitor.purge_expired_device_codes(now, batch=2)) == 1
    assert run(store, store.janitor.purge_expired_device_codes(now, batch=2)) == 0
    assert run(store, store.devices.pending(rows[-1].id, now)) is not None  # the live one stays
    assert all(run(store, store.devices.of_client(r.device_code_hash, "bot")) is None for r in rows[:3])


def test_the_polling_pace_is_one_conditional_update(store):
    now_ms = int(time.time() * 1000)
    _, row = code("bot", now_ms // 1000)
    run(store, store.devices.create(row))
    assert run(store, store.devices.poll(row.id, now_ms, 5)) is None
    assert run(store, store.devices.poll(row.id, now_ms + 4999, 5)) == 10
    assert run(store, store.devices.poll(row.id, now_ms + 4999 + 10_000, 5)) is None
