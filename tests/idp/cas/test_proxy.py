"""Proxy granting (docs/cas.md): pgtUrl https, PKIX-trusted (system CAs plus CAMPUSID_CAS_PROXY_CA_FILE),
one of the app's services, called back before the answer with pgtIou and pgtId; /proxy gives a PT;
/proxyValidate lists cas:proxies; the grant only for apps whose review granted cas_proxy."""

from __future__ import annotations

import pytest

from tests.idp.cas.helpers import NS, cas_app, failure_code, parse, service_ticket, success, validate
from tests.idp.cas.tls import CallbackServer, make_ca_and_server
from tests.idp.conftest import ISSUER, IdP


@pytest.fixture
def pki(tmp_path):
    return make_ca_and_server(tmp_path / "pki")


@pytest.fixture
def callback(pki):
    _, cert, key = pki
    server = CallbackServer(cert, key)
    yield server
    server.close()


@pytest.fixture
def proxy_idp(idp_env, pki, callback):
    idp = IdP({**idp_env, "CAMPUSID_ISSUER": ISSUER, "CAMPUSID_CAS_PROXY_CA_FILE": str(pki[0])})
    origin = callback.url("/")
    cas_app(idp, "proxier", (origin + "app", origin + "pgt"), grant_types=("cas_proxy",))
    cas_app(idp, "backend", ("https://backend.example.edu/api",))
    cas_app(idp, "plain", ("https://plain.example.edu/",))
    yield idp
    idp.store.close()


def pgt_of(callback, iou: str) -> str:
    [(path, params)] = [r for r in callback.received if r[1].get("pgtIou") == iou]
    assert path == "/pgt/cb" and params["pgtId"].startswith("PGT-")
    return params["pgtId"]


def test_the_whole_proxy_chain(proxy_idp, callback):
    idp = proxy_idp
    with idp.client() as browser:
        service = callback.url("/app/home")
        ticket = service_ticket(browser, service)
        r = validate(browser, ticket, service, pgtUrl=callback.url("/pgt/cb?keep=1"))
        node = parse(r.text).find("cas:authenticationSuccess/cas:proxyGrantingTicket", NS)
        assert node is not None, r.text
        iou = node.text
        assert iou.startswith("PGTIOU-")
        pgt = pgt_of(callback, iou)
        assert [p for _, p in callback.received][0]["keep"] == "1"  # its own query kept
        r = browser.get("/cas/proxy", params={"pgt": pgt, "targetService": "https://backend.example.edu/api/x"})
        pt = parse(r.text).find("cas:proxySuccess/cas:proxyTicket", NS).text
        assert pt.startswith("PT-")
        r = validate(browser, pt, "https://backend.example.edu/api/x", endpoint="/cas/p3/proxyValidate")
        user, _ = success(r.text)
        proxies = [p.text for p in parse(r.text).findall("cas:authenticationSuccess/cas:proxies/cas:proxy", NS)]
        assert user == "alice" and proxies == [callback.url("/pgt/cb?keep=1")]
        # a PT is refused at serviceValidate, and used once
        assert failure_code(validate(browser, pt, "https://backend.example.edu/api/x").text) == "INVALID_TICKET_SPEC"
        [granted] = idp.db.events.list(type="cas_proxy_granted", limit=5)
        assert granted.client_id == "proxier"
        # the PGT ends with the session
        browser.get("/cas/logout")
        r = browser.get("/cas/proxy", params={"pgt": pgt, "targetService": "https://backend.example.edu/api/x"})
        assert parse(r.text).find("cas:proxyFailure", NS).get("code") == "INVALID_TICKET"


def test_an_app_without_the_grant_gets_unauthorized_service_proxy(proxy_idp, callback):
    with proxy_idp.client() as browser:
        ticket = service_ticket(browser, "https://plain.example.edu/x")
        r = validate(browser, ticket, "https://plain.example.edu/x", pgtUrl=callback.url("/pgt/cb"))
        assert failure_code(r.text) == "UNAUTHORIZED_SERVICE_PROXY" and callback.received == []


@pytest.mark.parametrize(
    "pgt_url",
    [
        "http://127.0.0.1:{port}/pgt/cb",  # not https, even on loopback
        "https://127.0.0.1:{port}/other",  # not one of its services
        "https://localhost:{port}/pgt/cb",  # another origin than the registered one
        "https://127.0.0.1:{port}/pgt/../app",
    ],
)
def test_refused_callbacks_are_invalid_proxy_callback(proxy_idp, callback, pgt_url):
    with proxy_idp.client() as browser:
        service = callback.url("/app/x")
        ticket = service_ticket(browser, service)
        r = validate(browser, ticket, service, pgtUrl=pgt_url.format(port=callback.port))
        assert failure_code(r.text) == "INVALID_PROXY_CALLBACK" and callback.received == []


def test_a_callback_that_answers_non_200_grants_nothing(proxy_idp, callback):
    callback.status = 404
    with proxy_idp.client() as browser:
        service = callback.url("/app/x")
        ticket = service_ticket(browser, service)
        r = validate(browser, ticket, service, pgtUrl=callback.url("/pgt/cb"))
        assert failure_code(r.text) == "INVALID_PROXY_CALLBACK"
        pgt = callback.received[0][1]["pgtId"]
        r = browser.get("/cas/proxy", params={"pgt": pgt, "targetService": "https://backend.example.edu/api"})
        assert parse(r.text).find("cas:proxyFailure", NS).get("code") == "INVALID_TICKET"


def test_an_untrusted_certificate_is_refused(idp_env, callback, tmp_path):
    idp = IdP({**idp_env, "CAMPUSID_ISSUER": ISSUER})  # the system's CAs only
    try:
        cas_app(idp, "proxier", (callback.url("/"),), grant_types=("cas_proxy",))
        with idp.client() as browser:
            service = callback.url("/app")
            ticket = service_ticket(browser, service)
            r = validate(browser, ticket, service, pgtUrl=callback.url("/pgt/cb"))
            assert failure_code(r.text) == "INVALID_PROXY_CALLBACK" and callback.received == []
    finally:
        idp.store.close()


def test_proxy_refuses_unknown_pgts_and_unregistered_targets(proxy_idp, callback):
    with proxy_idp.client() as browser:
        r = browser.get("/cas/proxy", params={"pgt": "PGT-nothing", "targetService": "https://backend.example.edu/api"})
        assert parse(r.text).find("cas:proxyFailure", NS).get("code") == "INVALID_TICKET"
        r = browser.get("/cas/proxy", params={"pgt": "PGT-x"})
        assert parse(r.text).find("cas:proxyFailure", NS).get("code") == "INVALID_REQUEST"
        service = callback.url("/app/x")
        ticket = service_ticket(browser, service)
        validate(browser, ticket, service, pgtUrl=callback.url("/pgt/cb"))
        pgt = callback.received[0][1]["pgtId"]
        for target in ("https://evil.example.edu/", "https://backend.example.edu/apix", "javascript:x"):
            r = browser.get("/cas/proxy", params={"pgt": pgt, "targetService": target})
            assert parse(r.text).find("cas:proxyFailure", NS).get("code") == "UNAUTHORIZED_SERVICE"
