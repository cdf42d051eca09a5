"""Shared by the single-logout tests: apps that registered logout URIs, and a sign-in that ends
with tokens (an ID token with `sid`, a refresh token)."""

from __future__ import annotations

from campusid.idp.apps import AppService
from tests.idp.helpers import auth_params, login_through_pages, run

BYE = "https://rp1.example.edu/bye"
BYE_QUERY = "https://rp1.example.edu/bye?from=idp"
OTHER_BYE = "https://rp2.example.edu/bye"


def logout_app(
    idp,
    client_id: str,
    *,
    post_logout: list[str] = (),
    backchannel: str | None = None,
    redirect_uri: str | None = None,
    scopes: list[str] | None = None,
) -> tuple[str, str, str]:
    """An active web app with the given logout registration: (client_id, secret, redirect_uri)."""
    redirect_uri = redirect_uri or f"https://{client_id}.example.edu/cb"
    apps = AppService(idp.store)

    async def create() -> str:
        data, secret = await apps.create(
            name=f"App {client_id}",
            app_type="web",
            redirect_uris=[redirect_uri],
            scopes=scopes or ["openid", "profile", "offline_access"],
            owner="dev",
            client_id=client_id,
            post_logout_redirect_uris=list(post_logout),
            backchannel_logout_uri=backchannel,
        )
        await apps.submit(client_id)
        await apps.approve(client_id, by="admin")
        await apps.activate(client_id)
        return secret

    return client_id, run(idp.store, create()), redirect_uri


def sign_in_to(browser, idp, app: tuple[str, str, str], username: str = "alice") -> dict:
    """The code flow through the pages and the token endpoint: the token response."""
    client_id, secret, redirect_uri = app
    flow = auth_params(client_id, redirect_uri, scope="openid profile offline_access", prompt="consent")
    cb = login_through_pages(browser, idp.issuer, flow, username)
    r = browser.post(
        "/oauth/token",
        auth=(client_id, secret),
        data={
            "grant_type": "authorization_code",
            "code": cb["code"],
            "redirect_uri": redirect_uri,
            "code_verifier": flow.verifier,
        },
    )
    assert r.status_code == 200, r.text
    return r.json()
