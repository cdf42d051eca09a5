"""End to end over real HTTP against a started `campusid serve`: the code + PKCE flow for a web
client (client_secret_basic) and a native client (loopback registered without a port, used with
several ports), with the ID token verified against the JWKS; and 20 concurrent redemptions."""

import json
import threading
import time

import httpx
import pytest
from joserfc import jwt
from joserfc.jwk import KeySet

from tests.conftest import active_app, add_users, run_cli, start_server
from tests.idp.helpers import PASSWORD, auth_params, code_exchange, login_through_pages

pytestmark = pytest.mark.e2e


@pytest.fixture
def server(idp_env):
    run_cli(
        idp_env,
        "users",
        "add",
        "alice",
        "--name",
        "Alice Zhang",
        "--given-name",
        "Alice",
        "--family-name",
        "Zhang",
        "--student-number",
        "2024001",
        "--password-stdin",
        stdin=PASSWORD + "\n",
    )
    add_users(idp_env, PASSWORD, ("dev", "developer"), ("admin", "admin"))
    clients = {
        kind: active_app(idp_env, kind, kind, uri, "openid", "profile")
        for kind, uri in (("web", "https://rp.example.edu/callback"), ("native", "http://127.0.0.1/callback"))
    }
    srv = start_server(idp_env)
    srv.clients = clients
    yield srv
    srv.stop()


def verify_id_token(issuer: str, token: str, client_id: str, nonce: str) -> dict:
    doc = httpx.get(f"{issuer}/.well-known/openid-configuration").json()
    assert doc["issuer"] == issuer
    jwks = KeySet.import_key_set(httpx.get(doc["jwks_uri"]).json())
    decoded = jwt.decode(token, jwks, algorithms=["RS256"])
    header = decoded.header
    assert header["alg"] == "RS256" and header["kid"] in {k["kid"] for k in httpx.get(doc["jwks_uri"]).json()["keys"]}
    claims = decoded.claims
    now = time.time()
    assert claims["iss"] == issuer
    assert claims["aud"] == client_id
    assert claims["exp"] > now and claims["iat"] <= now + 5
    assert claims["nonce"] == nonce
    return claims


def test_web_client_flow_with_client_secret_basic(server):
    web = server.clients["web"]
    with httpx.Client() as browser:
        flow = auth_params(web["client_id"], "https://rp.example.edu/callback")
        cb = login_through_pages(browser, server.issuer, flow, "alice")
    assert cb["state"] == flow.params["state"] and cb["iss"] == server.issuer
    r = httpx.post(
        f"{server.issuer}/oauth/token",
        auth=(web["client_id"], web["client_secret"]),
        data=code_exchange(flow, cb["code"], "https://rp.example.edu/callback"),
    )
    assert r.status_code == 200, r.text
    claims = verify_id_token(server.issuer, r.json()["id_token"], web["client_id"], flow.params["nonce"])
    info = httpx.get(
        f"{server.issuer}/oauth/userinfo", headers={"Authorization": f"Bearer {r.json()['access_token']}"}
    ).json()
    assert info == {"sub": claims["sub"], "name": "Alice Zhang", "given_name": "Alice", "family_name": "Zhang"}


def test_native_client_flow_on_several_loopback_ports(server):
    native = server.clients["native"]
    subs = set()
    with httpx.Client() as browser:
        for port in (49152, 50123, 61000):
            redirect_uri = f"http://127.0.0.1:{port}/callback"
            flow = auth_params(native["client_id"], redirect_uri)
            cb = login_through_pages(browser, server.issuer, flow, "alice")
            r = httpx.post(
                f"{server.issuer}/oauth/token",
                data=code_exchange(flow, cb["code"], redirect_uri, native["client_id"]),
            )
            assert r.status_code == 200, r.text
            assert "refresh_token" in r.json()
            subs.add(
                verify_id_token(server.issuer, r.json()["id_token"], native["client_id"], flow.params["nonce"])["sub"]
            )
    assert len(subs) == 1


def test_twenty_concurrent_redemptions_exactly_one_wins(server):
    native = server.clients["native"]
    redirect_uri = "http://127.0.0.1:50000/callback"
    with httpx.Client() as browser:
        flow = auth_params(native["client_id"], redirect_uri)
        cb = login_through_pages(browser, server.issuer, flow, "alice")
    data = code_exchange(flow, cb["code"], redirect_uri, native["client_id"])
    barrier = threading.Barrier(20)
    results: list[httpx.Response] = []
    lock = threading.Lock()

    def redeem():
        with httpx.Client() as c:
            barrier.wait()
            r = c.post(f"{server.issuer}/oauth/token", data=data, timeout=30)
        with lock:
            results.append(r)

    threads = [threading.Thread(target=redeem) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ok = [r for r in results if r.status_code == 200]
    assert len(results) == 20
    assert len(ok) == 1, [r.status_code for r in results]
    assert all(r.json()["error"] == "invalid_grant" for r in results if r.status_code != 200)
    # The replays revoked what the winner got.
    r = httpx.get(
        f"{server.issuer}/oauth/userinfo", headers={"Authorization": f"Bearer {ok[0].json()['access_token']}"}
    )
    assert r.status_code == 401


def test_demo_command_prints_json_and_serves(idp_env, tmp_path):
    """The README's first command runs `campusid demo`; this is that command on a free port. It is
    one worker, whose figures stay in memory: an inherited PROMETHEUS_MULTIPROC_DIR gets no file."""
    inherited = tmp_path / "inherited-metrics"
    inherited.mkdir()
    srv = start_server({**idp_env, "PROMETHEUS_MULTIPROC_DIR": str(inherited)}, "--json", command="demo")
    try:
        line = srv.proc.stdout.readline()
        info = json.loads(line)
        assert info["issuer"] == srv.issuer
        assert {c["client_id"] for c in info["clients"]} == {"campusid-desktop", "campusid-web-demo"}
        web = next(c for c in info["clients"] if c["type"] == "web")
        assert web["client_secret"]
        assert {u["username"] for u in info["users"]} >= {"alice", "bob", "admin"}
        doc = httpx.get(f"{srv.issuer}/.well-known/openid-configuration").json()
        assert doc["issuer"] == srv.issuer
        assert list(inherited.iterdir()) == []
    finally:
        srv.stop()


def test_demo_prints_the_web_secret_whole_on_a_narrow_terminal(idp_env):
    """Without --json the demo prints tables for people; the web client's secret must come out whole
    (a table cell would cut it to the terminal's width), and it must be the secret the IdP accepts."""
    srv = start_server({**idp_env, "COLUMNS": "60"}, command="demo")
    try:
        lines = []
        for line in srv.proc.stdout:
            lines.append(line.rstrip("\n"))
            if line.startswith("Discovery:"):
                break
        secret = lines[lines.index("Secret of campusid-web-demo (new at each start):") + 1]
        assert "…" not in secret and len(secret) >= 43
        wrong = httpx.post(
            f"{srv.issuer}/oauth/token",
            data={"grant_type": "refresh_token", "refresh_token": "x" * 43},
            auth=("campusid-web-demo", secret[:-1]),
        )
        assert wrong.status_code == 401
        right = httpx.post(
            f"{srv.issuer}/oauth/token",
            data={"grant_type": "refresh_token", "refresh_token": "x" * 43},
            auth=("campusid-web-demo", secret),
        )
        assert right.status_code == 400 and right.json()["error"] == "invalid_grant"
    finally:
        srv.stop()
