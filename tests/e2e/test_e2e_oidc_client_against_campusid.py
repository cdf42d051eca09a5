"""campusid.oidc_client against our own `campusid serve` over real HTTP: discovery, the code flow
with PKCE for a native client (through LoopbackReceiver, with the login form driven by httpx in a
thread like a browser would) and for a web client (client_secret_basic), ID-token validation,
userinfo, refresh (with rotation) and revocation."""

from __future__ import annotations

import threading
from urllib.parse import parse_qsl, urlencode, urlsplit

import httpx
import pytest

from campusid.idp.settings import load_settings
from campusid.idp.store import open_store
from campusid.oidc_client import (
    AsyncOIDCClient,
    LoopbackReceiver,
    OIDCClient,
    StateMismatchError,
    TokenEndpointError,
    UserInfoError,
)
from tests.conftest import free_port, fresh_database, isolated_env, start_server
from tests.idp.helpers import PASSWORD, Flow, active_client, login_through_pages, make_user

pytestmark = pytest.mark.e2e

NATIVE_SCOPES = ["openid", "profile", "offline_access", "grades.read"]


@pytest.fixture(scope="module")
def module_env(tmp_path_factory):
    """One IdP for the whole module (a server start costs seconds); the tests use separate logins
    and each ends only the grants it created. The backend follows CAMPUSID_DATABASE_URL."""
    tmp = tmp_path_factory.mktemp("campusid-e2e")
    with fresh_database(tmp) as database_url:
        yield isolated_env(tmp, database_url)


@pytest.fixture(scope="module")
def campusid(module_env):
    server = start_server(module_env)
    settings = load_settings(server.env)
    store = open_store(settings.database_url, settings.data_dir)
    make_user(store, "alice", student_number="2024001", name="Alice Zhang")
    native_id, _ = active_client(
        store,
        client_type="native",
        redirect_uris=["http://127.0.0.1/callback"],
        scopes=NATIVE_SCOPES,
        client_id="e2e-native",
    )
    web_port = free_port()
    web_id, web_secret = active_client(
        store,
        client_type="web",
        redirect_uris=[f"http://127.0.0.1:{web_port}/callback"],
        scopes=["openid", "profile"],
        client_id="e2e-web",
    )
    store.close()
    server.native_id, server.web_id, server.web_secret = native_id, web_id, web_secret
    server.web_redirect = f"http://127.0.0.1:{web_port}/callback"
    yield server
    server.stop()


def browser_login(issuer: str, authorization_url: str) -> dict[str, str]:
    """Sign alice in through the real login and consent pages; return the callback parameters."""
    params = dict(parse_qsl(urlsplit(authorization_url).query))
    with httpx.Client(follow_redirects=False, timeout=10) as browser:
        return login_through_pages(browser, issuer, Flow(params, verifier=""), "alice", PASSWORD)


def test_discovery(campusid):
    with OIDCClient(campusid.issuer, campusid.native_id) as client:
        metadata = client.discover()
        assert metadata.issuer == campusid.issuer
        assert metadata.token_endpoint == campusid.issuer + "/oauth/token"
        assert metadata.jwks_uri == campusid.issuer + "/oauth/jwks"
        assert metadata.iss_parameter_supported
        assert client.discover() is metadata  # cached


def test_native_code_flow_with_pkce_through_the_loopback_receiver(campusid):
    with OIDCClient(campusid.issuer, campusid.native_id) as client:
        with LoopbackReceiver(timeout=30) as receiver:
            req = client.authorization_request(scope=" ".join(NATIVE_SCOPES), redirect_uri=receiver.redirect_uri)
            assert req.code_verifier not in req.url and "code_challenge=" in req.url
            pages: dict[str, httpx.Response] = {}

            def system_browser() -> None:  # what the user's browser does after webbrowser.open(req.url)
                callback = browser_login(campusid.issuer, req.url)
                pages["callback"] = httpx.get(f"{receiver.redirect_uri}?{urlencode(callback)}", timeout=10)

            thread = threading.Thread(target=system_browser)
            thread.start()
            params = receiver.wait(req.state)
            thread.join(20)
        assert pages["callback"].status_code == 200 and "Signed in" in pages["callback"].text
        assert receiver.closed
        tokens = client.handle_callback(req, params)

        # ID token: validated by the library (signature by kid, iss, aud, exp, nonce)
        claims = tokens.id_claims
        assert claims["iss"] == campusid.issuer and claims["aud"] == campusid.native_id
        assert claims["nonce"] == req.nonce
        assert "2024001" not in claims["sub"]
        assert client.validate_id_token(tokens.id_token, nonce=req.nonce)["sub"] == claims["sub"]
        assert set(tokens.scope.split()) == set(NATIVE_SCOPES)

        info = client.userinfo(tokens.access_token, expected_sub=claims["sub"])
        assert info["name"] == "Alice Zhang"
        grades = httpx.get(
            campusid.issuer + "/records/v1/grades", headers={"Authorization": f"Bearer {tokens.access_token}"}
        )
        assert grades.status_code == 200 and grades.json()["student"]["name"] == "Alice Zhang"

        # refresh rotates the refresh token; the old one is spent
        refreshed = client.refresh(tokens.refresh_token)
        assert refreshed.refresh_token and refreshed.refresh_token != tokens.refresh_token
        assert refreshed.access_token != tokens.access_token
        assert client.userinfo(refreshed.access_token, expected_sub=claims["sub"])["sub"] == claims["sub"]
        with pytest.raises(TokenEndpointError) as reused:
            client.refresh(tokens.refresh_token)
        assert reused.value.error == "invalid_grant"


def test_native_refresh_then_revoke_ends_the_grant(campusid):
    with OIDCClient(campusid.issuer, campusid.native_id) as client:
        with LoopbackReceiver(timeout=30) as receiver:
            req = client.authorization_request(
                scope="openid profile offline_access", redirect_uri=receiver.redirect_uri
            )
            thread = threading.Thread(
                target=lambda: httpx.get(
                    f"{receiver.redirect_uri}?{urlencode(browser_login(campusid.issuer, req.url))}", timeout=10
                )
            )
            thread.start()
            params = receiver.wait(req.state)
            thread.join(20)
        tokens = client.handle_callback(req, params)
        client.revoke(tokens.refresh_token, "refresh_token")
        with pytest.raises(TokenEndpointError) as refused:
            client.refresh(tokens.refresh_token)
        assert refused.value.error == "invalid_grant"
        with pytest.raises(UserInfoError) as denied:
            client.userinfo(tokens.access_token)
        assert denied.value.status == 401 and denied.value.error == "invalid_token"


def test_web_client_code_flow_with_client_secret_basic(campusid):
    with OIDCClient(campusid.issuer, campusid.web_id, campusid.web_secret, campusid.web_redirect) as client:
        req = client.authorization_request(scope="openid profile")
        callback = browser_login(campusid.issuer, req.url)
        assert callback["iss"] == campusid.issuer
        # a callback with another state is refused before the code is sent anywhere
        with pytest.raises(StateMismatchError):
            client.handle_callback(req, {**callback, "state": "forged"})
        tokens = client.handle_callback(req, callback)
        assert tokens.id_claims["aud"] == campusid.web_id and tokens.id_claims["nonce"] == req.nonce
        assert tokens.refresh_token is None  # web clients only with offline_access
        assert client.userinfo(tokens.access_token, expected_sub=tokens.id_claims["sub"])["name"] == "Alice Zhang"
        # the code is single use: exchanging it again fails, and the caller must start a new login
        with pytest.raises(TokenEndpointError) as replay:
            client.exchange_code(req, callback["code"])
        assert replay.value.error == "invalid_grant"
        with pytest.raises(UserInfoError):  # the replay revoked what the code had issued (RFC 6749 4.1.2)
            client.userinfo(tokens.access_token)

    # a wrong secret is invalid_client
    with OIDCClient(campusid.issuer, campusid.web_id, "not-the-secret", campusid.web_redirect) as client:
        req = client.authorization_request(scope="openid")
        with pytest.raises(TokenEndpointError) as bad:
            client.handle_callback(req, browser_login(campusid.issuer, req.url))
        assert bad.value.error == "invalid_client" and bad.value.status == 401


async def test_async_client_web_flow_and_revoke(campusid):
    import asyncio

    async with AsyncOIDCClient(campusid.issuer, campusid.web_id, campusid.web_secret, campusid.web_redirect) as client:
        req = await client.authorization_request(scope="openid profile")
        callback = await asyncio.to_thread(browser_login, campusid.issuer, req.url)
        tokens = await client.handle_callback(req, callback)
        assert tokens.id_claims["aud"] == campusid.web_id
        assert (await client.userinfo(tokens.access_token))["sub"] == tokens.id_claims["sub"]
        await client.revoke(tokens.access_token, "access_token")
        with pytest.raises(UserInfoError):
            await client.userinfo(tokens.access_token)
