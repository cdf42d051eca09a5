"""OpenID Connect Back-Channel Logout 1.0: when a session ends (signing out, the account disabled,
the app suspended), each app that received tokens in it and registered a back-channel URI gets one
logout token, through a queue in the database that every worker drains; failures are retried on
the schedule 10 s, 30 s, 2 min, 10 min, 1 h and recorded as events; the logout page never waits.

The receivers are real HTTP servers on loopback ports; the schedule is driven by passing the time
to `drain_once` (no test waits for an hour)."""

from __future__ import annotations

import asyncio
import time

import pytest

from campusid.idp import accounts
from campusid.idp.crypto import token_hash
from campusid.idp.oidc.backchannel import ATTEMPTS, RETRY_DELAYS, BackchannelSender
from campusid.idp.oidc.rules.logout import LogoutTokens
from tests.idp.helpers import form_fields, run
from tests.idp.oidc.logout_helpers import Receiver, check_logout_token, logout_app, sign_in_to

SESSION = "campusid_session"


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


@pytest.fixture
def two_apps(idp, receiver):
    return (
        logout_app(idp, "rp1", backchannel=receiver.url("/bc/rp1")),
        logout_app(idp, "rp2", backchannel=receiver.url("/bc/rp2")),
        logout_app(idp, "rp3"),  # no back-channel URI: nobody to tell
    )


def _unverified(token: str) -> dict:
    import base64
    import json

    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def keys(idp):
    return run(idp.store, idp.ctx.keys.verification_keys())


def confirm_logout(client) -> float:
    """Sign out on the logout page; the seconds the confirming POST took."""
    action, fields = form_fields(client.get("/logout").text, "logout-form")
    start = time.perf_counter()
    r = client.post(action, data=fields)
    took = time.perf_counter() - start
    assert r.status_code == 200 and 'id="signed-out"' in r.text
    return took


def sender_for(idp) -> BackchannelSender:
    return BackchannelSender(idp.store, LogoutTokens(idp.ctx.keys, idp.issuer), idp.ctx.pairwise, idp.ctx.events)


def drain(idp, sender: BackchannelSender, now: int) -> int:
    async def once():
        try:
            return await sender.drain_once(now)
        finally:
            await sender.close()  # its HTTP client belongs to this event loop

    return run(idp.store, once())


def test_signing_out_tells_each_app_once_within_seconds(idp, browser, receiver, two_apps):
    """The lifespan's sender, woken by the logout: both apps get one valid token each, fast."""
    rp1, rp2, rp3 = (sign_in_to(browser, idp, app) for app in two_apps)
    session = idp.db.sessions.get(token_hash(browser.cookies.get(SESSION)), 0)
    confirm_logout(browser)
    took = receiver.wait_for(2, timeout=5.0)
    time.sleep(0.3)  # a duplicate would arrive now; none may
    assert len(receiver.received) == 2, receiver.received
    for path, tokens, cid in (("/bc/rp1", rp1, "rp1"), ("/bc/rp2", rp2, "rp2")):
        [token] = receiver.tokens(path)
        sub = _unverified(tokens["id_token"])["sub"]
        assert _unverified(tokens["id_token"])["sid"] == session.sid
        check_logout_token(token, keys(idp), idp.issuer, cid, session.sid, sub)
    assert took < 2.0, f"the notices took {took:.2f} s"
    assert idp.db.notices.pending() == []


def test_each_notice_is_sent_once_by_concurrent_workers(idp, receiver, two_apps):
    client = idp.client()
    for app in two_apps:
        sign_in_to(client, idp, app)
    confirm_logout(client)
    now = int(time.time())
    senders = [sender_for(idp) for _ in range(4)]

    async def race():
        try:
            return await asyncio.gather(*(s.drain_once(now) for s in senders))
        finally:
            for s in senders:
                await s.close()

    handled = run(idp.store, race())
    assert sum(handled) == 2
    assert sorted(p for p, _ in receiver.received) == ["/bc/rp1", "/bc/rp2"]


def test_an_app_that_is_down_is_retried_on_the_schedule_then_given_up(idp, two_apps, receiver):
    receiver.status = 503
    client = idp.client()
    sign_in_to(client, idp, two_apps[0])
    confirm_logout(client)
    sender = sender_for(idp)
    ((*_, t),) = idp.db.notices.pending()  # its next_at, read back: the clock may have ticked since
    attempts_at = []
    for attempt in range(1, ATTEMPTS + 1):
        assert drain(idp, sender, t - 1) == 0  # not due a second early
        assert drain(idp, sender, t) == 1, attempt
        attempts_at.append(t)
        if attempt < ATTEMPTS:
            t += RETRY_DELAYS[attempt - 1]
    assert [b - a for a, b in zip(attempts_at, attempts_at[1:], strict=False)] == [10, 30, 120, 600, 3600]
    assert len(receiver.tokens("/bc/rp1")) == ATTEMPTS
    assert drain(idp, sender, t + 86400) == 0  # given up
    failures = idp.db.events.list(type="logout_delivery_failed")
    assert len(failures) == ATTEMPTS
    assert all(e.client_id == "rp1" and e.username == "alice" and "HTTP 503" in e.detail for e in failures)
    assert "attempt 6 of 6" in failures[0].detail and "given up" in failures[0].detail
    assert "attempt 1 of 6" in failures[-1].detail and "next in 10 s" in failures[-1].detail
    assert len(idp.db.notices.given_up()) == 1 and idp.db.notices.pending() == []


def test_a_recovered_app_gets_the_notice_at_the_next_attempt(idp, two_apps, receiver):
    receiver.status = 500
    client = idp.client()
    sign_in_to(client, idp, two_apps[0])
    confirm_logout(client)
    sender, t = sender_for(idp), int(time.time())
    assert drain(idp, sender, t) == 1
    receiver.status = 204
    assert drain(idp, sender, t + 10) == 1
    assert idp.db.notices.pending() == [] and idp.db.notices.given_up() == []
    assert len(idp.db.events.list(type="logout_delivery_failed")) == 1


def test_the_logout_page_does_not_wait_for_an_app_that_hangs(idp, browser, two_apps):
    """An RP that accepts the connection and never answers: the user's logout is as fast as with
    none registered (the sender is woken, never awaited)."""
    hanging = Receiver(hang=True)
    try:
        slow = logout_app(idp, "slow", backchannel=hanging.url("/bc"))
        baseline = []
        for _ in range(3):
            sign_in_to(browser, idp, two_apps[2])  # an app without a back-channel URI
            baseline.append(confirm_logout(browser))
        with_hanging = []
        for _ in range(3):
            sign_in_to(browser, idp, slow)
            with_hanging.append(confirm_logout(browser))
        hanging.wait_for(1, timeout=5.0)  # the sender did try it
        print(
            f"logout POST: {min(baseline) * 1000:.0f} ms without, {min(with_hanging) * 1000:.0f} ms with a hanging RP"
        )
        assert max(with_hanging) < 1.0, with_hanging
        assert min(with_hanging) < min(baseline) + 0.25, (baseline, with_hanging)
    finally:
        hanging.close()


def test_suspending_an_app_tells_it_and_revokes_only_its_tokens(idp, receiver, two_apps):
    client = idp.client()
    rp1, rp2 = (sign_in_to(client, idp, app) for app in two_apps[:2])
    sid = _unverified(rp1["id_token"])["sid"]
    idp.apps.suspend("rp1", by="admin", reason="leaked secret")
    assert drain(idp, sender_for(idp), int(time.time())) == 1
    [(path, fields)] = receiver.received
    assert path == "/bc/rp1"
    check_logout_token(fields["logout_token"], keys(idp), idp.issuer, "rp1", sid, _unverified(rp1["id_token"])["sub"])
    assert idp.db.grants.refresh_token(token_hash(rp1["refresh_token"])).used_at is not None  # revoked
    # The user's session and the other app go on.
    assert idp.db.sessions.get(token_hash(client.cookies.get(SESSION)), int(time.time())) is not None
    r = client.post(
        "/oauth/token",
        auth=two_apps[1][:2],
        data={"grant_type": "refresh_token", "refresh_token": rp2["refresh_token"]},
    )
    assert r.status_code == 200, r.text
    r = client.get("/oauth/userinfo", headers={"Authorization": f"Bearer {rp1['access_token']}"})
    assert r.status_code == 401


def test_disabling_a_user_tells_every_app_and_revokes_the_tokens(idp, receiver, two_apps):
    client = idp.client()
    rp1, rp2 = (sign_in_to(client, idp, app) for app in two_apps[:2])
    other = idp.client()  # a second session of alice's, with rp1 only
    rp1_again = sign_in_to(other, idp, two_apps[0])
    change = run(idp.store, accounts.disable(idp.store, idp.ctx.events, "alice", by="admin", now=int(time.time())))
    assert change.changed and len(change.ended.sids) == 2
    assert drain(idp, sender_for(idp), int(time.time())) == 3
    got = sorted((p, _unverified(f["logout_token"])["sid"]) for p, f in receiver.received)
    sid1, sid2 = _unverified(rp1["id_token"])["sid"], _unverified(rp1_again["id_token"])["sid"]
    assert got == sorted([("/bc/rp1", sid1), ("/bc/rp2", sid1), ("/bc/rp1", sid2)])
    for tokens, app in ((rp1, two_apps[0]), (rp2, two_apps[1])):
        r = client.post(
            "/oauth/token", auth=app[:2], data={"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]}
        )
        assert r.status_code == 400


def test_a_session_whose_apps_got_no_tokens_sends_nothing(idp, receiver, two_apps):
    client = idp.client()
    sign_in_to(client, idp, two_apps[2])
    confirm_logout(client)
    assert idp.db.notices.pending() == []
    assert drain(idp, sender_for(idp), int(time.time())) == 0 and receiver.received == []


def test_a_notice_whose_worker_died_is_sent_by_another_after_the_lease(idp, two_apps):
    from campusid.idp.oidc.backchannel import LEASE

    client = idp.client()
    sign_in_to(client, idp, two_apps[0])
    confirm_logout(client)
    t = int(time.time())
    [first] = idp.db.notices.claim("worker-a", t, t + LEASE)
    assert first.attempts == 1
    assert idp.db.notices.claim("worker-b", t + LEASE - 1, t + 2 * LEASE) == []  # still held
    [again] = idp.db.notices.claim("worker-b", t + LEASE, t + 2 * LEASE)  # worker-a died
    assert again.id == first.id and again.attempts == 2
    assert idp.db.notices.delivered(first) is False  # the dead worker's claim no longer counts
    assert idp.db.notices.delivered(again) is True
    assert idp.db.notices.pending() == []
