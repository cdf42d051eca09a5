"""End to end: `campusid serve --workers 2` on the suite's database (PostgreSQL in its PostgreSQL
pass) and a Redis of the test's own, stopped and started again. While Redis is stopped a password
sign-in answers 503; once the same Redis answers again on the same port (with none of its old
connections and none of its loaded scripts), the very first sign-in on each worker succeeds: no
worker hands a request a connection Redis closed, or answers from a remembered outage.

Which worker served a sign-in is read from /proc: the worker holding the accepted end of the
browser's TCP connection, so the test knows it reached both instead of hoping it did."""

from __future__ import annotations

import os
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from tests.conftest import active_app, add_users, free_port, start_server
from tests.e2e.test_e2e_serve_workers import two_workers, wait_for
from tests.idp.helpers import PASSWORD, auth_params, callback_params, form_fields
from tests.services import Redis

pytestmark = pytest.mark.e2e
REDIRECT = "http://127.0.0.1:41999/callback"
MIN_SIGN_INS = 6  # at least this many in a row, each in a new browser (a new TCP connection)
MAX_SIGN_INS = 40  # and more until every worker has served one (the kernel picks the worker)


def _accepted(server_port: int) -> dict[str, int]:
    """Socket inode -> the browser's port, for each established connection to `server_port`
    (the server's end: loopback connections are listed once per end)."""
    found = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, remote, state, inode = fields[1], fields[2], fields[3], fields[9]
            if state == "01" and int(local.rsplit(":", 1)[1], 16) == server_port:  # 01: ESTABLISHED
                found[inode] = int(remote.rsplit(":", 1)[1], 16)
    return found


def _sockets(pid: int) -> set[str]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue  # closed meanwhile
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    return inodes


def serving_worker(workers: set[int], server_port: int, browser_port: int) -> int:
    """The worker holding the server's end of the browser's connection from `browser_port`."""
    accepted = {inode for inode, peer in _accepted(server_port).items() if peer == browser_port}
    owners = [pid for pid in workers if _sockets(pid) & accepted]
    assert len(owners) == 1, (owners, accepted)
    return owners[0]


def sign_in(issuer: str, client_id: str, workers: set[int], only_on: int | None = None):
    """A password sign-in through the pages in a new browser: the worker that served it, the
    answer to the login form, and the app's callback parameters when the sign-in ended there.
    With `only_on`, a browser another worker got leaves after the login page (which asks Redis
    nothing): (that worker, None, None)."""
    origin = f"{urlsplit(issuer).scheme}://{urlsplit(issuer).netloc}"
    flow = auth_params(client_id, REDIRECT, scope="openid")
    # one connection per browser, kept for all its requests: the same worker serves them all
    with httpx.Client(timeout=30, limits=httpx.Limits(max_connections=1)) as browser:
        page = browser.get(f"{issuer}/oauth/authorize", params=flow.params, follow_redirects=True)
        assert page.status_code == 200, page.text[:300]
        browser_port = page.extensions["network_stream"].get_extra_info("client_addr")[1]
        worker = serving_worker(workers, urlsplit(issuer).port, browser_port)
        if only_on is not None and worker != only_on:
            return worker, None, None
        action, fields = form_fields(page.text, "login-form")
        answer = r = browser.post(origin + action, data={**fields, "username": "alice", "password": PASSWORD})
        for _ in range(6):
            if r.status_code == 200 and 'id="consent-form"' in r.text:
                action, fields = form_fields(r.text, "consent-form")
                r = browser.post(origin + action, data={**fields, "decision": "allow"})
            elif r.status_code in (302, 303) and r.headers["location"].startswith(REDIRECT):
                params = callback_params(r.headers["location"])
                return worker, answer, params if params.get("state") == flow.params["state"] else None
            elif r.status_code in (302, 303):
                location = r.headers["location"]
                r = browser.get(origin + location if location.startswith("/") else location)
            else:
                break
    return worker, answer, None


def wait_for_ping(redis: Redis, seconds: float = 30.0) -> None:
    """Until this Redis answers PING (and no longer: the sign-ins follow at once)."""
    import redis as redis_py

    client = redis_py.Redis(port=redis.port, socket_connect_timeout=1, socket_timeout=1)
    deadline = time.monotonic() + seconds
    try:
        while True:
            try:
                if client.ping():
                    return
            except redis_py.RedisError:
                assert time.monotonic() < deadline, f"Redis on {redis.port} does not answer PING"
                time.sleep(0.01)
    finally:
        client.close()


def test_the_first_sign_in_on_every_worker_succeeds_once_redis_is_back(idp_env):
    """During the outage only one worker is asked to sign someone in: it learns that Redis is
    gone, while the other still holds the pooled connection Redis closed. Once Redis answers
    PING again, neither may answer 503: not the first from a remembered outage, not the second
    from that dead connection."""
    pytest.importorskip("redis")
    redis = Redis()
    try:
        add_users(idp_env, PASSWORD, ("alice", "student"), ("dev", "developer"), ("admin", "admin"))
        client_id = active_app(idp_env, "native", "native", "http://127.0.0.1/callback", "openid")["client_id"]
        port = free_port()
        env = {**idp_env, "CAMPUSID_ISSUER": f"http://127.0.0.1:{port}", "CAMPUSID_REDIS_URL": redis.url}
        server = start_server(env, "--workers", "2", port=port)
        try:
            issuer = server.issuer
            workers = wait_for(lambda: two_workers(server.proc.pid))
            assert workers, "expected two workers"

            def sign_ins_on_every_worker(when: str) -> None:
                seen, done = set(), []
                while len(done) < MAX_SIGN_INS and (len(done) < MIN_SIGN_INS or seen != workers):
                    worker, answer, callback = sign_in(issuer, client_id, workers)
                    seen.add(worker)
                    done.append((worker, answer.status_code))
                    assert answer.status_code == 303 and callback and callback.get("code"), (
                        f"sign-in {len(done)} {when}, on worker {worker}: {answer.status_code} "
                        f"{answer.text[:200]}; so far {done}"
                    )
                assert seen == workers, f"only workers {seen} of {workers} served {len(done)} sign-ins"

            sign_ins_on_every_worker("while Redis is up")  # each worker now has a pooled connection
            redis.stop()
            refused = []
            told = min(workers)  # the one worker asked to sign someone in during the outage
            for _ in range(MAX_SIGN_INS):
                worker, answer, _callback = sign_in(issuer, client_id, workers, only_on=told)
                if answer is None:
                    continue  # the other worker: it served the login page only
                assert answer.status_code == 503, (answer.status_code, answer.text[:300])
                assert 1 <= int(answer.headers["retry-after"]) <= 60
                assert "Sign-in is temporarily unavailable" in answer.text
                refused.append(worker)
                if len(refused) == 3:
                    break
            assert refused == [told] * 3, refused
            redis.start()
            wait_for_ping(redis)
            sign_ins_on_every_worker("after Redis answered PING again")
            assert server.proc.poll() is None  # the same processes all along
        finally:
            server.stop()
        log = server.proc.stderr.read()
        assert "Traceback" not in log, log[-3000:]
    finally:
        redis.stop()
