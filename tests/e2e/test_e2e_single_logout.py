"""End to end with real servers: `campusid serve`, the example web client and a second relying
party (another instance of it, registered as another app), each a process of its own. A student
signed in to both signs out at the IdP: both relying parties' sessions end within 5 s (the test
polls their pages), each having received and verified exactly one logout token. Then the web
client's own sign-out button (RP-initiated logout) returns the browser to it and ends the other
app's session; and with one relying party down, the IdP's logout is as fast and the failure is an
event.

The "browser" keeps cookies per origin (the IdP and each relying party on its own port), as the
relying parties share a cookie name on one host."""

from __future__ import annotations

import json
import time
from urllib.parse import urlsplit

import httpx
import pytest

from campusid.idp.settings import load_settings
from campusid.idp.store import open_store
from tests.conftest import free_port, run_cli, start_server
from tests.examples_web_client.harness import WebClientProcess
from tests.idp.helpers import PASSWORD, form_fields, run

pytestmark = [pytest.mark.e2e, pytest.mark.serial]

SIGNED_OUT_ELSEWHERE = "You signed out at campusid"


class RelyingParty(WebClientProcess):
    """The example web client on its own port (tests/examples_web_client/harness.py), and a browser's
    client of it; its log says what each back-channel logout did."""

    def __init__(self, issuer: str, client_id: str, secret: str, port: int) -> None:
        super().__init__(issuer, client_id, secret, port)
        self.browser = httpx.Client(base_url=self.url, timeout=10)

    def logouts(self, what: str = "local session(s) ended") -> list[str]:
        return [line for line in self.lines if "back-channel logout" in line and what in line]

    def stop(self) -> None:
        self.browser.close()
        super().stop()


class Browser:
    """A browser's cookies per origin, following redirects across the IdP and the RPs."""

    def __init__(self, issuer: str, rps: list[RelyingParty]) -> None:
        self.idp = httpx.Client(timeout=10)
        self.issuer = issuer
        self.by_port = {rp.port: rp.browser for rp in rps}

    def _client(self, url: str) -> httpx.Client:
        port = urlsplit(url).port
        return self.by_port.get(port, self.idp)

    def follow(self, r: httpx.Response, base: str) -> httpx.Response:
        for _ in range(10):
            if r.status_code not in (302, 303):
                return r
            url = r.headers["location"]
            if url.startswith("/"):
                url = base + url
            base = "{0.scheme}://{0.netloc}".format(urlsplit(url))
            r = self._client(url).get(url)
        raise AssertionError("too many redirects")

    def sign_in(self, rp: RelyingParty) -> None:
        r = self.follow(rp.browser.get("/login"), rp.url)
        for _ in range(4):
            if 'id="login-form"' in r.text:
                action, fields = form_fields(r.text, "login-form")
                r = self.idp.post(self.issuer + action, data={**fields, "username": "alice", "password": PASSWORD})
            elif 'id="consent-form"' in r.text:
                action, fields = form_fields(r.text, "consent-form")
                r = self.idp.post(self.issuer + action, data={**fields, "decision": "allow"})
            else:
                break
            r = self.follow(r, self.issuer)
        assert 'action="/logout"' in r.text, r.text[:500]  # the grades page, signed in

    def sign_out_at_idp(self) -> float:
        action, fields = form_fields(self.idp.get(self.issuer + "/logout").text, "logout-form")
        start = time.perf_counter()
        r = self.idp.post(self.issuer + action, data=fields)
        took = time.perf_counter() - start
        assert r.status_code == 200 and 'id="signed-out"' in r.text
        return took


def wait_signed_out(rp: RelyingParty, start: float, count: int = 1, timeout: float = 5.0) -> float:
    """Wait until the RP has ended a session on a verified logout token (its log says so; polling
    its page first would end the session on the revoked access token instead), then its page
    says why it signed the student out."""
    while len(rp.logouts("1 local session(s) ended")) < count:
        assert time.monotonic() - start < timeout, f"{rp.url} still signed in after {timeout} s: {''.join(rp.lines)}"
        time.sleep(0.02)
    took = time.monotonic() - start
    assert SIGNED_OUT_ELSEWHERE in rp.browser.get("/").text
    return took


@pytest.fixture
def world(idp_env):
    env = idp_env
    for name, role in (("dev", "developer"), ("admin", "admin")):
        run_cli(env, "users", "add", name, "--name", name.title(), "--role", role, "--password-stdin", stdin=PASSWORD)
    run_cli(
        env,
        "users",
        "add",
        "alice",
        "--name",
        "Alice Zhang",
        "--student-number",
        "2024001",
        "--password-stdin",
        stdin=PASSWORD,
    )
    ports, secrets = [free_port(), free_port()], []
    for i, port in enumerate(ports):
        base = f"http://127.0.0.1:{port}"
        app = json.loads(
            run_cli(
                env, "apps", "create", "--name", f"RP {i + 1}", "--type", "web", "--owner", "dev",
                "--client-id", f"rp{i + 1}", "--redirect-uri", f"{base}/callback",
                "--scope", "openid", "--scope", "profile", "--scope", "grades.read",
                "--post-logout-redirect-uri", f"{base}/",
                "--backchannel-logout-uri", f"{base}/backchannel-logout", "--json",
            ).stdout
        )  # fmt: skip
        for step in (["submit"], ["approve", "--by", "admin"], ["activate"]):
            run_cli(env, "apps", step[0], app["client_id"], *step[1:])
        secrets.append(app["client_secret"])
    server = start_server(env)
    rps = []
    try:
        rps = [RelyingParty(server.issuer, f"rp{i + 1}", secrets[i], port) for i, port in enumerate(ports)]
        yield server, rps, Browser(server.issuer, rps)
    finally:
        for rp in rps:
            rp.stop()
        server.stop()


def events_of(env: dict, type_: str) -> list:
    settings = load_settings(env)
    store = open_store(settings.database_url, settings.data_dir)
    try:
        return run(store, store.events.list(type=type_))
    finally:
        store.close()


def test_signing_out_at_the_idp_ends_both_relying_parties_sessions(world):
    server, (rp1, rp2), browser = world
    browser.sign_in(rp1)
    browser.sign_in(rp2)
    took = browser.sign_out_at_idp()
    start = time.monotonic()
    ended = [wait_signed_out(rp, start) for rp in (rp1, rp2)]
    print(f"IdP logout {took * 1000:.0f} ms; RP sessions ended after {ended[0]:.2f} s and {ended[1]:.2f} s")
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:  # a second token would arrive by now; none may
        time.sleep(0.1)
    for rp in (rp1, rp2):
        assert len(rp.logouts()) == 1, rp.lines
        assert "1 local session(s) ended" in rp.logouts()[0]
        assert rp.logouts("refused") == []
    assert events_of(server.env, "logout_delivery_failed") == []
    # A relying party refuses what is not a logout token of campusid's, with 400 (2.8).
    for body in ({"logout_token": "not-a-jwt"}, {"other": "x"}, {"logout_token": "e30.e30."}):
        r = httpx.post(rp1.url + "/backchannel-logout", data=body, timeout=10)
        assert r.status_code == 400 and r.json()["error"] == "invalid_request"

    # RP-initiated: the web client's sign-out button signs out at campusid and comes back to it;
    # the other app, signed in in the same campusid session, is told.
    browser.sign_in(rp1)
    browser.sign_in(rp2)
    page = rp1.browser.get("/").text
    csrf = page.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    r = rp1.browser.post("/logout", data={"csrf": csrf})
    assert r.status_code == 303 and r.headers["location"].startswith(server.issuer + "/logout?id_token_hint=")
    r = browser.idp.get(r.headers["location"])
    assert r.status_code == 303 and r.headers["location"] == rp1.url + "/"
    assert browser.idp.get(server.issuer + "/logout").text.count('id="signed-out"') == 1  # no session left
    wait_signed_out(rp2, time.monotonic(), count=2)


def test_a_relying_party_that_is_down_does_not_slow_the_idp_logout(world):
    server, (rp1, rp2), browser = world
    browser.sign_in(rp1)
    browser.sign_in(rp2)
    baseline = browser.sign_out_at_idp()
    wait_signed_out(rp1, time.monotonic())
    wait_signed_out(rp2, time.monotonic())
    browser.sign_in(rp1)
    browser.sign_in(rp2)
    rp2.stop()  # down: its port refuses connections
    with_down = browser.sign_out_at_idp()
    wait_signed_out(rp1, time.monotonic(), count=2)
    deadline = time.monotonic() + 10
    while not (failures := events_of(server.env, "logout_delivery_failed")):
        assert time.monotonic() < deadline, "no logout_delivery_failed event"
        time.sleep(0.1)
    assert failures[0].client_id == "rp2" and "attempt 1 of 6" in failures[0].detail
    assert "next in 10 s" in failures[0].detail
    print(f"IdP logout POST: {baseline * 1000:.0f} ms with both RPs up, {with_down * 1000:.0f} ms with one down")
    assert with_down < 1.0 and with_down < baseline + 0.5, (baseline, with_down)
