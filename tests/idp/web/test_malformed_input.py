"""Hostile and malformed input at every endpoint gets the protocol's error, never a 500."""

import base64
import json

import pytest

ENDPOINTS_FORM = ["/oauth/token", "/oauth/revoke", "/oauth/introspect"]
ALL_GET = [
    "/.well-known/openid-configuration",
    "/oauth/jwks",
    "/oauth/authorize",
    "/oauth/userinfo",
    "/login",
    "/consent",
    "/logout",
    "/records/v1/grades",
    "/",
]


@pytest.mark.parametrize("path", ENDPOINTS_FORM)
@pytest.mark.parametrize(
    ("body", "ctype"),
    [
        (b"grant_type=authorization_code&code=%FF%FE", "application/x-www-form-urlencoded"),
        (b"\xff\xfe\x00garbage", "application/x-www-form-urlencoded"),
        (json.dumps({"grant_type": "authorization_code"}).encode(), "application/json"),
        (b"grant_type=a&grant_type=b", "application/x-www-form-urlencoded"),
        (b"token=" + b"A" * 70000, "application/x-www-form-urlencoded"),
        (b"code=" + b"A" * 5000, "application/x-www-form-urlencoded"),
        (b"", "text/plain"),
        (b"a=%00", "application/x-www-form-urlencoded"),
        (b"&".join(b"p%d=1" % i for i in range(100)), "application/x-www-form-urlencoded"),
    ],
)
def test_form_endpoints_answer_malformed_bodies_with_oauth_errors(idp, browser, path, body, ctype):
    r = browser.post(path, content=body, headers={"Content-Type": ctype})
    assert r.status_code in (400, 401, 413), (r.status_code, r.text)
    assert r.json()["error"] in ("invalid_request", "invalid_client")


@pytest.mark.parametrize(
    "header",
    [
        "Basic",
        "Basic =",
        "Basic " + "A" * 10000,
        "Digest foo",
        "Bearer",
        "\u00ff\u00fe",
        "Basic Zm9vOmJhcg==, Basic x",
        # a NUL in the client id, percent-encoded or raw: no database column can hold one
        "Basic " + base64.b64encode(b"web%00app:secret").decode(),
        "Basic " + base64.b64encode(b"web\x00app:secret").decode(),
    ],
)
@pytest.mark.parametrize("path", ENDPOINTS_FORM)
def test_garbage_authorization_headers(idp, browser, path, header):
    r = browser.post(
        path,
        content=b"grant_type=authorization_code&code=x&token=x",
        headers={"Content-Type": "application/x-www-form-urlencoded", "Authorization": header.encode("latin-1")},
    )
    assert r.status_code in (400, 401)
    assert r.json()["error"] in ("invalid_client", "invalid_request")


@pytest.mark.parametrize("path", ["/oauth/userinfo", "/records/v1/grades"])
@pytest.mark.parametrize(
    "header",
    [
        "Bearer",
        "Bearer a b",
        "Bearer " + "x" * 9000,
        "Basic abc",
        "Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.",
        "Bearer not.a.jwt",
        "Bearer \u00ff\u00fe.\u00ff.\u00ff",
    ],
)
def test_bearer_endpoints_reject_garbage_with_rfc6750(idp, browser, path, header):
    r = browser.get(path, headers={"Authorization": header.encode("latin-1")})
    assert r.status_code == 401
    assert r.json()["error"] == "invalid_token"
    assert r.headers["www-authenticate"].startswith("Bearer")


@pytest.mark.parametrize(
    "query",
    [
        b"client_id=%FF",
        b"client_id=web-app&redirect_uri=%C0%AF",
        b"%FF=1",
        b"client_id=" + b"A" * 5000,
        b"client_id=web-app&client_id=web-app",
        b"&".join(b"p%d=1" % i for i in range(100)),
        b"client_id=%00",
    ],
)
def test_authorize_with_malformed_query_is_the_error_page(idp, browser, query):
    r = browser.get("/oauth/authorize?" + query.decode("latin-1"))
    assert r.status_code == 400 and "location" not in r.headers
    assert r.headers["content-type"].startswith("text/html")


def test_authorize_post_with_json_is_the_error_page(idp, browser):
    r = browser.post("/oauth/authorize", json={"client_id": idp.web_id})
    assert r.status_code == 400 and "location" not in r.headers


@pytest.mark.parametrize("path", ALL_GET)
def test_get_endpoints_never_500_on_odd_queries(idp, browser, path):
    r = browser.get(path + "?%FF%FE=%FF&next=//evil.example&x=" + "y" * 3000)
    assert r.status_code < 500


@pytest.mark.parametrize("path", ["/login", "/consent", "/logout"])
@pytest.mark.parametrize(
    ("body", "ctype"),
    [
        (b"\xff\xfe", "application/x-www-form-urlencoded"),
        (b'{"username":"a"}', "application/json"),
        (b"username=a&username=b", "application/x-www-form-urlencoded"),
        (b"x" * 70000, "application/x-www-form-urlencoded"),
    ],
)
def test_pages_answer_malformed_posts_without_500(idp, browser, path, body, ctype):
    browser.get("/login")  # a pending interaction, so the handlers get past the first check
    r = browser.post(path, content=body, headers={"Content-Type": ctype})
    # /logout without a session is already "signed out" (200); the others refuse the form.
    assert (400 <= r.status_code < 500) or (path == "/logout" and r.status_code == 200), (r.status_code, r.text[:200])
    assert r.headers["content-type"].startswith("text/html")


def test_wrong_methods_get_protocol_errors(idp, browser):
    r = browser.get("/oauth/token")
    assert r.status_code == 405 and r.json()["error"] == "invalid_request"
    r = browser.delete("/oauth/authorize")
    assert r.status_code == 405
    r = browser.get("/nope")
    assert r.status_code == 404 and r.headers["content-type"].startswith("text/html")


def test_login_next_cannot_redirect_off_site(idp, browser):
    from tests.idp.helpers import PASSWORD, form_fields

    for evil in ("//evil.example/x", "https://evil.example/", "/\\evil.example"):
        browser.cookies.clear()
        r = browser.get(f"/login?next={evil}", follow_redirects=True)
        action, fields = form_fields(r.text, "login-form")
        r = browser.post(action, data={**fields, "username": "alice", "password": PASSWORD})
        assert r.status_code == 303 and r.headers["location"] == "/", evil
