"""CAS single logout (docs/cas.md, delivered as docs/logout.md): every way a session ends (/cas/logout,
/logout, the account page, disabling the user, suspending the app) POSTs `logoutRequest` — a SAML
2.0 samlp:LogoutRequest naming the user and the validated ticket — to each validated ticket's
service; retried on the schedule, each failure a `logout_delivery_failed` event; the page never
waits. /cas/logout redirects only to a registered service."""

from __future__ import annotations

import time
import xml.etree.ElementTree as ET

import pytest

from campusid.idp import accounts
from campusid.idp.cas.services import cas
from campusid.idp.logout_delivery import ATTEMPTS, RETRY_DELAYS
from tests.idp.cas.helpers import cas_app, service_ticket, success, validate
from tests.idp.helpers import form_fields, run
from tests.idp.oidc.logout_helpers import Receiver

SAMLP = {"samlp": "urn:oasis:names:tc:SAML:2.0:protocol", "saml": "urn:oasis:names:tc:SAML:2.0:assertion"}


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


@pytest.fixture
def apps(idp, receiver):
    cas_app(idp, "one", (receiver.url("/one"),))
    cas_app(idp, "two", (receiver.url("/two"),))
    cas_app(idp, "quiet", ("https://quiet.example.edu/",))  # gets a ticket, never validates it


def drain(idp, now: int | None = None) -> int:
    sender = cas(idp.ctx).slo

    async def once():
        try:
            return await sender.drain_once(now)
        finally:
            await sender.close()

    return run(idp.store, once())


def signed_in_everywhere(idp, browser, receiver) -> dict[str, str]:
    """A ticket validated at each of the two apps (two at `one`), one unvalidated at `quiet`."""
    tickets = {}
    for name, path in (("one", "/one/a"), ("two", "/two/b"), ("one-again", "/one/c")):
        service = receiver.url(path)
        ticket = service_ticket(browser, service)
        assert success(validate(browser, ticket, service).text)[0] == "alice"
        tickets[name] = ticket
    service_ticket(browser, "https://quiet.example.edu/x")
    return tickets


def received_requests(receiver) -> dict[str, tuple[str, str]]:
    """{SessionIndex: (path, NameID)} of the logout requests the apps received."""
    out = {}
    for path, fields in receiver.received:
        root = ET.fromstring(fields["logoutRequest"])
        assert root.tag == "{urn:oasis:names:tc:SAML:2.0:protocol}LogoutRequest" and root.get("Version") == "2.0"
        assert root.get("ID") and root.get("IssueInstant")
        out[root.find("samlp:SessionIndex", SAMLP).text] = (path, root.find("saml:NameID", SAMLP).text)
    return out


def test_cas_logout_tells_each_validated_ticket_once_and_redirects_to_a_registered_service(
    idp, browser, receiver, apps
):
    tickets = signed_in_everywhere(idp, browser, receiver)
    r = browser.get("/cas/logout", params={"service": receiver.url("/one/bye"), "url": "https://evil.example/"})
    assert r.status_code == 302 and r.headers["location"] == receiver.url("/one/bye")
    receiver.wait_for(3)  # the browser's app runs its lifespan: the woken sender delivers them
    assert received_requests(receiver) == {
        tickets["one"]: ("/one/a", "alice"),
        tickets["two"]: ("/two/b", "alice"),
        tickets["one-again"]: ("/one/c", "alice"),
    }
    deadline = time.monotonic() + 5  # the sender marks each notice delivered once its POST is answered
    while idp.db.notices.pending() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert idp.db.notices.pending() == []
    assert browser.get("/cas/login?service=" + receiver.url("/one/a")).status_code == 200  # signed out


def test_cas_logout_without_or_with_a_refused_service(idp, browser, receiver, apps):
    service_ticket(browser, receiver.url("/one/a"))
    r = browser.get("/cas/logout")
    assert r.status_code == 200 and 'id="signed-out"' in r.text
    service_ticket(browser, receiver.url("/one/a"))
    r = browser.get("/cas/logout", params={"service": "https://evil.example.edu/"})
    assert r.status_code == 400 and "location" not in r.headers
    assert browser.get("/cas/login?service=" + receiver.url("/one/a")).status_code == 200  # signed out all the same


@pytest.fixture
def delivered(receiver):
    """The browser's app runs its lifespan, whose sender delivers the notices: wait for `n`."""
    return receiver.wait_for


def test_the_oidc_logout_page_tells_cas_apps_too(idp, browser, receiver, apps, delivered):
    tickets = signed_in_everywhere(idp, browser, receiver)
    action, fields = form_fields(browser.get("/logout").text, "logout-form")
    assert browser.post(action, data=fields).status_code == 200
    delivered(len(tickets))
    assert set(received_requests(receiver)) == set(tickets.values())


def test_disabling_the_user_tells_every_session(idp, browser, receiver, apps, delivered):
    tickets = signed_in_everywhere(idp, browser, receiver)
    run(idp.store, accounts.disable(idp.store, idp.ctx.events, "alice", by="admin", now=int(time.time())))
    delivered(len(tickets))
    assert set(received_requests(receiver)) == set(tickets.values())


def test_ending_a_session_from_the_account_page(idp, browser, receiver, apps, delivered):
    tickets = signed_in_everywhere(idp, browser, receiver)
    other = idp.client()
    from tests.idp.mfa_helpers import local_sign_in

    r = local_sign_in(other, "alice", "/account")
    action, fields = form_fields(r.text, "signout-others")
    other.post(action, data=fields)
    delivered(len(tickets))
    assert set(received_requests(receiver)) == set(tickets.values())


def test_suspending_an_app_tells_only_that_app(idp, browser, receiver, apps, delivered):
    tickets = signed_in_everywhere(idp, browser, receiver)
    idp.apps.suspend("two", by="admin")
    delivered(1)
    time.sleep(0.3)  # a notice to another app would arrive now; none may
    assert received_requests(receiver) == {tickets["two"]: ("/two/b", "alice")}


def test_an_app_that_is_down_is_retried_on_the_schedule_then_given_up(idp, receiver, apps):
    receiver.status = 503
    browser = idp.client()  # no lifespan: no sender of its own, the test drains with its clock
    service = receiver.url("/one/a")
    success(validate(browser, service_ticket(browser, service), service).text)
    browser.get("/cas/logout")
    t = int(time.time())
    for attempt in range(1, ATTEMPTS + 1):
        assert drain(idp, t) == 1
        assert drain(idp, t) == 0  # nothing due again before its time
        if attempt < ATTEMPTS:
            t += RETRY_DELAYS[attempt - 1]
    failures = idp.db.events.list(type="logout_delivery_failed", limit=10)
    assert len(failures) == ATTEMPTS and {e.client_id for e in failures} == {"one"}
    assert "given up" in failures[0].detail and "HTTP 503" in failures[0].detail
    assert idp.db.notices.pending() == [] and len(idp.db.notices.given_up()) == 1


def test_the_notice_keeps_the_ticket_sealed(idp, browser, receiver, apps):
    service = receiver.url("/one/a")
    ticket = service_ticket(browser, service)
    success(validate(browser, ticket, service).text)
    [record] = idp.db.cas.validations_of_session(idp.student.id, idp.db.cas.find(_hash(ticket)).sid)
    assert ticket not in record.ticket_sealed


def _hash(ticket):
    from campusid.idp.cas.rules.tickets import ticket_hash

    return ticket_hash(ticket)
