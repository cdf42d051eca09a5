"""The device authorization grant (RFC 8628) at the IdP, in process: the device authorization
endpoint, the token endpoint's device-code grant with each of its answers, and who may use it.
Time is the grant's clock (`ctx.clock`), moved by the test, never slept."""

from __future__ import annotations

import re

import pytest
from joserfc import jwt
from joserfc.jwk import KeySet
from starlette.testclient import TestClient

from campusid.idp import accounts, events
from campusid.idp.app import create_app
from campusid.idp.oidc.rules import device_grant as device
from campusid.idp.oidc.rules.sector import subject
from tests.idp.device_helpers import decide, device_app, poll, start
from tests.idp.helpers import Clock, form_fields, run

USER_CODE = re.compile(r"^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$")


@pytest.fixture
def clock(idp) -> Clock:
    idp.ctx.clock = Clock()
    return idp.ctx.clock


@pytest.fixture
def bot(idp) -> str:
    device_app(idp, "bot")
    return "bot"


def begin(browser, client_id: str = "bot", **kw) -> dict:
    r = start(browser, client_id, **kw)
    assert r.status_code == 200, r.text
    return r.json()


def error_of(r) -> str:
    assert r.status_code in (400, 401), (r.status_code, r.text)
    assert r.headers["cache-control"] == "no-store"
    return r.json()["error"]


def test_discovery_names_the_endpoint_and_the_grant_type(idp, browser):
    doc = browser.get("/.well-known/openid-configuration").json()
    assert doc["device_authorization_endpoint"] == f"{idp.issuer}/oauth/device_authorization"
    assert device.GRANT_TYPE in doc["grant_types_supported"]


def test_the_answer_has_every_field_of_rfc_8628_3_2(idp, browser, bot):
    r = start(browser, bot)
    assert r.status_code == 200 and r.headers["cache-control"] == "no-store"
    body = r.json()
    assert USER_CODE.match(body["user_code"]), body["user_code"]
    assert body["verification_uri"] == f"{idp.issuer}/device"
    assert body["verification_uri_complete"] == f"{idp.issuer}/device?user_code={body['user_code']}"
    assert (body["expires_in"], body["interval"]) == (600, 5)
    assert len(body["device_code"]) >= 43
    # Only digests are stored: neither code appears in the database row.
    row = run(
        idp.store,
        idp.store.devices.pending_by_user_code(
            idp.ctx.faces["oidc"].user_codes.digest(body["user_code"].replace("-", "")), int(idp.ctx.clock())
        ),
    )
    assert row is not None and body["device_code"] not in repr(row) and body["user_code"][:4] not in repr(row)
    assert run(idp.store, idp.store.events.list(type=events.DEVICE_CODE_ISSUED))[0].client_id == bot


def test_the_user_code_alphabet_and_length_give_at_least_2_to_the_32(idp):
    assert len(set(device.USER_CODE_ALPHABET)) == 20 and device.USER_CODE_LENGTH == 8
    assert device.user_code_combinations() >= 2**32
    codes = {device.new_user_code() for _ in range(200)}
    assert len(codes) == 200 and all(set(c) <= set(device.USER_CODE_ALPHABET) and len(c) == 8 for c in codes)


def test_allowed_the_device_gets_the_code_flow_token_set_once(idp, browser, bot, clock):
    started = begin(browser)
    assert error_of(poll(browser, bot, started["device_code"])) == "authorization_pending"
    # The person types it in lower case with spaces instead of the dash: the same code.
    outcome = decide(browser, idp.issuer, started["user_code"].lower().replace("-", "  "))
    assert outcome.status_code == 200 and 'data-outcome="allowed"' in outcome.text
    clock.advance(5)
    r = poll(browser, bot, started["device_code"])
    assert r.status_code == 200, r.text
    tokens = r.json()
    assert r.headers["cache-control"] == "no-store"
    assert {"access_token", "id_token", "refresh_token", "expires_in"} <= set(tokens)
    assert tokens["token_type"] == "Bearer" and tokens["scope"] == "openid profile"
    keys = KeySet.import_key_set(browser.get("/oauth/jwks").json())
    claims = jwt.decode(tokens["id_token"], keys, algorithms=["RS256"]).claims
    assert claims["iss"] == idp.issuer and claims["aud"] == bot and "nonce" not in claims
    assert claims["sid"] and claims["amr"] == ["pwd"] and claims["acr"] == "urn:campusid:acr:pwd"
    assert claims["sub"] == subject(idp.ctx.pairwise, run(idp.store, idp.store.apps.get(bot)), idp.student.id)
    userinfo = browser.get("/oauth/userinfo", headers={"Authorization": f"Bearer {tokens['access_token']}"})
    assert userinfo.status_code == 200 and userinfo.json()["name"] == "Alice Zhang"
    refreshed = browser.post(
        "/oauth/token", data={"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], "client_id": bot}
    )
    assert refreshed.status_code == 200
    clock.advance(5)
    assert error_of(poll(browser, bot, started["device_code"])) == "invalid_grant"  # redeemed once
    redeemed = run(idp.store, idp.store.events.list(type=events.DEVICE_CODE_REDEEMED))
    assert [(e.username, e.client_id) for e in redeemed] == [("alice", bot)]
    assert started["device_code"] not in repr(redeemed)


def test_a_web_app_authenticates_with_basic(idp, browser, clock):
    secret = device_app(idp, "web-bot", client_type="web", scopes=("openid", "profile"))
    started = begin(browser, "web-bot", secret=secret)
    assert start(browser, "web-bot", secret="wrong").status_code == 401
    assert start(browser, "web-bot").json()["error"] == "invalid_client"  # a web app must use Basic
    decide(browser, idp.issuer, started["user_code"])
    tokens = poll(browser, "web-bot", started["device_code"], secret=secret).json()
    assert "id_token" in tokens and "refresh_token" not in tokens  # web apps only with offline_access


def test_denied_the_device_gets_access_denied(idp, browser, bot, clock):
    started = begin(browser)
    outcome = decide(browser, idp.issuer, started["user_code"], decision="deny")
    assert 'data-outcome="denied"' in outcome.text
    for _ in range(2):
        clock.advance(5)
        assert error_of(poll(browser, bot, started["device_code"])) == "access_denied"


def test_past_expires_in_the_device_gets_expired_token(idp, browser, bot, clock):
    started = begin(browser)
    clock.advance(599)
    assert error_of(poll(browser, bot, started["device_code"])) == "authorization_pending"
    clock.advance(1)
    assert error_of(poll(browser, bot, started["device_code"])) == "expired_token"
    # and the person can no longer enter it either
    assert "not valid" in decide(browser, idp.issuer, started["user_code"]).text


def test_an_approval_that_comes_too_late_is_expired_token(idp, browser, bot, clock):
    started = begin(browser)
    assert 'data-outcome="allowed"' in decide(browser, idp.issuer, started["user_code"]).text
    clock.advance(600)
    assert error_of(poll(browser, bot, started["device_code"])) == "expired_token"


def test_polling_faster_than_interval_gets_slow_down_and_the_interval_grows(idp, browser, bot, clock):
    started = begin(browser)
    code = started["device_code"]
    assert error_of(poll(browser, bot, code)) == "authorization_pending"
    clock.advance(4.9)
    r = poll(browser, bot, code)
    assert error_of(r) == "slow_down" and "10 seconds" in r.json()["error_description"]
    clock.advance(9.5)  # the interval is 10 s now: 9.5 s is too early again, and it grows to 15
    assert "15 seconds" in poll(browser, bot, code).json()["error_description"]
    clock.advance(15)
    assert error_of(poll(browser, bot, code)) == "authorization_pending"
    clock.advance(14)
    assert error_of(poll(browser, bot, code)) == "slow_down"


def test_the_interval_is_remembered_across_workers(idp, browser, bot, clock):
    """Two apps on one database, as two workers: a poll on one, then one too early on the other."""
    other = create_app(idp.settings, store=idp.store)
    other.state.ctx.clock = clock
    run(idp.store, other.state.ctx.keys.load())
    started = begin(browser)
    assert error_of(poll(browser, bot, started["device_code"])) == "authorization_pending"
    clock.advance(1)
    with TestClient(other, base_url=idp.issuer) as second:
        assert error_of(poll(second, bot, started["device_code"])) == "slow_down"
    clock.advance(6)
    assert error_of(poll(browser, bot, started["device_code"])) == "slow_down"  # 10 s now, on both


def test_an_unknown_or_another_clients_device_code_is_invalid_grant(idp, browser, bot, clock):
    device_app(idp, "other-bot")
    started = begin(browser)
    decide(browser, idp.issuer, started["user_code"])
    assert error_of(poll(browser, "other-bot", started["device_code"])) == "invalid_grant"
    assert error_of(poll(browser, bot, "x" * 43)) == "invalid_grant"
    assert poll(browser, bot, started["device_code"]).status_code == 200  # untouched by the other client


def test_an_app_whose_review_did_not_grant_it_is_unauthorized_client(idp, browser, clock):
    device_app(idp, "plain", granted=False)
    r = start(browser, "plain")
    assert error_of(r) == "unauthorized_client" and r.status_code == 400
    assert error_of(poll(browser, "plain", "x" * 43)) == "unauthorized_client"
    # the apps the fixture made through the ordinary review are not granted it either
    assert error_of(start(browser, idp.native_id)) == "unauthorized_client"


def test_unknown_and_suspended_apps_are_invalid_client(idp, browser, bot, clock):
    r = start(browser, "no-such-app")
    assert r.status_code == 401 and r.json()["error"] == "invalid_client" and "Basic" in r.headers["www-authenticate"]
    started = begin(browser)
    run(idp.store, idp.ctx.apps.suspend(bot, by="admin"))
    assert error_of(start(browser, bot)) == "invalid_client"
    assert error_of(poll(browser, bot, started["device_code"])) == "invalid_client"
    assert "not valid" in decide(browser, idp.issuer, started["user_code"]).text


def test_scopes_must_include_openid_and_be_granted(idp, browser, bot, clock):
    assert error_of(start(browser, bot, scope="openid grades.read")) == "invalid_scope"
    assert error_of(start(browser, bot, scope="profile")) == "invalid_scope"
    assert error_of(start(browser, bot, scope="openid nonsense")) == "invalid_scope"
    started = begin(browser, scope=None)  # no scope: openid
    decide(browser, idp.issuer, started["user_code"])
    tokens = poll(browser, bot, started["device_code"]).json()
    assert tokens["scope"] == "openid" and "id_token" in tokens


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        ("client_id=bot&client_id=bot", "application/x-www-form-urlencoded"),
        ("client_id=bot&scope=openid&scope=openid", "application/x-www-form-urlencoded"),
        ("client_id=bot&scope=" + "a" * 10_000, "application/x-www-form-urlencoded"),
        ("client_id=bot&scope=%ff%fe", "application/x-www-form-urlencoded"),
        ('{"client_id": "bot"}', "application/json"),
        ("client_id=bot%00", "application/x-www-form-urlencoded"),
    ],
    ids=["duplicate-client_id", "duplicate-scope", "10KB", "non-UTF-8", "json", "NUL"],
)
def test_malformed_device_authorization_requests_are_invalid_request(browser, bot, body, content_type):
    r = browser.post("/oauth/device_authorization", content=body, headers={"content-type": content_type})
    assert r.status_code == 400 and r.json()["error"] == "invalid_request", r.text


def test_malformed_device_code_polls_are_the_rfcs_errors(browser, bot, clock):
    started = begin(browser)
    grant = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Adevice_code&client_id=bot"
    form = {"content-type": "application/x-www-form-urlencoded"}
    twice = f"{grant}&device_code={started['device_code']}&device_code={started['device_code']}"
    assert browser.post("/oauth/token", content=twice, headers=form).json()["error"] == "invalid_request"
    assert browser.post("/oauth/token", content=grant, headers=form).json()["error"] == "invalid_request"
    sqlish = f"{grant}&device_code=%27%20OR%201%3D1%20--"
    assert browser.post("/oauth/token", content=sqlish, headers=form).json()["error"] == "invalid_grant"
    huge = f"{grant}&device_code={'d' * 10_000}"
    assert browser.post("/oauth/token", content=huge, headers=form).json()["error"] == "invalid_request"


def test_signing_out_where_it_was_approved_ends_the_device_sign_in(idp, browser, bot, clock):
    """The device's grant belongs to the session it was approved in, like every app's grant."""
    first = begin(browser)
    decide(browser, idp.issuer, first["user_code"])
    clock.advance(5)
    tokens = poll(browser, bot, first["device_code"]).json()
    pending = begin(browser)
    decide(browser, idp.issuer, pending["user_code"])  # approved, not yet redeemed
    _, fields = form_fields(browser.get("/logout").text, "logout-form")
    assert browser.post("/logout", data=fields).status_code == 200
    bearer = {"Authorization": f"Bearer {tokens['access_token']}"}
    assert browser.get("/oauth/userinfo", headers=bearer).status_code == 401
    clock.advance(5)
    assert error_of(poll(browser, bot, pending["device_code"])) == "invalid_grant"


def test_a_device_approved_by_an_account_disabled_since_gets_nothing(idp, browser, bot, clock):
    started = begin(browser)
    decide(browser, idp.issuer, started["user_code"])
    run(idp.store, accounts.disable(idp.store, idp.ctx.events, "alice", by="admin", now=int(clock())))
    clock.advance(5)
    assert error_of(poll(browser, bot, started["device_code"])) == "invalid_grant"
