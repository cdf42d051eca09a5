"""A CAS service ticket validated twenty times at once across the two workers of `campusid serve
--workers 2` (on PostgreSQL with CAMPUSID_DATABASE_URL set, the production shape; else the two
workers share the WAL-mode SQLite file): exactly one validation succeeds, every other answers
INVALID_TICKET, and a single `cas_ticket_validated` event is written."""

from __future__ import annotations

import json
import threading
import xml.etree.ElementTree as ET
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from tests.conftest import add_users, run_cli, start_server
from tests.idp.helpers import PASSWORD, form_fields

pytestmark = pytest.mark.e2e
SERVICE = "https://portal.example.edu/portal/"
NS = {"cas": "http://www.yale.edu/tp/cas"}


def test_twenty_concurrent_validations_across_two_workers_have_one_winner(idp_env):
    add_users(idp_env, PASSWORD, ("alice", "student"), ("dev", "developer"), ("admin", "admin"))
    create = ["apps", "create", "--name", "Portal", "--type", "cas", "--service", SERVICE, "--owner", "dev"]
    run_cli(idp_env, *create, "--client-id", "portal")
    for step in (["submit"], ["approve", "--by", "admin"], ["activate"]):
        run_cli(idp_env, "apps", step[0], "portal", *step[1:])
    server = start_server(idp_env, "--workers", "2")
    try:
        base = server.issuer
        with httpx.Client(base_url=base) as browser:
            r = browser.get("/cas/login", params={"service": SERVICE})
            action, fields = form_fields(r.text, "login-form")
            r = browser.post(action, data={**fields, "username": "alice", "password": PASSWORD})
            [ticket] = parse_qs(urlsplit(r.headers["location"]).query)["ticket"]
        barrier = threading.Barrier(20)
        outcomes: list[str] = []
        lock = threading.Lock()

        def validate() -> None:
            with httpx.Client(base_url=base) as c:  # a connection of its own: spread over the workers
                barrier.wait()
                r = c.get("/cas/p3/serviceValidate", params={"service": SERVICE, "ticket": ticket}, timeout=30)
            root = ET.fromstring(r.text)
            failure = root.find("cas:authenticationFailure", NS)
            with lock:
                outcomes.append(failure.get("code") if failure is not None else root.find(".//cas:user", NS).text)

        threads = [threading.Thread(target=validate) for _ in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(outcomes) == ["INVALID_TICKET"] * 19 + ["alice"]
    finally:
        server.stop()
    events = json.loads(run_cli(idp_env, "events", "list", "--type", "cas_ticket_validated", "--json").stdout)
    assert len(events["events"]) == 1
    replays = json.loads(run_cli(idp_env, "events", "list", "--type", "cas_ticket_replay", "--json").stdout)
    assert len(replays["events"]) == 19
