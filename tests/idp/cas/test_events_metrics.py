"""Events (7.3) and metrics (7.2) of the CAS face, one test per item: cas_ticket_validated,
cas_ticket_rejected (detail: the code), cas_ticket_replay, cas_proxy_granted, login_success and
login_failure with the CAS app's client_id; campusid_cas_validations_total{endpoint, outcome},
campusid_cas_tickets_issued_total{kind}."""

from __future__ import annotations

import re

import pytest

from campusid.idp.cas.rules.tickets import new_ticket
from tests.idp.cas.helpers import cas_app, failure_code, service_ticket, sign_in, success, validate
from tests.idp.conftest import ISSUER, IdP
from tests.idp.helpers import form_fields

METRICS_TOKEN = "m" * 40


def events(idp, kind):
    return idp.db.events.list(type=kind, limit=20)


def test_cas_ticket_validated(idp, browser, portal):
    success(validate(browser, service_ticket(browser)).text)
    [event] = events(idp, "cas_ticket_validated")
    assert event.username == "alice" and event.client_id == "portal" and "p3/serviceValidate ST" in event.detail


def test_cas_ticket_rejected_names_the_code(idp, browser, portal):
    ticket = service_ticket(browser)
    assert failure_code(validate(browser, ticket, "https://portal.example.edu/portal/x").text) == "INVALID_SERVICE"
    assert failure_code(validate(browser, new_ticket("PT")).text) == "INVALID_TICKET_SPEC"
    details = sorted(e.detail for e in events(idp, "cas_ticket_rejected"))
    assert details == ["INVALID_SERVICE at p3/serviceValidate", "INVALID_TICKET_SPEC at p3/serviceValidate"]
    assert {e.client_id for e in events(idp, "cas_ticket_rejected") if "SERVICE" in e.detail} == {"portal"}


def test_cas_ticket_replay(idp, browser, portal):
    ticket = service_ticket(browser)
    success(validate(browser, ticket).text)
    validate(browser, ticket)
    [event] = events(idp, "cas_ticket_replay")
    assert event.client_id == "portal" and event.username == "alice"


def test_cas_proxy_granted(idp_env, tmp_path):
    from tests.idp.cas.tls import CallbackServer, make_ca_and_server

    ca, cert, key = make_ca_and_server(tmp_path / "pki")
    server = CallbackServer(cert, key)
    idp = IdP({**idp_env, "CAMPUSID_ISSUER": ISSUER, "CAMPUSID_CAS_PROXY_CA_FILE": str(ca)})
    try:
        cas_app(idp, "proxier", (server.url("/"),), grant_types=("cas_proxy",))
        with idp.client() as browser:
            service = server.url("/app")
            success(validate(browser, service_ticket(browser, service), service, pgtUrl=server.url("/cb")).text)
        [event] = events(idp, "cas_proxy_granted")
        assert event.client_id == "proxier" and event.username == "alice"
    finally:
        idp.store.close()
        server.close()


def test_login_success_carries_the_cas_client_id(idp, browser, portal):
    sign_in(browser)
    [event] = events(idp, "login_success")
    assert event.client_id == "portal" and event.username == "alice"


def test_login_failure_carries_the_cas_client_id(idp, browser, portal):
    r = browser.get("/cas/login?service=https://portal.example.edu/portal/")
    action, fields = form_fields(r.text, "login-form")
    browser.post(action, data={**fields, "username": "alice", "password": "not the password"})
    [event] = events(idp, "login_failure")
    assert event.client_id == "portal"


@pytest.fixture
def metered(idp_env):
    idp = IdP({**idp_env, "CAMPUSID_ISSUER": ISSUER, "CAMPUSID_METRICS_TOKEN": METRICS_TOKEN})
    cas_app(idp)
    yield idp
    idp.store.close()


def figure(client, name: str, **labels) -> float:
    text = client.get("/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}).text
    wanted = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in text.splitlines():
        match = re.fullmatch(rf"{name}\{{(.*)\}} (\S+)", line)
        if match and ",".join(sorted(match.group(1).split(","))) == wanted:
            return float(match.group(2))
    return 0.0


def test_cas_validations_total_by_endpoint_and_outcome(metered):
    with metered.client() as browser:
        name = "campusid_cas_validations_total"
        ok0 = figure(browser, name, endpoint="p3/serviceValidate", outcome="success")
        bad0 = figure(browser, name, endpoint="serviceValidate", outcome="INVALID_TICKET")
        req0 = figure(browser, name, endpoint="validate", outcome="INVALID_REQUEST")
        ticket = service_ticket(browser)
        success(validate(browser, ticket).text)
        validate(browser, ticket, endpoint="/cas/serviceValidate")
        browser.get("/cas/validate")
        assert figure(browser, name, endpoint="p3/serviceValidate", outcome="success") == ok0 + 1
        assert figure(browser, name, endpoint="serviceValidate", outcome="INVALID_TICKET") == bad0 + 1
        assert figure(browser, name, endpoint="validate", outcome="INVALID_REQUEST") == req0 + 1


def test_cas_tickets_issued_total_by_kind(metered):
    with metered.client() as browser:
        name = "campusid_cas_tickets_issued_total"
        before = figure(browser, name, kind="ST")
        service_ticket(browser)
        service_ticket(browser)
        assert figure(browser, name, kind="ST") == before + 2
