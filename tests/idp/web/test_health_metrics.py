"""/healthz, /readyz, /metrics and X-Request-ID in process (docs/operations.md, "Health, metrics
and logs"); the same against real `campusid serve` processes is in tests/e2e."""

from __future__ import annotations

import os
import re

import pytest

from campusid.idp.settings import SettingsError, load_settings
from tests.idp.conftest import ISSUER, NATIVE_REDIRECT, IdP
from tests.idp.helpers import auth_params, callback_params, code_exchange, login_through_pages, make_user
from tests.idp.web.metrics_scenario import EXPECTED, FAILED_LIMIT, METRICS_TOKEN, delta, run_script, samples, scrape


@pytest.fixture
def observed(idp_env):
    env = {
        **idp_env,
        "CAMPUSID_ISSUER": ISSUER,
        "CAMPUSID_METRICS_TOKEN": METRICS_TOKEN,
        "CAMPUSID_LIMIT_FAILED_PER_ACCOUNT": FAILED_LIMIT,
        "CAMPUSID_TRUSTED_PROXIES": "10.0.0.0/8",
    }
    instance = IdP(env)
    make_user(instance.store, "bob")
    yield instance
    instance.store.close()


def test_healthz_answers_ok(observed):
    r = observed.client().get("/healthz")
    assert r.status_code == 200 and r.json() == {"status": "ok"}
    assert r.headers["cache-control"] == "no-store"


def test_readyz_checks_database_keys_and_says_redis_is_not_configured(observed):
    r = observed.client().get("/readyz")
    assert r.status_code == 200, r.text
    assert r.json() == {"status": "ready", "checks": {"database": "ok", "keys": "ok", "redis": "not_configured"}}


def test_readyz_names_redis_when_it_cannot_be_reached(idp_env):
    idp = IdP({**idp_env, "CAMPUSID_ISSUER": ISSUER, "CAMPUSID_REDIS_URL": "redis://127.0.0.1:1/0"})
    try:
        r = idp.client().get("/readyz")
        assert r.status_code == 503, r.text
        body = r.json()
        assert body == {"status": "not_ready", "checks": {"database": "ok", "keys": "ok", "redis": "unreachable"}}
        assert "127.0.0.1" not in r.text and "6379" not in r.text  # a short reason, no address
    finally:
        idp.store.close()


def test_readyz_with_a_live_redis_says_ok(idp_env):
    idp = IdP({**idp_env, "CAMPUSID_ISSUER": ISSUER, "CAMPUSID_REDIS_URL": "redis://127.0.0.1:6379/0"})
    try:
        r = idp.client().get("/readyz")
        assert r.status_code == 200 and r.json()["checks"]["redis"] == "ok", r.text
    finally:
        idp.store.close()


def test_metrics_are_off_without_a_token(idp):
    r = idp.client().get("/metrics", headers={"Authorization": "Bearer " + METRICS_TOKEN})
    assert r.status_code == 404
    assert "campusid_" not in r.text


def test_without_a_token_nothing_is_collected(idp_env):
    """/metrics off: the same scripted sign-ins (events, tokens, a rate limit, requests) leave every
    figure of this process where it was (read from the module itself, as /metrics would show it)."""
    from campusid.idp import metrics

    instance = IdP({**idp_env, "CAMPUSID_ISSUER": ISSUER, "CAMPUSID_LIMIT_FAILED_PER_ACCOUNT": FAILED_LIMIT})
    try:
        make_user(instance.store, "bob")
        c = instance.client()
        before = samples(metrics.render().decode())
        run_script(c, instance.issuer, instance.native_id, NATIVE_REDIRECT)
        assert c.get("/metrics").status_code == 404
        after = samples(metrics.render().decode())
        assert len(instance.db.events.list(type="login_failure")) == 2  # the script did run
        assert after == before  # not one count, not one request's duration, not one new series
    finally:
        instance.store.close()


def test_the_bench_token_and_sso_rows_record_no_event(observed):
    """The requests of bench/run.py's token row (a code exchanged) and SSO row (authorize with a
    session, then the exchange) store no event: events are for sign-ins, replays, reuse and
    administration (idp/events.py), so "without events" costs these rows nothing to compare."""
    c = observed.client()
    flow = auth_params(observed.native_id, NATIVE_REDIRECT)
    cb = login_through_pages(c, observed.issuer, flow, "alice")  # the sign-in: its event
    stored = len(observed.db.events.list(limit=1000))
    r = c.post("/oauth/token", data=code_exchange(flow, cb["code"], NATIVE_REDIRECT, observed.native_id))
    assert r.status_code == 200
    for _ in range(3):
        again = auth_params(observed.native_id, NATIVE_REDIRECT)
        sso = c.get("/oauth/authorize", params=again.params)
        assert sso.status_code in (302, 303)
        code = callback_params(sso.headers["location"])["code"]
        r = c.post("/oauth/token", data=code_exchange(again, code, NATIVE_REDIRECT, observed.native_id))
        assert r.status_code == 200
    assert len(observed.db.events.list(limit=1000)) == stored


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer " + "x" * len(METRICS_TOKEN)},
        {"Authorization": "Bearer " + METRICS_TOKEN[:-1]},
        {"Authorization": "Bearer " + METRICS_TOKEN + "x"},
        {"Authorization": "bearer " + METRICS_TOKEN},
        {"Authorization": "Bearer  " + METRICS_TOKEN},
        {"Authorization": "Basic " + METRICS_TOKEN},
        {"Authorization": METRICS_TOKEN},
        {"Authorization": "Bearer"},
        {"Authorization": ("Bearer " + "é" * 40).encode()},
        {"Authorization": "Bearer " + "a" * 100_000},
    ],
)
def test_metrics_without_the_right_bearer_token_are_401_and_never_the_figures(observed, headers):
    r = observed.client().get("/metrics", headers=headers)
    assert r.status_code == 401, r.status_code
    assert r.headers["www-authenticate"].startswith("Bearer")
    assert "campusid_" not in r.text


def test_metrics_token_in_the_query_or_twice_is_refused(observed):
    c = observed.client()
    assert c.get("/metrics", params={"access_token": METRICS_TOKEN}).status_code == 401
    twice = [("Authorization", "Bearer " + METRICS_TOKEN), ("Authorization", "Bearer " + METRICS_TOKEN)]
    r = c.get("/metrics", headers=twice)
    assert r.status_code == 401 and "campusid_" not in r.text


def test_metrics_bytes_that_are_not_utf8_are_401(observed):
    r = observed.client().get("/metrics", headers=[(b"Authorization", b"Bearer \xff\xfe" + b"a" * 40)])
    assert r.status_code == 401


def test_a_scripted_set_of_sign_ins_shows_exactly_its_counts(observed):
    c = observed.client()
    before = scrape(c, "/metrics")
    run_script(c, observed.issuer, observed.native_id, NATIVE_REDIRECT)
    after = scrape(c, "/metrics")
    assert delta(after, before) == EXPECTED
    # the stored events say the same
    counts = {
        t: len(observed.db.events.list(type=t, limit=100)) for t in ("login_success", "login_failure", "login_limited")
    }
    assert counts == {"login_success": 1, "login_failure": 2, "login_limited": 1}
    assert (
        len(observed.db.events.list(type="code_replay")) == 1
        and len(observed.db.events.list(type="refresh_reuse")) == 1
    )
    limited = observed.db.events.list(type="login_limited")[0]
    assert limited.username == "bob" and limited.detail == "failed_per_account"


def test_request_durations_are_labelled_by_route_template_never_the_raw_path(observed):
    c = observed.client()
    c.get("/api/v1/apps/some-client-id-123")  # a templated route (401 without a token)
    c.get("/no/such/path/secret-looking-value")
    c.request("BREW", "/healthz")
    c.get("/healthz")
    text = c.get("/metrics", headers={"Authorization": "Bearer " + METRICS_TOKEN}).text
    assert "some-client-id-123" not in text and "secret-looking-value" not in text and "BREW" not in text
    figures = samples(text)
    routes = {dict(labels)["route"] for name, labels in figures if name.startswith("campusid_http_request_duration")}
    assert "/api/v1/apps/{client_id}" in routes and "unmatched" in routes and "/healthz" in routes
    methods = {
        dict(labels)["method"] for name, labels in figures if name == "campusid_http_request_duration_seconds_count"
    }
    assert "other" in methods and methods <= {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "other"}
    hot = (
        "campusid_http_request_duration_seconds_count",
        (("method", "GET"), ("route", "/healthz"), ("status", "200")),
    )
    assert figures[hot] >= 1


HEX_ID = re.compile(r"[0-9a-f]{32}")


def test_every_response_carries_a_generated_request_id(observed):
    c = observed.client()
    seen = set()
    for path in ("/healthz", "/oauth/jwks", "/no/such/page", "/.well-known/openid-configuration"):
        r = c.get(path)
        assert HEX_ID.fullmatch(r.headers["x-request-id"]), r.headers.get("x-request-id")
        seen.add(r.headers["x-request-id"])
    assert len(seen) == 4
    r = c.post("/oauth/token", data={"grant_type": "authorization_code"})  # a hot route, 401
    assert HEX_ID.fullmatch(r.headers["x-request-id"])


def test_a_request_id_from_someone_else_is_not_taken(observed):
    r = observed.client().get("/healthz", headers={"X-Request-ID": "abc-123"})  # testclient: not a proxy
    assert r.headers["x-request-id"] != "abc-123" and HEX_ID.fullmatch(r.headers["x-request-id"])


def _via_proxy(observed, value):
    from starlette.testclient import TestClient

    with TestClient(observed.app, base_url=observed.issuer, client=("10.1.2.3", 5000)) as c:
        return c.get("/healthz", headers=[(b"X-Request-ID", value)] if value is not None else [])


def test_a_trusted_proxy_s_sane_request_id_is_kept(observed):
    assert _via_proxy(observed, b"lb-7f3a.2026:11-25_x").headers["x-request-id"] == "lb-7f3a.2026:11-25_x"


@pytest.mark.parametrize(
    "value",
    [b"a" * 10_240, b"abc\x00def", b"abc\r\ndef", b"abc\x1bdef", b"", b"\xff\xfe", b"a b", b"<script>", b"-x"],
)
def test_a_trusted_proxy_s_hostile_request_id_is_replaced(observed, value):
    r = _via_proxy(observed, value)
    assert r.status_code == 200
    assert HEX_ID.fullmatch(r.headers["x-request-id"]), r.headers["x-request-id"][:80]


def test_settings_refuse_a_short_metrics_token_and_an_unknown_log_format(idp_env):
    with pytest.raises(SettingsError, match="CAMPUSID_METRICS_TOKEN must be at least 32"):
        load_settings({**idp_env, "CAMPUSID_METRICS_TOKEN": "short"})
    with pytest.raises(SettingsError, match="CAMPUSID_LOG_FORMAT"):
        load_settings({**idp_env, "CAMPUSID_LOG_FORMAT": "xml"})
    cfg = load_settings({**idp_env, "CAMPUSID_LOG_FORMAT": "JSON", "CAMPUSID_METRICS_TOKEN": METRICS_TOKEN})
    assert cfg.log_format == "json" and cfg.metrics_token == METRICS_TOKEN


def _limited(figures: dict, limit: str) -> float:
    return figures.get(("campusid_rate_limited_total", (("limit", limit),)), 0)


def test_a_device_code_redemption_counts_under_its_grant_type(observed):
    from campusid.idp.oidc.rules.device_grant import GRANT_TYPE
    from tests.idp.device_helpers import decide, device_app, poll, start
    from tests.idp.helpers import Clock

    observed.ctx.clock = clock = Clock()
    device_app(observed, "bot")
    c = observed.client()
    key = ("campusid_tokens_issued_total", (("grant_type", GRANT_TYPE),))
    before = scrape(c, "/metrics").get(key, 0)
    started = start(c, "bot").json()
    assert poll(c, "bot", started["device_code"]).json()["error"] == "authorization_pending"  # not counted
    assert 'data-outcome="allowed"' in decide(c, observed.issuer, started["user_code"]).text
    clock.advance(10)
    assert poll(c, "bot", started["device_code"]).status_code == 200
    clock.advance(10)
    assert poll(c, "bot", started["device_code"]).status_code == 400  # redeemed once: not counted again
    assert scrape(c, "/metrics")[key] - before == 1


def test_each_limit_counts_under_its_own_name(idp_env):
    from tests.idp.web.metrics_scenario import password_attempt

    env = {
        **idp_env,
        "CAMPUSID_ISSUER": ISSUER,
        "CAMPUSID_METRICS_TOKEN": METRICS_TOKEN,
        "CAMPUSID_LIMIT_ATTEMPTS_PER_IP": "2/15 minutes",
        "CAMPUSID_LIMIT_TOKEN_PER_CLIENT": "1/minute",
    }
    idp = IdP(env)
    try:
        c = idp.client()
        before = scrape(c, "/metrics")
        for _ in range(2):
            assert password_attempt(c, idp.issuer, idp.native_id, NATIVE_REDIRECT, "alice", "wrong").status_code == 401
        assert password_attempt(c, idp.issuer, idp.native_id, NATIVE_REDIRECT, "alice", "wrong").status_code == 429
        form = {"grant_type": "refresh_token", "refresh_token": "x" * 43}
        web = (idp.web_id, idp.web_secret)
        assert c.post("/oauth/token", data=form, auth=web).status_code == 400  # within the limit
        r = c.post("/oauth/token", data=form, auth=web)
        assert r.status_code == 429 and r.json()["error"] == "slow_down"
        after = scrape(c, "/metrics")
        assert _limited(after, "attempts_per_ip") - _limited(before, "attempts_per_ip") == 1
        assert _limited(after, "token_per_client") - _limited(before, "token_per_client") == 1
        assert _limited(after, "failed_per_account") == _limited(before, "failed_per_account")
        limited = observed_events(idp, "login_limited")
        assert [(e.username, e.detail) for e in limited] == [("alice", "attempts_per_ip")]
    finally:
        idp.store.close()


def observed_events(idp, kind: str):
    return idp.db.events.list(type=kind, limit=100)


def test_the_device_authorization_endpoint_applies_and_counts_the_client_limit(idp_env):
    from tests.idp.device_helpers import device_app, start

    env = {
        **idp_env,
        "CAMPUSID_ISSUER": ISSUER,
        "CAMPUSID_METRICS_TOKEN": METRICS_TOKEN,
        "CAMPUSID_LIMIT_TOKEN_PER_CLIENT": "1/minute",
    }
    idp = IdP(env)
    try:
        device_app(idp, "bot")
        c = idp.client()
        before = _limited(scrape(c, "/metrics"), "token_per_client")
        assert start(c, "bot").status_code == 200
        r = start(c, "bot")
        assert r.json()["error"] == "slow_down", r.text
        assert _limited(scrape(c, "/metrics"), "token_per_client") - before == 1
    finally:
        idp.store.close()


def test_a_worker_marks_workers_that_died_as_dead_and_keeps_their_counts(tmp_path):
    """prometheus-client's multiprocess mode: a starting worker marks the files of dead workers
    (their live gauges go; their counters stay in the sum)."""
    import subprocess
    import sys

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    for name in (f"gauge_liveall_{dead.pid}.db", f"gauge_livesum_{dead.pid}.db", f"counter_{dead.pid}.db"):
        (tmp_path / name).write_bytes(b"")
    code = "from campusid.idp import metrics; metrics.worker_started(); metrics.LOGINS.labels(outcome='success').inc()"
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=60)
    names = {p.name for p in tmp_path.iterdir()}
    assert f"gauge_liveall_{dead.pid}.db" not in names and f"gauge_livesum_{dead.pid}.db" not in names
    assert f"counter_{dead.pid}.db" in names and any(n.startswith("counter_") and str(dead.pid) not in n for n in names)
