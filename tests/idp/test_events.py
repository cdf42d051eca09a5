"""Security events: recorded by one call, listed newest first with filters, a page at a time."""

from __future__ import annotations

import pytest

from campusid.idp import events as ev
from campusid.idp.events import Events
from tests.idp.helpers import Clock, run


@pytest.fixture
def recorder(idp):
    return Events(idp.store, clock=Clock(START))


def record(idp, recorder, *calls):
    async def go():
        for kind, kw in calls:
            await recorder.record(kind, **kw)

    run(idp.store, go())


START = 1_800_000_000  # the recorder's clock: before it, only what the fixture's setup recorded


def listing(idp, **filters):
    """The events this test recorded (the fixture's own, its apps' review steps, come before START)."""
    filters.setdefault("since", START)
    return run(idp.store, idp.store.events.list(**filters))


def test_events_are_listed_newest_first_with_every_field(idp, recorder):
    record(
        idp,
        recorder,
        (ev.LOGIN_FAILURE, {"username": "alice", "ip": "198.51.100.7", "detail": "wrong password"}),
        (ev.LOGIN_SUCCESS, {"username": "alice", "client_id": "web-app", "ip": "198.51.100.7"}),
    )
    listed = listing(idp)
    assert [e.type for e in listed] == [ev.LOGIN_SUCCESS, ev.LOGIN_FAILURE]
    newest = listed[0]
    expected = ("alice", "web-app", "198.51.100.7", 1_800_000_000)
    assert (newest.username, newest.client_id, newest.ip, newest.at) == expected
    assert listed[1].detail == "wrong password" and listed[0].id > listed[1].id


def test_each_filter_and_their_combination_select_exactly_the_matching_events(idp, recorder):
    clock = recorder.clock
    calls = []
    for i, (user, client, kind) in enumerate(
        [("alice", "web-app", ev.LOGIN_SUCCESS), ("bob", "web-app", ev.LOGIN_FAILURE), ("alice", None, ev.LOGOUT)] * 3
    ):
        calls.append((kind, {"username": user, "client_id": client, "detail": str(i)}))
    for kind, kw in calls:
        clock.now += 60
        record(idp, recorder, (kind, kw))
    assert {e.username for e in listing(idp, username="alice")} == {"alice"}
    assert len(listing(idp, username="alice")) == 6
    assert len(listing(idp, client_id="web-app")) == 6
    assert len(listing(idp, type=ev.LOGOUT)) == 3
    both = listing(idp, username="alice", client_id="web-app", type=ev.LOGIN_SUCCESS)
    assert len(both) == 3 and all(e.type == ev.LOGIN_SUCCESS and e.client_id == "web-app" for e in both)
    recent = listing(idp, since=1_800_000_000 + 7 * 60)
    assert [e.detail for e in recent] == ["8", "7", "6"]
    assert listing(idp, username="nobody") == []


def test_pages_follow_each_other_by_id_without_gaps_or_repeats(idp, recorder):
    record(idp, recorder, *[(ev.LOGIN_SUCCESS, {"username": f"u{i}"}) for i in range(25)])
    seen, before = [], None
    while True:
        page = listing(idp, limit=10, before_id=before)
        if not page:
            break
        assert len(page) <= 10
        seen += [e.username for e in page]
        before = page[-1].id
    assert seen == [f"u{i}" for i in reversed(range(25))]


def test_hostile_values_are_clipped_to_their_columns_and_unknown_types_refused(idp, recorder):
    record(idp, recorder, (ev.LOGIN_FAILURE, {"username": "a" * 10_000, "client_id": "c" * 500, "detail": "d" * 9_000}))
    (event,) = listing(idp)
    assert len(event.username) == 64 and len(event.client_id) == 64 and len(event.detail) == ev.MAX_DETAIL
    with pytest.raises(ValueError, match="unknown event type"):
        record(idp, recorder, ("password_was_hunter2", {}))
    assert len(listing(idp)) == 1
