"""The authorization request rules (RFC 6749 4.1.1, OIDC Core 3.1.2, RFC 7636, RFC 9207), each negative on its own."""

from urllib.parse import urlencode

import pytest

from campusid.idp.faces import app_service
from tests.idp.conftest import NATIVE_REDIRECT, WEB_REDIRECT
from tests.idp.helpers import auth_params, callback_params, form_fields, login_through_pages, pending_handle, run


def _authorize(browser, params: dict | str):
    query = params if isinstance(params, str) else urlencode(params)
    return browser.get(f"/oauth/authorize?{query}")


def _assert_error_page(r):
    assert r.status_code == 400
    assert "location" not in r.headers
    assert r.headers["content-type"].startswith("text/html")
    assert r.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in r.headers["content-security-policy"]


def _error_redirect(r, redirect_uri: str) -> dict:
    assert r.status_code == 303, r.text[:300]
    assert r.headers["location"].startswith(redirect_uri + "?")
    return callback_params(r.headers["location"])


def test_unknown_client_gets_the_error_page_not_a_redirect(idp, browser):
    _assert_error_page(_authorize(browser, auth_params("no-such-client", WEB_REDIRECT).params))


@pytest.mark.parametrize("state", ["draft", "under_review", "approved", "rejected", "suspended"])
def test_inactive_client_never_redirects(idp, browser, state):
    apps = app_service(idp.store)

    async def take_to_state() -> str:
        data, _ = await apps.create(
            name="x", app_type="web", redirect_uris=[WEB_REDIRECT], scopes=["openid"], owner="dev"
        )
        cid = data["client_id"]
        if state != "draft":
            await apps.submit(cid)
        if state in ("approved", "suspended"):
            await apps.approve(cid, by="admin")
        if state == "rejected":
            await apps.reject(cid, by="admin", feedback="no")
        if state == "suspended":
            await apps.activate(cid)
            await apps.suspend(cid, by="admin")
        return cid

    cid = run(idp.store, take_to_state())
    assert idp.db.apps.get(cid).state == state
    _assert_error_page(_authorize(browser, auth_params(cid, WEB_REDIRECT).params))


@pytest.mark.parametrize(
    "redirect_uri",
    [
        "https://evil.example/callback",
        "https://rp.example.edu/callback/",
        "https://rp.example.edu/callback?x=1",
        "HTTPS://rp.example.edu/callback",
        None,
    ],
)
def test_unregistered_redirect_uri_never_redirects(idp, browser, redirect_uri):
    _assert_error_page(_authorize(browser, auth_params(idp.web_id, redirect_uri).params))


@pytest.mark.parametrize(
    "redirect_uri",
    [
        "http://[::1]:5000/callback",
        "http://localhost:5000/callback",
        "http://127.0.0.1:5000/other",
        "http://127.0.0.2:5000/callback",
        "https://127.0.0.1:5000/callback",
    ],
)
def test_loopback_exception_is_only_the_port(idp, browser, redirect_uri):
    _assert_error_page(_authorize(browser, auth_params(idp.native_id, redirect_uri).params))


def test_duplicated_client_id_or_redirect_uri_is_the_error_page(idp, browser):
    params = auth_params(idp.web_id, WEB_REDIRECT).params
    _assert_error_page(_authorize(browser, urlencode(params) + f"&client_id={idp.web_id}"))
    _assert_error_page(_authorize(browser, urlencode(params) + f"&redirect_uri={WEB_REDIRECT}"))


def test_duplicated_parameter_is_invalid_request(idp, browser):
    flow = auth_params(idp.web_id, WEB_REDIRECT)
    cb = _error_redirect(_authorize(browser, urlencode(flow.params) + "&scope=openid"), WEB_REDIRECT)
    assert cb["error"] == "invalid_request"
    assert cb["iss"] == idp.issuer and cb["state"] == flow.params["state"]


def test_missing_state_is_invalid_request(idp, browser):
    cb = _error_redirect(_authorize(browser, auth_params(idp.web_id, WEB_REDIRECT, state=None).params), WEB_REDIRECT)
    assert cb["error"] == "invalid_request" and "state" in cb["error_description"]
    assert cb["iss"] == idp.issuer and "state" not in cb


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"code_challenge": None, "code_challenge_method": None}, "code_challenge"),
        ({"code_challenge_method": None}, "S256"),
        ({"code_challenge_method": "plain"}, "S256"),
        ({"code_challenge": "short"}, "code_challenge"),
    ],
)
def test_pkce_is_required_with_s256(idp, browser, change, fragment):
    flow = auth_params(idp.native_id, NATIVE_REDIRECT)
    params = {k: v for k, v in {**flow.params, **change}.items() if v is not None}
    cb = _error_redirect(_authorize(browser, params), NATIVE_REDIRECT)
    assert cb["error"] == "invalid_request" and fragment in cb["error_description"]
    assert cb["state"] == flow.params["state"] and cb["iss"] == idp.issuer


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"response_type": "token"}, "unsupported_response_type"),
        ({"response_type": None}, "invalid_request"),
        ({"scope": "profile"}, "invalid_scope"),
        ({"scope": "openid student_number"}, "invalid_scope"),
        ({"scope": "openid admin"}, "invalid_scope"),
        ({"prompt": "select_account"}, "invalid_request"),
        ({"prompt": "none login"}, "invalid_request"),
        ({"max_age": "-1"}, "invalid_request"),
        ({"response_mode": "fragment"}, "invalid_request"),
        ({"request": "eyJ.x.y"}, "request_not_supported"),
    ],
)
def test_other_request_errors_redirect_with_state_and_iss(idp, browser, change, error):
    flow = auth_params(idp.web_id, WEB_REDIRECT)
    params = {k: v for k, v in {**flow.params, **change}.items() if v is not None}
    cb = _error_redirect(_authorize(browser, params), WEB_REDIRECT)
    assert cb["error"] == error
    assert cb["state"] == flow.params["state"] and cb["iss"] == idp.issuer


def test_unauthenticated_user_gets_the_login_form_from_the_authorization_endpoint(idp, browser):
    r = _authorize(browser, auth_params(idp.web_id, WEB_REDIRECT).params)
    assert r.status_code == 200 and "location" not in r.headers
    action, fields = form_fields(r.text, "login-form")
    handle = pending_handle(fields["csrf_token"])
    assert action == f"/login?interaction={handle}"
    assert "to continue to <strong>web app</strong>" in r.text
    # A login page's headers; the address holds the authorization request, so no Referer either.
    assert r.headers["x-frame-options"] == "DENY" and "frame-ancestors 'none'" in r.headers["content-security-policy"]
    assert r.headers["cache-control"] == "no-store" and r.headers["referrer-policy"] == "no-referrer"
    assert browser.cookies.get("campusid_interaction")
    # The login page at its own address shows the same sign-in (the same token, bound to it).
    again = browser.get(action)
    assert form_fields(again.text, "login-form")[1]["csrf_token"] == fields["csrf_token"]


def test_prompt_none_without_session_is_login_required(idp, browser):
    cb = _error_redirect(_authorize(browser, auth_params(idp.web_id, WEB_REDIRECT, prompt="none").params), WEB_REDIRECT)
    assert cb["error"] == "login_required" and cb["iss"] == idp.issuer


def test_sso_with_remembered_consent_and_prompt_values(idp, browser):
    cb = login_through_pages(browser, idp.issuer, auth_params(idp.web_id, WEB_REDIRECT), "alice")
    assert "code" in cb
    # An existing session and remembered consent: straight back with a code.
    r = _authorize(browser, auth_params(idp.web_id, WEB_REDIRECT, prompt="none").params)
    assert "code" in _error_redirect(r, WEB_REDIRECT)
    # A wider scope needs consent again; with prompt=none that is consent_required.
    r = _authorize(browser, auth_params(idp.web_id, WEB_REDIRECT, scope="openid email", prompt="none").params)
    assert _error_redirect(r, WEB_REDIRECT)["error"] == "consent_required"
    # prompt=consent shows the consent page even though consent is remembered.
    r = _authorize(browser, auth_params(idp.web_id, WEB_REDIRECT, prompt="consent").params)
    assert r.headers["location"].startswith("/consent?interaction=")
    assert 'id="consent-form"' in browser.get(r.headers["location"]).text
    # prompt=login and max_age=0 force the login page.
    for extra in ({"prompt": "login"}, {"max_age": "0"}):
        r = _authorize(browser, auth_params(idp.web_id, WEB_REDIRECT, **extra).params)
        assert r.status_code == 200 and 'id="login-form"' in r.text, extra


def test_denied_consent_is_access_denied(idp, browser):
    flow = auth_params(idp.web_id, WEB_REDIRECT)
    cb = login_through_pages(browser, idp.issuer, flow, "alice", consent="deny")
    assert cb["error"] == "access_denied" and cb["state"] == flow.params["state"] and cb["iss"] == idp.issuer


def test_post_authorization_request_works_like_get(idp, browser):
    login_through_pages(browser, idp.issuer, auth_params(idp.web_id, WEB_REDIRECT), "alice")
    flow = auth_params(idp.web_id, WEB_REDIRECT)
    r = browser.post("/oauth/authorize", data=flow.params)
    assert "code" in _error_redirect(r, WEB_REDIRECT)


def test_the_authorization_endpoint_never_answers_cors(idp, browser):
    """RFC 9700 2.6: CORS MUST NOT be supported at the authorization endpoint (the client sends
    the browser there; it never calls it). Neither a code, an error redirect nor a preflight
    answers a cross-origin caller."""
    origin = {"Origin": "https://app.example"}
    login_through_pages(browser, idp.issuer, auth_params(idp.web_id, WEB_REDIRECT), "alice")
    for change, expect in (({}, "code"), ({"scope": "profile"}, "error")):
        params = {**auth_params(idp.web_id, WEB_REDIRECT).params, **change}
        r = browser.get(f"/oauth/authorize?{urlencode(params)}", headers=origin)
        assert expect in _error_redirect(r, WEB_REDIRECT)
        assert not [h for h in r.headers if h.lower().startswith("access-control-")], r.headers
    for method in ("OPTIONS", "POST"):
        headers = {**origin, "Access-Control-Request-Method": "POST"} if method == "OPTIONS" else origin
        r = browser.request(method, "/oauth/authorize", headers=headers)
        assert not [h for h in r.headers if h.lower().startswith("access-control-")], (method, r.headers)
        assert r.status_code in (400, 405), (method, r.status_code)
