"""The console's Events page: admins only, newest first, filters by user, app, type and time,
keyset paging, English and Simplified Chinese, and hostile filter values answered with a message."""

from __future__ import annotations

import re

import pytest

from campusid.i18n import translator
from campusid.idp import events as ev
from campusid.idp.events import Events
from tests.idp.helpers import Clock, run
from tests.portal.helpers import XSS, XSS_ESCAPED, sign_in

T0 = 1_800_000_000  # 2027-01-15T08:00:00Z


def record(console, *calls) -> None:
    clock = Clock(T0)
    recorder = Events(console.store, clock=clock)

    async def go():
        for at, kind, kw in calls:
            clock.now = at
            await recorder.record(kind, **kw)

    run(console.store, go())


def shown_ids(page: str) -> list[int]:
    return [int(i) for i in re.findall(r'data-event-id="(\d+)"', page)]


def details(page: str) -> list[str]:
    return re.findall(r"<td>([^<]*)</td>\s*</tr>", page)


@pytest.fixture
def admin(console):
    return sign_in(console, "admin", "/admin")


def test_only_admins_see_events(console):
    assert console.client().get("/admin/events").headers["location"] == "/login?next=/admin/events"
    assert sign_in(console, "dev", "/admin").get("/admin/events").status_code == 403


def test_events_newest_first_and_each_filter(console, admin):
    record(
        console,
        (T0, ev.LOGIN_FAILURE, {"username": "alice", "ip": "198.51.100.7", "detail": "first"}),
        (T0 + 60, ev.LOGIN_SUCCESS, {"username": "alice", "client_id": "web-app", "detail": "second"}),
        (T0 + 3600, ev.LOGIN_SUCCESS, {"username": "bob", "client_id": "native-app", "detail": "third"}),
        (T0 + 7200, ev.CONSENT_REVOKED, {"username": "alice", "client_id": "native-app", "detail": "fourth"}),
    )
    page = admin.get("/admin/events").text
    assert details(page)[:4] == ["fourth", "third", "second", "first"]
    assert "198.51.100.7" in page and translator("en").datetime(T0) in page and 'href="/admin/events"' in page
    assert details(admin.get("/admin/events", params={"user": "alice"}).text) == ["fourth", "second", "first"]
    # (the app's review steps when the fixture made it are events of it too, before T0)
    of_app = {"client": "native-app", "since": "2027-01-15T08:00"}
    assert details(admin.get("/admin/events", params=of_app).text) == ["fourth", "third"]
    # (the admin's own sign-in is a login_success too, recorded now, before T0: the bound leaves it out)
    since_t0 = {"type": "login_success", "since": "2027-01-15T08:00"}
    assert details(admin.get("/admin/events", params=since_t0).text) == ["third", "second"]
    # since: a datetime-local value, read as UTC
    assert details(admin.get("/admin/events", params={"since": "2027-01-15T09:00"}).text) == ["fourth", "third"]
    both = {"user": "alice", "type": "login_success", "since": "2027-01-15T08:01"}
    assert details(admin.get("/admin/events", params=both).text) == ["second"]
    none = admin.get("/admin/events", params={"user": "nobody"})
    assert none.status_code == 200 and 'id="events-none"' in none.text


def test_events_page_by_page_with_the_filters_kept(console, admin):
    record(console, *((T0 + i, ev.LOGIN_FAILURE, {"username": "alice", "detail": f"n{i}"}) for i in range(120)))
    record(console, (T0 + 500, ev.LOGOUT, {"username": "bob", "detail": "other"}))
    seen: list[int] = []
    url = "/admin/events?user=alice"
    pages = 0
    while url:
        page = admin.get(url).text
        ids = shown_ids(page)
        assert 0 < len(ids) <= 50 and ids == sorted(ids, reverse=True)
        seen += ids
        pages += 1
        found = re.search(r'id="events-older" href="([^"]+)"', page)
        url = found.group(1).replace("&amp;", "&") if found else None
        if url:
            assert "user=alice" in url and "before=" in url
    assert pages == 3 and len(seen) == 120 == len(set(seen))
    assert 'id="events-newest"' in admin.get(f"/admin/events?before={seen[49]}").text


def test_events_page_in_simplified_chinese(console):
    client = sign_in(console, "admin", "/admin", **{"Accept-Language": "zh-CN"})
    page = client.get("/admin/events", params={"user": "nobody"}).text
    assert "安全事件" in page and "筛选" in page and "没有符合条件的事件。" in page


@pytest.mark.parametrize(
    "params",
    [
        {"type": "nope"},
        {"type": "login_success' OR 1=1 --"},
        {"since": "yesterday"},
        {"since": "99999-01-01T00:00"},
        {"since": "2027-02-30T00:00"},
        {"before": "-5"},
        {"before": "1e9"},
        {"before": "9" * 40},
        {"before": "١٢"},  # digits, but not ASCII ones
        {"user": "ali\x00ce"},
        {"client": "\x00"},
    ],
)
def test_hostile_filters_get_a_message_not_a_500(console, admin, params):
    r = admin.get("/admin/events", params=params)
    assert r.status_code == 400 and 'id="events-problem"' in r.text
    assert "data-event-id" not in r.text


def test_filter_values_are_escaped_and_long_ones_harmless(console, admin):
    record(console, (T0, ev.LOGIN_FAILURE, {"username": XSS, "detail": XSS}))
    page = admin.get("/admin/events", params={"user": XSS}).text
    assert XSS_ESCAPED in page and "<script>alert(1)" not in page
    assert len(shown_ids(page)) == 1
    r = admin.get("/admin/events", params={"user": "x" * 100_00, "client": "é" * 500, "since": "2027-01-15"})
    assert r.status_code == 200 and 'id="events-none"' in r.text
