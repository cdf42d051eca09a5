"""Bad input on every CAS endpoint (docs/cas.md): duplicated, oversized, non-UTF-8 and hostile values
answer the protocol's error — INVALID_REQUEST (or the code the checks reach) in a 200 body on the
validation and proxy endpoints, the HTML 400 page on /cas/login and /cas/logout — never a 500, a
traceback or a redirect to what was sent."""

from __future__ import annotations

import pytest

from tests.idp.cas.helpers import NS, SERVICE, failure_code, parse, service_ticket

VALIDATION = [
    "/cas/validate",
    "/cas/serviceValidate",
    "/cas/p3/serviceValidate",
    "/cas/proxyValidate",
    "/cas/p3/proxyValidate",
]
PAGES = ["/cas/login", "/cas/logout"]

HOSTILE_QUERIES = [
    b"service=a&service=b&ticket=ST-1",
    b"service=https%3A%2F%2Fportal.example.edu%2Fportal%2F&ticket=ST-1&ticket=ST-2",
    b"service=" + b"x" * 5000 + b"&ticket=ST-1",
    b"service=https%3A%2F%2Fportal.example.edu%2F&ticket=ST-" + b"A" * 300,
    b"service=%ff%fe&ticket=ST-1",
    b"service=%C0%AF&ticket=%ED%A0%80",
    b"service=a%00b&ticket=ST-1",
    b"service=&ticket=",
    b"%ff=1&service=a&ticket=ST-1",
    b"service=a&ticket=ST-1&format=<xml>",
    b"service=a&ticket=ST-1&pgtUrl=" + b"p" * 3000,
    b"service=javascript%3Aalert(1)&ticket=ST-1",
    b"service=https%3A%2F%2Fportal.example.edu%2Fportal%2F%3Cscript%3E%26%22&ticket=%3C%2Fcas%3Auser%3E",
    b"&&&=&=&&service",
    b"a=" + b"&a=".join([b"1"] * 100),
]


def _codes(text: str) -> str:
    if text.startswith(("yes", "no")):
        return text
    node = parse(text)
    failure = node.find("cas:authenticationFailure", NS)
    assert failure is not None and failure.get("code"), text
    return failure.get("code")


@pytest.mark.parametrize("endpoint", VALIDATION)
def test_validation_endpoints_answer_a_cas_failure(idp, browser, portal, endpoint):
    for query in HOSTILE_QUERIES:
        r = browser.get(endpoint + "?" + query.decode("latin-1"))
        assert r.status_code == 200, query
        if endpoint == "/cas/validate":
            assert r.text == "no\n\n"
        else:
            assert _codes(r.text) in ("INVALID_REQUEST", "INVALID_TICKET_SPEC", "INVALID_TICKET"), query


@pytest.mark.parametrize("endpoint", VALIDATION)
def test_an_oversized_or_odd_post_is_invalid_request(idp, browser, portal, endpoint):
    r = browser.post(
        endpoint, content=b"service=" + b"a" * 70000, headers={"content-type": "application/x-www-form-urlencoded"}
    )
    assert r.status_code == 200 and (r.text == "no\n\n" or _codes(r.text) == "INVALID_REQUEST")
    r = browser.post(endpoint, content=b"\xff\xfe\x00", headers={"content-type": "text/plain"})
    assert r.status_code == 200 and (r.text == "no\n\n" or _codes(r.text) == "INVALID_REQUEST")


def test_proxy_answers_a_proxy_failure(idp, browser, portal):
    for query in HOSTILE_QUERIES:
        raw = query.decode("latin-1").replace("service", "targetService").replace("ticket", "pgt")
        r = browser.get("/cas/proxy?" + raw)
        assert r.status_code == 200
        node = parse(r.text).find("cas:proxyFailure", NS)
        assert node is not None and node.get("code") in ("INVALID_REQUEST", "INVALID_TICKET", "UNAUTHORIZED_SERVICE")


@pytest.mark.parametrize("endpoint", PAGES)
def test_login_and_logout_answer_an_html_page_and_never_redirect(idp, browser, portal, endpoint):
    for query in HOSTILE_QUERIES:
        r = browser.get(endpoint + "?" + query.decode("latin-1"))
        if "location" in r.headers:  # odd characters in the path of a registered service: still only there
            assert r.status_code == 302 and r.headers["location"].startswith("https://portal.example.edu/portal/")
            continue
        assert r.status_code in (200, 400), query
        assert r.headers["content-type"].startswith("text/html") and "Traceback" not in r.text


@pytest.mark.parametrize("endpoint", PAGES)
@pytest.mark.parametrize("signed_in", [False, True])
def test_hostile_services_on_the_pages(idp, browser, portal, endpoint, signed_in):
    if signed_in:
        service_ticket(browser)
    for service in (
        "https://portal.example.edu.evil.com/portal",
        "https://portal.example.edu%2F@evil.com/portal",
        "https://evil.com\\@portal.example.edu/portal",
        "https://portal.example.edu/portal/%2E%2E/x",
        "https://portal.example.edu:99999/portal",
        "https://[::1/portal",
        "data:text/html,<script>",
        SERVICE + "\r\nSet-Cookie: x=y",
    ):
        r = browser.get(endpoint, params={"service": service, "gateway": "true"})
        assert r.status_code == 400 and "location" not in r.headers, (service, r.status_code)


def test_methods_the_endpoints_do_not_take(idp, browser, portal):
    assert browser.post("/cas/login", data={"service": SERVICE}).status_code == 405
    assert browser.delete("/cas/p3/serviceValidate").status_code == 405


def test_xml_special_characters_in_a_ticket_are_escaped_back(idp, browser, portal):
    r = browser.get("/cas/p3/serviceValidate", params={"service": SERVICE, "ticket": 'ST-<a href="x">&'})
    assert failure_code(r.text) == "INVALID_TICKET"
    assert "<a href" not in r.text
