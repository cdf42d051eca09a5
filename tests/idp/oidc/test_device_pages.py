"""The /device pages (RFC 8628 3.3): entering a user code (however it is typed), signing in, the
consent page that names the app and warns, each step once, CSRF, and the per-IP limit on wrong
codes. Hostile input gets a page with a message and a 4xx, never a 500."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from tests.idp.conftest import ISSUER, IdP
from tests.idp.device_helpers import decide, device_app, enter_code, poll, start
from tests.idp.helpers import PASSWORD, Clock, form_fields, post_login

FORM = {"content-type": "application/x-www-form-urlencoded"}


@pytest.fixture
def clock(idp) -> Clock:
    idp.ctx.clock = Clock()
    return idp.ctx.clock


@pytest.fixture
def code(idp, browser, clock) -> dict:
    device_app(idp, "bot")
    r = start(browser, "bot")
    assert r.status_code == 200
    return r.json()


def page_headers_ok(r) -> None:
    assert r.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in r.headers["content-security-policy"]
    assert r.headers["referrer-policy"] == "no-referrer" and r.headers["cache-control"] == "no-store"


def test_the_entry_page_has_the_form_the_contract_names(browser):
    r = browser.get("/device")
    assert r.status_code == 200
    page_headers_ok(r)
    assert '<form id="device-form" method="post"' in r.text and 'name="user_code"' in r.text
    _, fields = form_fields(r.text, "device-form")
    assert fields["csrf_token"]


def test_verification_uri_complete_fills_the_form_in_and_submits_nothing(idp, browser, code):
    r = browser.get(f"/device?user_code={code['user_code'].lower()}")
    assert r.status_code == 200 and f'value="{code["user_code"]}"' in r.text
    assert "set-cookie" not in r.headers or "campusid_interaction" not in r.headers["set-cookie"]
    hostile = browser.get('/device?user_code="><script>alert(1)</script>')
    assert hostile.status_code == 200 and "<script>alert" not in hostile.text
    assert browser.get("/device?user_code=A&user_code=B").status_code == 400


@pytest.mark.parametrize(
    "typed",
    ["{lower}", "{spaced}", "{dashes}", "  {code}  ", "{fullwidth}", "{nodash}"],
)
def test_case_spaces_and_dashes_are_ignored(idp, browser, code, typed):
    canonical = code["user_code"].replace("-", "")
    variants = {
        "code": code["user_code"],
        "lower": code["user_code"].lower(),
        "spaced": " ".join(canonical),
        "dashes": "-".join(canonical.lower()),
        "fullwidth": "".join(chr(ord(c) + 0xFEE0) for c in canonical),  # what a Chinese input method types
        "nodash": canonical,
    }
    r = enter_code(browser, idp.issuer, typed.format(**variants))
    assert r.status_code == 303 and r.headers["location"].startswith("/login?interaction="), r.text[:400]


@pytest.mark.parametrize(
    ("typed", "message"),
    [
        ("BCDF-GHJ", "Codes have 8 letters"),
        ("AEIO-UAEI", "Codes have 8 letters"),
        ("1234-5678", "Codes have 8 letters"),
        ("' OR 1=1 --", "Codes have 8 letters"),
        ("BCDF'; DROP TABLE device_codes; --", "Codes have 8 letters"),
        ("x" * 65, "far too long"),
        ("   ", "Enter the code"),
        ("BCDF\u0000GHJK", "could not be read"),
    ],
)
def test_malformed_codes_are_refused_with_a_message(idp, browser, code, typed, message):
    r = enter_code(browser, idp.issuer, typed)
    assert r.status_code == 400 and message in r.text, r.text[-800:]
    page_headers_ok(r)


def _post_raw(browser, body: bytes):
    r = browser.get("/device")
    _, fields = form_fields(r.text, "device-form")
    return browser.post("/device", content=b"csrf_token=" + fields["csrf_token"].encode() + b"&" + body, headers=FORM)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"user_code=" + b"B" * 10_240, "too long"),
        (b"user_code=%ff%fe%fd", "not valid UTF-8"),
        (b"user_code=BCDF-GHJK&user_code=BCDF-GHJK", "more than once"),
        (b"user_code=" + b"A" * 70_000, "too large"),
    ],
    ids=["10KB", "non-UTF-8", "duplicated", "over-64KiB"],
)
def test_hostile_bodies_get_a_page_with_a_message_never_a_500(browser, code, body, message):
    r = _post_raw(browser, body)
    assert 400 <= r.status_code < 500 and message in r.text, (r.status_code, r.text[-600:])
    assert 'id="device-form"' in r.text


def test_the_entry_form_needs_its_csrf_token(idp, browser, code):
    r = browser.post("/device", data={"user_code": code["user_code"]})
    assert r.status_code == 403 and "expired" in r.text
    with TestClient(idp.app, base_url=ISSUER, follow_redirects=False) as other:
        _, fields = form_fields(other.get("/device").text, "device-form")
    r = browser.post("/device", data={**fields, "user_code": code["user_code"]})  # another browser's token
    assert r.status_code == 403


def test_the_consent_page_names_the_app_and_warns(idp, browser, code):
    r = enter_code(browser, idp.issuer, code["user_code"])
    r = browser.get(r.headers["location"])
    action, fields = form_fields(r.text, "login-form")
    assert "Bot bot" in r.text  # the login page says which app it continues to
    r = browser.post(action, data={**fields, "username": "alice", "password": PASSWORD})
    assert r.status_code == 303 and r.headers["location"].startswith("/consent?interaction=")
    r = browser.get(r.headers["location"])
    assert r.status_code == 200
    page_headers_ok(r)
    assert "<strong>Bot bot</strong>" in r.text and "Alice Zhang" in r.text
    assert 'id="device-warning"' in r.text and "recognise" in r.text
    assert '<form id="consent-form" method="post"' in r.text
    assert 'name="decision" value="allow"' in r.text and 'value="deny"' in r.text
    assert browser.post("/consent", data={"decision": "allow"}).status_code == 403  # no CSRF token
    _, fields = form_fields(r.text, "consent-form")
    assert browser.post("/consent", data={**fields, "decision": "maybe"}).status_code == 400
    done = browser.post("/consent", data={**fields, "decision": "allow"})
    assert done.status_code == 200 and 'data-outcome="allowed"' in done.text
    again = browser.post("/consent", data={**fields, "decision": "deny"})  # replayed: once only
    assert again.status_code == 400
    assert poll(browser, "bot", code["device_code"]).status_code == 200


def test_a_signed_in_person_goes_straight_to_consent(idp, browser, code):
    decide(browser, idp.issuer, start(browser, "bot").json()["user_code"])  # signs alice in
    r = enter_code(browser, idp.issuer, code["user_code"])
    assert r.status_code == 303 and r.headers["location"].startswith("/consent?interaction=")


def test_a_user_code_is_single_use(idp, browser, code):
    assert 'data-outcome="allowed"' in decide(browser, idp.issuer, code["user_code"]).text
    r = enter_code(browser, idp.issuer, code["user_code"])
    assert r.status_code == 400 and "not valid" in r.text
    denied = start(browser, "bot").json()
    assert 'data-outcome="denied"' in decide(browser, idp.issuer, denied["user_code"], decision="deny").text
    assert enter_code(browser, idp.issuer, denied["user_code"]).status_code == 400


def test_two_tabs_cannot_both_decide(idp, browser, code):
    """Two browsers enter the same code; the first decision counts, the second finds it used."""
    with TestClient(idp.app, base_url=ISSUER, follow_redirects=False) as second:
        assert 'data-outcome="denied"' in decide(second, idp.issuer, code["user_code"], decision="deny").text
    r = enter_code(browser, idp.issuer, code["user_code"])
    assert r.status_code == 400


def test_pages_speak_chinese_to_a_chinese_browser(idp, code):
    with TestClient(idp.app, base_url=ISSUER, follow_redirects=False, headers={"Accept-Language": "zh-CN"}) as zh:
        assert "设备登录" in zh.get("/device").text
        r = enter_code(zh, idp.issuer, "AAAA-AAAA")
        assert r.status_code == 400 and "代码由 8 个字母组成" in r.text
        done = decide(zh, idp.issuer, code["user_code"])
        assert "设备已登录" in done.text


# -- wrong codes and the per-IP limit ---------------------------------------------------------
@pytest.fixture
def limited(idp_env):
    """An IdP allowing 3 submissions per IP per 15 minutes; its limiter on a clock the test moves."""
    instance = IdP({**idp_env, "CAMPUSID_ISSUER": ISSUER, "CAMPUSID_LIMIT_ATTEMPTS_PER_IP": "3/15 minutes"})
    instance.ctx.clock = Clock()
    fake = Clock()
    instance.ctx.limiter.clock = fake
    yield instance, fake
    instance.store.close()


def at(idp, ip: str) -> TestClient:
    return TestClient(idp.app, base_url=ISSUER, follow_redirects=False, client=(ip, 40000))


def test_guessing_user_codes_counts_against_the_ip_and_ends_in_429(limited):
    idp, limiter_clock = limited
    device_app(idp, "bot")
    with at(idp, "198.51.100.7") as guesser, at(idp, "203.0.113.9") as neighbour:
        real = start(guesser, "bot").json()
        for guess in ("BBBB-BBBB", "CCCC-CCCC", "not a code"):
            r = enter_code(guesser, idp.issuer, guess)
            assert r.status_code == 400 and "Retry-After" not in r.headers
        r = enter_code(guesser, idp.issuer, real["user_code"])  # even the right code now
        assert r.status_code == 429 and int(r.headers["retry-after"]) > 0
        assert "Too many wrong codes" in r.text
        # the same counter as password submissions: a password from that IP is refused too
        assert post_login(guesser, "alice").status_code == 429
        assert enter_code(neighbour, idp.issuer, real["user_code"]).status_code == 303  # another IP is not
        limiter_clock.now += 15 * 60 + 1
        assert enter_code(guesser, idp.issuer, real["user_code"]).status_code == 303


def test_device_authorization_requests_count_against_the_clients_token_budget(idp_env):
    # RFC 8628 section 5.2: the endpoint can be flooded like the token endpoint; the app's budget
    # of token requests covers both, and the request over it is 429 slow_down with Retry-After.
    idp = IdP({**idp_env, "CAMPUSID_ISSUER": ISSUER, "CAMPUSID_LIMIT_TOKEN_PER_CLIENT": "2/minute"})
    try:
        device_app(idp, "bot")
        with at(idp, "198.51.100.7") as device:
            assert [start(device, "bot").status_code for _ in range(2)] == [200, 200]
            refused = start(device, "bot")
            assert refused.status_code == 429 and int(refused.headers["retry-after"]) > 0
            assert refused.json()["error"] == "slow_down"
    finally:
        idp.store.close()
