"""/metrics, /readyz and JSON logs of real `campusid serve` processes: with `--workers 2` the
figures cover both workers (and survive a worker killed and replaced), and with
CAMPUSID_LOG_FORMAT=json every stderr line is one JSON object and none holds a secret."""

from __future__ import annotations

import json
import os
import signal
import subprocess

import httpx
import pytest

from tests.conftest import BIN, active_app, add_users, start_server
from tests.e2e.test_e2e_serve_workers import two_workers, wait_for
from tests.idp.helpers import PASSWORD, auth_params, code_exchange, login_through_pages
from tests.idp.web.metrics_scenario import EXPECTED, FAILED_LIMIT, METRICS_TOKEN, run_script, scrape

pytestmark = pytest.mark.e2e
REDIRECT = "http://127.0.0.1/callback"
WEB_REDIRECT = "https://rp.example.edu/callback"


def web_client_flow(c: httpx.Client, issuer: str, env: dict) -> dict:
    """A confidential client's code flow (Basic authentication), with one wrong secret first."""
    flow = auth_params(env["WEB_ID"], WEB_REDIRECT, scope="openid profile")
    cb = login_through_pages(c, issuer, flow, "alice")
    data = code_exchange(flow, cb["code"], WEB_REDIRECT)
    wrong = c.post("/oauth/token", data=data, auth=(env["WEB_ID"], env["WEB_SECRET"][:-2] + "xx"))
    assert wrong.status_code == 401
    r = c.post("/oauth/token", data=data, auth=(env["WEB_ID"], env["WEB_SECRET"]))
    assert r.status_code == 200, r.text
    return {"web_code": cb["code"], "web_verifier": flow.verifier, "web_id_token": r.json()["id_token"]}


@pytest.fixture
def env(idp_env, tmp_path):
    add_users(idp_env, PASSWORD, ("alice", "student"), ("bob", "student"), ("dev", "developer"), ("admin", "admin"))
    app = active_app(idp_env, "n", "native", REDIRECT, "openid", "offline_access")
    web = active_app(idp_env, "w", "web", WEB_REDIRECT, "openid", "profile")
    (tmp_path / "tmp").mkdir()
    return {
        **idp_env,
        "CAMPUSID_METRICS_TOKEN": METRICS_TOKEN,
        "CAMPUSID_LIMIT_FAILED_PER_ACCOUNT": FAILED_LIMIT,
        "CAMPUSID_REDIS_URL": "redis://127.0.0.1:6379/0",  # the limits hold across both workers
        "CAMPUSID_LOG_FORMAT": "json",
        "TMPDIR": str(tmp_path / "tmp"),  # where serve makes its metrics directory
        "CLIENT_ID": app["client_id"],
        "WEB_ID": web["client_id"],
        "WEB_SECRET": web["client_secret"],
    }


SUCCESS = ("campusid_logins_total", (("outcome", "success"),))
CODE_TOKENS = ("campusid_tokens_issued_total", (("grant_type", "authorization_code"),))


def _figures(text: dict) -> dict:
    return {key: text.get(key, 0) for key in EXPECTED}


def test_two_workers_show_exactly_the_scripted_counts_and_log_json_without_secrets(env, tmp_path):
    server = start_server(env, "--workers", "2")
    try:
        assert wait_for(lambda: two_workers(server.proc.pid)), "two workers did not start"
        metrics_dir = list((tmp_path / "tmp").iterdir())
        assert len(metrics_dir) == 1 and metrics_dir[0].name.startswith("campusid-metrics-")
        assert oct(metrics_dir[0].stat().st_mode & 0o777) == "0o700"
        with httpx.Client(base_url=server.issuer, timeout=30) as c:
            seen = run_script(c, server.issuer, env["CLIENT_ID"], REDIRECT)
            # the figures are summed over both workers' files, whichever answers the scrape
            for _ in range(6):
                assert _figures(scrape(c, "/metrics")) == EXPECTED
            # a confidential client's flow: one more sign-in and one more code exchange
            seen.update(web_client_flow(c, server.issuer, env))
            expected = {**EXPECTED, SUCCESS: EXPECTED[SUCCESS] + 1, CODE_TOKENS: EXPECTED[CODE_TOKENS] + 1}
            assert _figures(scrape(c, "/metrics")) == expected
            r = c.get("/metrics")
            assert r.status_code == 401 and "campusid_" not in r.text
            victim = min(two_workers(server.proc.pid))
            os.kill(victim, signal.SIGKILL)
            assert wait_for(lambda: two_workers(server.proc.pid, without=victim)), "the worker was not replaced"
            # the killed worker's counts stay in the sum
            for _ in range(6):
                assert _figures(scrape(c, "/metrics")) == expected
            r = c.get("/readyz")
            assert r.status_code == 200 and r.json()["checks"] == {"database": "ok", "keys": "ok", "redis": "ok"}
        server.proc.send_signal(signal.SIGTERM)
        assert server.proc.wait(30) == 0
        stderr = server.proc.stderr.read()
    finally:
        server.stop()
    assert list((tmp_path / "tmp").iterdir()) == []  # serve removed its metrics directory
    lines = [line for line in stderr.splitlines() if line.strip()]
    records = [json.loads(line) for line in lines]  # every line is one JSON object
    for record in records:
        assert {"time", "level", "event", "request_id"} <= record.keys(), record
    requests = [r for r in records if r["event"] == "request"]
    assert len(requests) >= 15
    token_lines = [r for r in requests if r["route"] == "/oauth/token"]
    # the client where the request authenticated one; none for the wrong secret
    by_status = {(r["status"], r.get("client_id")) for r in token_lines}
    assert (200, env["CLIENT_ID"]) in by_status and (200, env["WEB_ID"]) in by_status
    assert (401, None) in by_status and (400, env["CLIENT_ID"]) in by_status  # the replay and the reuse
    assert all(r.get("client_id") for r in token_lines if r["status"] != 401)
    assert all(len(r["request_id"]) == 32 and r["method"] in ("GET", "POST") for r in requests)
    assert all({"status", "duration_ms"} <= r.keys() for r in requests)
    secrets = {
        **seen,
        "client_secret": env["WEB_SECRET"],
        "secret_key": env["CAMPUSID_SECRET_KEY"],
        "metrics_token": METRICS_TOKEN,
    }
    for name, value in secrets.items():
        assert value not in stderr, f"the {name} is in the log"


def test_a_short_metrics_token_is_a_clear_error_at_start(idp_env):
    proc = subprocess.run(
        [str(BIN / "campusid"), "serve", "--port", "1"],
        env={**idp_env, "CAMPUSID_METRICS_TOKEN": "too-short"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "CAMPUSID_METRICS_TOKEN must be at least 32 characters" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_one_worker_counts_in_memory_and_text_logs_have_no_request_lines(env, tmp_path):
    from tests.idp.web.metrics_scenario import password_attempt

    # one worker keeps its figures in memory: no file, not even in an inherited directory
    inherited = tmp_path / "inherited"
    inherited.mkdir()
    text_env = {**env, "CAMPUSID_LOG_FORMAT": "text", "PROMETHEUS_MULTIPROC_DIR": str(inherited)}
    server = start_server(text_env)
    try:
        with httpx.Client(base_url=server.issuer, timeout=30) as c:
            r = password_attempt(c, server.issuer, env["CLIENT_ID"], REDIRECT, "bob", "not the password")
            assert r.status_code == 401
            key = ("campusid_logins_total", (("outcome", "failure"),))
            assert scrape(c, "/metrics")[key] == 1
            assert c.get("/healthz").headers["x-request-id"]
        assert list((tmp_path / "tmp").iterdir()) == [] and list(inherited.iterdir()) == []
        server.proc.send_signal(signal.SIGTERM)
        assert server.proc.wait(30) == -signal.SIGTERM  # one worker ends by the signal, as before
        stderr = server.proc.stderr.read()
    finally:
        server.stop()
    assert list((tmp_path / "tmp").iterdir()) == []
    assert "campusid serving" in stderr and '"event"' not in stderr and "not the password" not in stderr
