"""`campusid events list`: newest first, each filter, --json, and bad input answered with a clear
message and a non-zero exit, never a traceback."""

from __future__ import annotations

import json

import pytest

from campusid.idp import events as ev
from campusid.idp.events import Events
from campusid.idp.settings import load_settings
from campusid.idp.store import open_store
from tests.conftest import run_cli
from tests.idp.helpers import run

T0 = 1_800_000_000  # 2027-01-15T08:00:00Z


@pytest.fixture
def recorded(idp_env):
    settings = load_settings(idp_env)
    store = open_store(settings.database_url, settings.data_dir)
    clock = [T0]
    recorder = Events(store, clock=lambda: clock[0])
    calls = [
        (T0, ev.LOGIN_FAILURE, {"username": "alice", "ip": "198.51.100.7", "detail": "wrong password"}),
        (T0 + 60, ev.LOGIN_SUCCESS, {"username": "alice", "client_id": "web-app", "ip": "198.51.100.7"}),
        (T0 + 3600, ev.LOGIN_SUCCESS, {"username": "bob", "client_id": "native-app"}),
        (T0 + 7200, ev.REFRESH_REUSE, {"username": "alice", "client_id": "native-app", "detail": "family revoked"}),
    ]

    async def go():
        for at, kind, kw in calls:
            clock[0] = at
            await recorder.record(kind, **kw)

    try:
        run(store, go())
    finally:
        store.close()
    return idp_env


def listed(env, *args) -> list[dict]:
    return json.loads(run_cli(env, "events", "list", "--json", *args).stdout)["events"]


def test_events_list_prints_every_field_newest_first(recorded):
    events = listed(recorded)
    assert [e["type"] for e in events] == ["refresh_reuse", "login_success", "login_success", "login_failure"]
    assert events[-1] == {
        "id": events[-1]["id"],
        "time": "2027-01-15T08:00:00Z",
        "type": "login_failure",
        "username": "alice",
        "client_id": None,
        "ip": "198.51.100.7",
        "detail": "wrong password",
    }
    human = run_cli(recorded, "events", "list").stdout
    assert "refresh_reuse" in human and "198.51.100.7" in human


def test_events_list_filters(recorded):
    assert [e["detail"] for e in listed(recorded, "--user", "alice", "--type", "refresh_reuse")] == ["family revoked"]
    assert {e["username"] for e in listed(recorded, "--client", "native-app")} == {"alice", "bob"}
    assert len(listed(recorded, "--since", "2027-01-15T09:00:00Z")) == 2
    assert len(listed(recorded, "--since", "2027-01-15T17:00:00+08:00")) == 2  # the same instant
    assert len(listed(recorded, "--type", "login_success")) == 2
    page = listed(recorded, "--limit", "2")
    rest = listed(recorded, "--limit", "2", "--before", str(page[-1]["id"]))
    assert [e["id"] for e in page + rest] == [e["id"] for e in listed(recorded)]
    assert listed(recorded, "--user", "nobody") == []
    # (argv cannot carry a NUL; every other character is searched for, and long values are clipped
    # to the column's size as they were when recorded)
    assert listed(recorded, "--user", "al\x01ice' OR '1'='1", "--client", "é" * 5000) == []


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--since", "yesterday"], "RFC 3339"),
        (["--since", "2027-01-15T08:00:00"], "RFC 3339"),  # no offset: not RFC 3339 (5.6)
        (["--since", "2027-02-30T08:00:00Z"], "RFC 3339"),
        (["--limit", "-1"], "--limit"),
        (["--limit", "0"], "--limit"),
        (["--limit", "100000000000000000000000"], "--limit"),
        (["--limit", "ten"], "limit"),
        (["--type", "nope"], "not an event type"),
        (["--before", "-3"], "--before"),
    ],
)
def test_events_list_refuses_bad_input_clearly(recorded, args, says):
    for json_flag in ([], ["--json"]):
        proc = run_cli(recorded, "events", "list", *args, *json_flag, check=False)
        assert proc.returncode != 0 and says in proc.stderr and "Traceback" not in proc.stderr
        assert proc.stdout == ""
