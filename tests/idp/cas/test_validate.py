"""The validation endpoints (docs/cas.md): single use (any attempt, failed ones included), replay,
INVALID_SERVICE consuming the ticket, renew, an app no longer active, attributes exactly by granted
scope (XML-special characters escaped), JSON, CAS 1.0 text, 2.0 and p3 alike."""

from __future__ import annotations

import json
import time

import pytest

from campusid.idp.cas.rules.tickets import new_ticket
from tests.idp.cas.helpers import cas_app, failure_code, service_ticket, success, validate
from tests.idp.helpers import make_user

ENDPOINTS = ["/cas/serviceValidate", "/cas/p3/serviceValidate", "/cas/proxyValidate", "/cas/p3/proxyValidate"]


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_each_endpoint_validates_once_with_the_same_attributes(idp, browser, portal, endpoint):
    ticket = service_ticket(browser)
    user, attrs = success(validate(browser, ticket, endpoint=endpoint).text)
    assert user == "alice" and attrs["displayName"] == ["Alice Zhang"] and "authenticationDate" in attrs
    assert failure_code(validate(browser, ticket, endpoint=endpoint).text) == "INVALID_TICKET"


def test_a_second_validation_is_a_replay_event(idp, browser, portal):
    ticket = service_ticket(browser)
    success(validate(browser, ticket).text)
    assert failure_code(validate(browser, ticket).text) == "INVALID_TICKET"
    [replay] = idp.db.events.list(type="cas_ticket_replay", limit=5)
    assert replay.username == "alice" and replay.client_id == "portal"


def test_a_wrong_service_is_invalid_service_and_uses_the_ticket(idp, browser, portal):
    ticket = service_ticket(browser)
    assert failure_code(validate(browser, ticket, "https://portal.example.edu/portal/other").text) == "INVALID_SERVICE"
    assert failure_code(validate(browser, ticket).text) == "INVALID_TICKET"


def test_invalid_request_consumes_nothing(idp, browser, portal):
    ticket = service_ticket(browser)
    r = browser.get(f"/cas/p3/serviceValidate?ticket={ticket}")  # no service
    assert failure_code(r.text) == "INVALID_REQUEST"
    r = browser.get(f"/cas/p3/serviceValidate?ticket={ticket}&service=x&service=y")
    assert failure_code(r.text) == "INVALID_REQUEST"
    assert success(validate(browser, ticket).text)[0] == "alice"


def test_an_unknown_or_expired_ticket_is_invalid_ticket(idp, browser, portal):
    assert failure_code(validate(browser, new_ticket("ST")).text) == "INVALID_TICKET"
    ticket = service_ticket(browser)
    later = time.time() + 61
    import campusid.idp.cas.validate as v

    real = v.time.time
    v.time.time = lambda: later
    try:
        assert failure_code(validate(browser, ticket).text) == "INVALID_TICKET"
    finally:
        v.time.time = real


def test_renew_accepts_only_a_ticket_from_a_new_login(idp, browser, portal):
    service_ticket(browser)  # the session
    ticket = service_ticket(browser)  # from the session: not a new login
    assert failure_code(validate(browser, ticket, renew="true").text) == "INVALID_TICKET"


def test_a_suspended_apps_tickets_die_with_it(idp, browser, portal):
    ticket = service_ticket(browser)
    idp.apps.suspend("portal", by="admin")
    idp.apps.reinstate("portal", by="admin")
    assert failure_code(validate(browser, ticket).text) == "INVALID_TICKET"


def test_a_proxy_ticket_is_refused_at_service_validate(idp, browser, portal):
    assert failure_code(validate(browser, new_ticket("PT")).text) == "INVALID_TICKET_SPEC"
    assert failure_code(validate(browser, new_ticket("PGT"), endpoint="/cas/p3/proxyValidate").text) == (
        "INVALID_TICKET_SPEC"
    )


def test_json_answers(idp, browser, portal):
    ticket = service_ticket(browser)
    r = validate(browser, ticket, format="json")
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    body = json.loads(r.text)["serviceResponse"]["authenticationSuccess"]
    assert body["user"] == "alice" and body["attributes"]["displayName"] == ["Alice Zhang"]
    assert body["attributes"]["isFromNewLogin"] == [True]
    bad = json.loads(validate(browser, ticket, format="JSON").text)
    assert bad["serviceResponse"]["authenticationFailure"]["code"] == "INVALID_TICKET"


def test_cas1_validate_is_text(idp, browser, portal):
    ticket = service_ticket(browser)
    r = validate(browser, ticket, endpoint="/cas/validate")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain") and r.text == "yes\nalice\n"
    assert validate(browser, ticket, endpoint="/cas/validate").text == "no\n\n"
    assert validate(browser, new_ticket("PT"), endpoint="/cas/validate").text == "no\n\n"


def test_attributes_exactly_by_granted_scope(idp, browser):
    make_user(idp.store, "bob", student_number="2024002", name="Bob <\"&'> Li")
    cas_app(idp, "lib", ("https://lib.example.edu/",), scopes=("profile", "email", "student_number"))
    cas_app(idp, "bare", ("https://bare.example.edu/",), scopes=())
    from tests.idp.cas.helpers import sign_in, ticket_of

    r = sign_in(browser, "https://lib.example.edu/x", username="bob")
    r = validate(browser, ticket_of(r.headers["location"]), "https://lib.example.edu/x")
    assert "<cas:displayName>Bob &lt;&quot;&amp;&apos;&gt; Li</cas:displayName>" in r.text
    user, attrs = success(r.text)
    assert user == "bob" and attrs["displayName"] == ["Bob <\"&'> Li"] and attrs["studentNumber"] == ["2024002"]
    assert "mail" not in attrs and "givenName" not in attrs  # bob has none: nothing empty is sent
    r = browser.get("/cas/login?service=https://bare.example.edu/")
    user, attrs = success(validate(browser, ticket_of(r.headers["location"]), "https://bare.example.edu/").text)
    assert set(attrs) == {"authenticationDate", "isFromNewLogin", "longTermAuthenticationRequestTokenUsed"}


def test_student_number_only_when_the_review_granted_it(idp, browser):
    from tests.idp.cas.helpers import ticket_of
    from tests.idp.helpers import run

    async def go():
        apps = idp.ctx.apps
        await apps.create(
            name="x",
            app_type="cas",
            services=["https://x.example.edu/"],
            scopes=["profile", "student_number"],
            owner="dev",
            client_id="xapp",
            justifications={"student_number": "the library card"},
        )
        await apps.submit("xapp")
        await apps.approve("xapp", by="admin", grant_scopes=[])  # no sensitive scope granted
        await apps.activate("xapp")

    run(idp.store, go())
    service_ticket(browser, "https://x.example.edu/a")
    r = browser.get("/cas/login?service=https://x.example.edu/a")
    _, attrs = success(validate(browser, ticket_of(r.headers["location"]), "https://x.example.edu/a").text)
    assert "studentNumber" not in attrs and attrs["displayName"] == ["Alice Zhang"]


def test_the_store_keeps_only_the_hash(idp, browser, portal):
    from campusid.idp.cas.rules.tickets import ticket_hash

    ticket = service_ticket(browser)
    row = idp.db.cas.find(ticket_hash(ticket))
    assert row is not None and row.id_hash != ticket and ticket not in repr(row)


def test_two_concurrent_validations_succeed_exactly_once(idp, browser, portal):
    import asyncio

    from campusid.idp.cas.rules.tickets import ticket_hash
    from tests.idp.helpers import run

    ticket = service_ticket(browser)

    async def race():
        return await asyncio.gather(*(idp.store.cas.consume(ticket_hash(ticket), int(time.time())) for _ in range(8)))

    won = [r for r in run(idp.store, race()) if r is not None]
    assert len(won) == 1 and won[0].person.username == "alice"
