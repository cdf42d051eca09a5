"""Shared by the single-logout tests: apps that registered logout URIs, and a sign-in that ends
with tokens (an ID token with `sid`, a refresh token)."""

from __future__ import annotations

from campusid.idp.faces import app_service
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
    apps = app_service(idp.store)

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


class Receiver:
    """A relying party's back-channel logout endpoint, for real: an HTTP server on a loopback port
    that records each POSTed form (path, fields) and answers `status` (or, with `hang`, nothing
    until the test ends)."""

    def __init__(self, status: int = 200, hang: bool = False) -> None:
        import http.server
        import threading
        from urllib.parse import parse_qs

        self.status = status
        self.hang = hang
        self.received: list[tuple[str, dict]] = []
        self._release = threading.Event()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                length = int(self.headers.get("Content-Length", "0"))
                fields = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
                outer.received.append((self.path, fields))
                if outer.hang:
                    outer._release.wait(30)
                self.send_response(outer.status)
                self.send_header("Content-Length", "0")
                self.send_header("Cache-Control", "no-store")
                self.end_headers()

            def log_message(self, *args):
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def tokens(self, path: str | None = None) -> list[str]:
        return [f["logout_token"] for p, f in list(self.received) if path is None or p == path]

    def wait_for(self, count: int, timeout: float = 5.0) -> float:
        """Poll until `count` POSTs arrived (AssertionError after `timeout` s); the seconds it took."""
        import time

        start = time.monotonic()
        while len(self.received) < count:
            if time.monotonic() - start > timeout:
                raise AssertionError(f"{len(self.received)} of {count} logout notices within {timeout} s")
            time.sleep(0.02)
        return time.monotonic() - start

    def close(self) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()


def check_logout_token(token: str, keys, issuer: str, client_id: str, sid: str, sub: str) -> dict:
    """Back-Channel Logout 1.0 2.4 and 2.6, checked independently of the code under test."""
    import time

    from joserfc import jwt

    decoded = jwt.decode(token, keys, algorithms=["RS256"])
    claims = decoded.claims
    assert decoded.header["alg"] == "RS256" and decoded.header["kid"]
    assert claims["iss"] == issuer and claims["aud"] == client_id
    assert claims["sid"] == sid and claims["sub"] == sub
    assert claims["events"] == {"http://schemas.openid.net/event/backchannel-logout": {}}
    assert "nonce" not in claims
    assert len(claims["jti"]) >= 16
    now = time.time()
    assert claims["iat"] <= now + 5 and claims["exp"] > now
    return claims
