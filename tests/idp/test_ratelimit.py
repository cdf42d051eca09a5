"""The login frequency limit (docs/configuration.md) in one process, on the memory storage and on Redis.

Time is controlled, never slept: the limiter reads its `clock` for every window and every
Retry-After, in memory and in Redis alike, so the `clock` fixture's fake clock is set there only.
"""

from __future__ import annotations

import logging
import re
import time

import pytest
from starlette.testclient import TestClient

from campusid.idp.crypto import token_hash
from campusid.idp.issuer import canonical_issuer
from campusid.idp.ratelimit import Limiter
from tests.conftest import REDIS_URL
from tests.idp.conftest import ISSUER, NATIVE_REDIRECT, WEB_REDIRECT, IdP
from tests.idp.helpers import (
    PASSWORD,
    Clock,
    auth_params,
    callback_params,
    code_exchange,
    login_csrf,
    login_through_pages,
    make_user,
)

WRONG = "not the password"
IP = "198.51.100.7"
OTHER_IP = "203.0.113.9"


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def make_idp(idp_env, clock):
    """An IdP with its own limits (CAMPUSID_LIMIT_* values given as keyword arguments)."""
    made: list[IdP] = []

    def make(issuer: str = ISSUER, **settings: str) -> IdP:
        env = {**idp_env, "CAMPUSID_ISSUER": issuer}
        env.update({f"CAMPUSID_{k.upper()}": v for k, v in settings.items()})
        instance = IdP(env)
        instance.ctx.limiter.clock = clock
        made.append(instance)
        return instance

    yield make
    for instance in made:
        instance.store.close()


def browser_at(idp: IdP, ip: str = IP) -> TestClient:
    return TestClient(idp.app, base_url=idp.issuer, follow_redirects=False, client=(ip, 40000))


def submit(client: TestClient, csrf: str, username: str, password: str, **headers: str):
    return client.post("/login", data={"csrf_token": csrf, "username": username, "password": password}, headers=headers)


def sign_in(client: TestClient, username: str, password: str = PASSWORD, **headers: str):
    return submit(client, login_csrf(client), username, password, **headers)


def assert_limited(r, at_most: int) -> int:
    assert r.status_code == 429, (r.status_code, r.text[:300])
    retry = int(r.headers["retry-after"])
    assert 1 <= retry <= at_most
    assert "Too many sign-in attempts" in r.text and "try again" in r.text
    assert "campusid_session" not in r.headers.get("set-cookie", "")
    return retry


def session_cookie(r) -> bool:
    return "campusid_session=" in r.headers.get("set-cookie", "")


# -- failed passwords per account -------------------------------------------------------------
def test_sixth_wrong_password_gets_429_even_with_the_right_password_until_the_window_passes(make_idp, clock):
    """Each of the first 5 failures is an ordinary failed login; the 6th submission, right password
    or not, is the first 429 (and says when to retry), until the oldest failure leaves the window."""
    idp = make_idp()
    b = browser_at(idp)
    csrf = login_csrf(b)
    for _ in range(5):
        r = submit(b, csrf, "alice", WRONG)
        assert r.status_code == 401 and "not correct" in r.text
        clock.advance(60)
    r = submit(b, csrf, "alice", PASSWORD)  # the 6th submission, right password: 429
    assert assert_limited(r, 900) == 900 - 5 * 60
    assert "10 minutes" in r.text
    r = submit(b, csrf, "alice", WRONG)  # and the 7th
    assert assert_limited(r, 900) == 900 - 5 * 60

    clock.advance(900 - 5 * 60 - 1)  # one second before the first failure leaves the window
    assert_limited(submit(b, csrf, "alice", PASSWORD), 1)
    clock.advance(1)  # now four failures remain in the window: the account works again
    r = submit(b, csrf, "alice", PASSWORD)
    assert r.status_code == 303 and session_cookie(r)


def test_the_lock_applies_to_unknown_usernames_alike(make_idp):
    idp = make_idp()
    b = browser_at(idp)
    csrf = login_csrf(b)
    answers = [submit(b, csrf, "nobody", WRONG).status_code for _ in range(6)]
    assert answers == [401, 401, 401, 401, 401, 429]


def test_a_success_counts_as_no_failure_and_repeated_reauthentication_is_never_blocked(make_idp):
    """prompt=login and max_age=0 force a password every time; 20 of them in a row all pass."""
    idp = make_idp()
    b = idp.client()
    for i in range(20):
        extra = {"prompt": "login"} if i % 2 else {"max_age": "0"}
        cb = login_through_pages(
            b, idp.issuer, auth_params(idp.native_id, "http://127.0.0.1/callback", **extra), "alice"
        )
        assert "code" in cb, cb
    csrf = login_csrf(b)
    assert [submit(b, csrf, "alice", WRONG).status_code for _ in range(4)] == [401] * 4
    assert submit(b, csrf, "alice", PASSWORD).status_code == 303


def test_showing_the_login_page_counts_for_nothing(make_idp):
    idp = make_idp(limit_failed_per_account="2/15 minutes", limit_attempts_per_ip="2/15 minutes")
    b = browser_at(idp)
    for _ in range(40):
        login_csrf(b)
    csrf = login_csrf(b)
    assert submit(b, csrf, "alice", WRONG).status_code == 401
    assert submit(b, csrf, "alice", PASSWORD).status_code == 303


# -- password submissions per client IP -------------------------------------------------------
def test_another_account_from_the_same_ip_is_not_blocked_until_the_ip_limit(make_idp, clock):
    idp = make_idp(limit_attempts_per_ip="12/15 minutes")
    make_user(idp.store, "bob")
    make_user(idp.store, "carol")
    alice_b, bob_b, carol_b = browser_at(idp), browser_at(idp), browser_at(idp)
    csrf = login_csrf(alice_b)
    assert [submit(alice_b, csrf, "alice", WRONG).status_code for _ in range(5)] == [401] * 5
    assert sign_in(bob_b, "bob").status_code == 303  # submission 6: alice's lock is alice's alone
    csrf = login_csrf(carol_b)
    assert [submit(carol_b, csrf, "carol", WRONG).status_code for _ in range(4)] == [401] * 4  # 7..10
    assert sign_in(bob_b, "bob").status_code == 303  # 11
    assert submit(carol_b, csrf, "carol", PASSWORD).status_code == 303  # 12: the last one this IP has
    assert_limited(sign_in(bob_b, "bob"), 900)  # 13: the IP is out of submissions, right password or not

    elsewhere = browser_at(idp, OTHER_IP)
    assert sign_in(elsewhere, "bob").status_code == 303
    clock.advance(901)
    assert sign_in(bob_b, "bob").status_code == 303


def test_a_forged_x_forwarded_for_does_not_dodge_the_ip_limit(make_idp):
    idp = make_idp(limit_attempts_per_ip="3/15 minutes")
    b = browser_at(idp)
    csrf = login_csrf(b)
    for i in range(3):
        assert submit(b, csrf, "alice", WRONG, **{"X-Forwarded-For": f"192.0.2.{i}"}).status_code == 401
    r = submit(b, csrf, "alice", PASSWORD, **{"X-Forwarded-For": "192.0.2.200"})
    assert_limited(r, 900)
    assert sign_in(browser_at(idp, OTHER_IP), "alice").status_code == 303


def test_with_a_trusted_proxy_the_right_most_untrusted_forwarded_address_is_counted(make_idp):
    idp = make_idp(limit_attempts_per_ip="3/15 minutes", trusted_proxies="10.0.0.0/8")
    proxy = browser_at(idp, "10.0.0.5")
    csrf = login_csrf(proxy)
    for _ in range(3):
        assert submit(proxy, csrf, "alice", WRONG, **{"X-Forwarded-For": "203.0.113.1"}).status_code == 401
    assert_limited(submit(proxy, csrf, "alice", PASSWORD, **{"X-Forwarded-For": "203.0.113.1"}), 900)
    # the client prepended a forged hop; the proxy appended the real one, which is what counts
    forged = {"X-Forwarded-For": "198.51.100.99, 203.0.113.1, 10.0.0.7"}
    assert_limited(submit(proxy, csrf, "alice", PASSWORD, **forged), 900)
    # another client behind the same proxy is its own bucket
    assert submit(proxy, csrf, "alice", PASSWORD, **{"X-Forwarded-For": "203.0.113.2"}).status_code == 303


# -- authorization codes per user and client --------------------------------------------------
def test_codes_per_user_and_client_then_temporarily_unavailable_with_state_and_iss(make_idp, clock):
    idp = make_idp(limit_logins_per_user_client="3/hour")
    b = idp.client()
    redirect = "http://127.0.0.1/callback"
    cb = login_through_pages(b, idp.issuer, auth_params(idp.native_id, redirect), "alice")
    assert "code" in cb
    for _ in range(2):  # silent SSO on the existing session counts too
        flow = auth_params(idp.native_id, redirect, prompt="none")
        r = b.get("/oauth/authorize", params=flow.params)
        assert "code" in callback_params(r.headers["location"])
    flow = auth_params(idp.native_id, redirect)
    r = b.get("/oauth/authorize", params=flow.params)
    assert r.status_code == 303
    cb = callback_params(r.headers["location"])
    assert r.headers["location"].startswith(redirect + "?")
    assert cb["error"] == "temporarily_unavailable"
    assert cb["state"] == flow.params["state"] and cb["iss"] == idp.issuer
    assert "code" not in cb
    # another client of the same user is counted apart
    cb = login_through_pages(b, idp.issuer, auth_params(idp.web_id, "https://rp.example.edu/callback"), "alice")
    assert "code" in cb
    clock.advance(3601)
    r = b.get("/oauth/authorize", params=auth_params(idp.native_id, redirect).params)
    assert "code" in callback_params(r.headers["location"])


# -- token requests per client ----------------------------------------------------------------
def test_token_requests_over_the_client_limit_get_429_with_retry_after(make_idp, clock):
    idp = make_idp(limit_token_per_client="5/minute")
    b = idp.client()
    form = {"grant_type": "refresh_token", "refresh_token": "bogus", "client_id": idp.native_id}
    for _ in range(5):
        r = b.post("/oauth/token", data=form)
        assert r.status_code == 400 and r.json()["error"] == "invalid_grant"
    r = b.post("/oauth/token", data=form)
    assert r.status_code == 429
    assert 1 <= int(r.headers["retry-after"]) <= 60
    assert r.headers["cache-control"] == "no-store"
    body = r.json()
    assert body["error"] == "slow_down" and "retry" in body["error_description"]
    # another client has its own budget
    other = b.post("/oauth/token", data={**form, "client_id": idp.web_id}, auth=(idp.web_id, idp.web_secret))
    assert other.status_code == 400
    clock.advance(61)
    assert b.post("/oauth/token", data=form).status_code == 400


def test_unauthenticated_token_requests_do_not_use_a_clients_budget(make_idp):
    idp = make_idp(limit_token_per_client="2/minute")
    b = idp.client()
    for _ in range(5):
        r = b.post("/oauth/token", data={"grant_type": "refresh_token", "refresh_token": "x"}, auth=(idp.web_id, "bad"))
        assert r.status_code == 401
    form = {"grant_type": "refresh_token", "refresh_token": "bogus"}
    assert b.post("/oauth/token", data=form, auth=(idp.web_id, idp.web_secret)).status_code == 400


def test_a_code_exchange_refused_for_the_rate_limit_keeps_its_code_for_the_retry(make_idp, clock):
    idp = make_idp(limit_token_per_client="1/minute")
    b = browser_at(idp)
    flow = auth_params(idp.web_id, WEB_REDIRECT)
    code = login_through_pages(b, idp.issuer, flow, "alice")["code"]
    web = (idp.web_id, idp.web_secret)
    spent = b.post("/oauth/token", data={"grant_type": "refresh_token", "refresh_token": "bogus"}, auth=web)
    assert spent.status_code == 400  # this minute's one request
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": WEB_REDIRECT,
        "code_verifier": flow.verifier,
    }
    r = b.post("/oauth/token", data=form, auth=web)
    assert r.status_code == 429 and r.json()["error"] == "slow_down"
    clock.advance(61)
    r = b.post("/oauth/token", data=form, auth=web)
    assert r.status_code == 200, r.text
    assert r.json()["id_token"]


# -- storage ----------------------------------------------------------------------------------
def test_redis_keys_are_namespaced_and_never_hold_a_username_or_ip_in_clear(make_idp, clock, redis_client):
    redis = redis_client
    idp = make_idp(redis_url=REDIS_URL)
    mine = idp.ctx.limiter
    # the same Redis, another issuer (another deployment, or another test run)
    theirs = Limiter.from_settings(idp.settings.with_(issuer=canonical_issuer("http://127.0.0.1:8001")))
    theirs.clock = clock
    try:
        browser = browser_at(idp)
        csrf = login_csrf(browser)
        assert [submit(browser, csrf, "alice", WRONG).status_code for _ in range(5)] == [401] * 5
        keys = [k.decode() for k in redis.scan_iter(match=f"{mine.namespace}:*")]
        assert keys
        for key in keys:
            assert "alice" not in key.lower() and "198.51.100" not in key
            assert re.fullmatch(r"campusid:[0-9a-f]{16}:.+", key)
        assert theirs.namespace != mine.namespace
        idp.ctx.limiter = theirs
        assert sign_in(browser_at(idp), "alice").status_code == 303  # their counters are their own
        idp.ctx.limiter = mine
        assert_limited(submit(browser, csrf, "alice", PASSWORD), 900)
        # the window is the library's moving window in Redis, under the same controlled clock
        clock.advance(901)
        assert submit(browser, csrf, "alice", PASSWORD).status_code == 303
    finally:
        for limiter in (mine, theirs):
            for key in redis.scan_iter(match=f"{limiter.namespace}:*"):
                redis.delete(key)


def test_when_redis_is_unreachable_logins_get_503_while_refresh_and_discovery_go_on(make_idp, caplog):
    """A brute force must not get through a Redis outage, and the person at the login page is
    told the truth (the service is unavailable, not 'too many attempts'); token refreshes and
    discovery only shed load through the counters, so they go on. The log says so once."""
    idp = make_idp(redis_url="redis://127.0.0.1:1/0")  # nothing listens there
    down = idp.ctx.limiter
    idp.ctx.limiter = Limiter.from_settings(idp.settings.with_(redis_url=None))  # tokens from before the outage
    flow = auth_params(idp.native_id, NATIVE_REDIRECT)
    b = idp.client()
    code = login_through_pages(b, idp.issuer, flow, "alice")["code"]
    tokens = b.post("/oauth/token", data=code_exchange(flow, code, NATIVE_REDIRECT, idp.native_id)).json()
    idp.ctx.limiter = down
    caplog.clear()
    with caplog.at_level(logging.DEBUG):
        for _ in range(20):
            r = sign_in(browser_at(idp), "alice")
            assert r.status_code == 503, r.text[:300]
            assert 1 <= int(r.headers["retry-after"]) <= 60
            assert "Sign-in is temporarily unavailable" in r.text and "try again" in r.text
            assert "Too many" not in r.text and not session_cookie(r)
        refresh = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], "client_id": idp.native_id}
        r = idp.client().post("/oauth/token", data=refresh)
        assert r.status_code == 200 and r.json()["access_token"]
        r = idp.client().get("/.well-known/openid-configuration")
        assert r.status_code == 200 and r.json()["issuer"] == idp.issuer
    ours = [record for record in caplog.records if record.name.startswith("campusid")]
    assert 1 <= len(ours) <= 2, [record.getMessage() for record in ours]
    assert "unreachable" in ours[0].getMessage() and "503" in ours[0].getMessage()
    assert not any(record.exc_info for record in caplog.records) and "Traceback" not in caplog.text


def test_a_successful_login_after_failures_still_starts_a_server_side_session(make_idp):
    idp = make_idp()
    b = browser_at(idp)
    csrf = login_csrf(b)
    submit(b, csrf, "alice", WRONG)
    r = submit(b, csrf, "alice", PASSWORD)
    raw = r.cookies.get("campusid_session") or b.cookies.get("campusid_session")
    assert idp.db.sessions.get(token_hash(raw), int(time.time())) is not None


# -- client IP --------------------------------------------------------------------------------
def _request(peer: str, xff: str | None = None):
    from starlette.requests import Request

    headers = [(b"x-forwarded-for", xff.encode())] if xff is not None else []
    return Request({"type": "http", "client": (peer, 1), "headers": headers, "method": "POST", "path": "/login"})


def test_client_ip_believes_x_forwarded_for_only_from_trusted_proxies():
    import ipaddress

    from campusid.idp.ratelimit import client_ip

    proxies = (ipaddress.ip_network("10.0.0.0/8"),)
    assert client_ip(_request("198.51.100.7", "203.0.113.1"), proxies) == "198.51.100.7"
    assert client_ip(_request("198.51.100.7", "203.0.113.1"), ()) == "198.51.100.7"
    assert client_ip(_request("10.0.0.5", "192.0.2.1, 203.0.113.1, 10.0.0.9"), proxies) == "203.0.113.1"
    assert client_ip(_request("10.0.0.5", "10.1.1.1, 10.0.0.9"), proxies) == "10.1.1.1"  # all trusted
    assert client_ip(_request("10.0.0.5", "garbage"), proxies) == "10.0.0.5"
    assert client_ip(_request("10.0.0.5"), proxies) == "10.0.0.5"
    assert client_ip(_request("::ffff:198.51.100.7")) == "198.51.100.7"
    # one IPv6 host owns its /64: changing the interface id does not buy more attempts
    assert client_ip(_request("2001:db8:1:2::1")) == client_ip(_request("2001:db8:1:2:abcd::9")) == "2001:db8:1:2::/64"
