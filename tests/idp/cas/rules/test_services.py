"""The service rule (docs/cas.md): no regular expressions, a segment-boundary path prefix, scheme and
host case-insensitive with IDN to ASCII, default ports explicit, the query ignored; refusals."""

from __future__ import annotations

import pytest

from campusid.idp.cas.registration import CASRegistration
from campusid.idp.cas.rules.services import (
    ServiceRefused,
    best_match,
    canonical,
    matches_any,
    parse_service,
    path_matches,
    registration_problem,
)


def matches(requested: str, registered: str) -> bool:
    return matches_any(parse_service(requested), [canonical(registered)])


@pytest.mark.parametrize(
    "requested",
    ["https://app.example.edu/portal", "https://app.example.edu/portal/", "https://app.example.edu/portal/x/y"],
)
def test_the_path_continues_at_a_segment_boundary(requested):
    assert matches(requested, "https://app.example.edu/portal")


@pytest.mark.parametrize(
    "requested",
    ["https://app.example.edu/portalx", "https://app.example.edu/portal.php", "https://app.example.edu/Portal"],
)
def test_never_inside_a_segment_nor_in_another_case(requested):
    assert not matches(requested, "https://app.example.edu/portal")


def test_a_registered_path_with_a_trailing_slash_needs_it():
    assert matches("https://app.example.edu/portal/x", "https://app.example.edu/portal/")
    assert not matches("https://app.example.edu/portal", "https://app.example.edu/portal/")
    assert path_matches("/", "/") and path_matches("/anything", "/")


def test_scheme_and_host_are_case_insensitive_and_the_query_is_ignored():
    assert matches("HTTPS://App.Example.EDU/portal?next=/a&x=1", "https://app.example.edu/portal")


def test_an_idn_host_matches_its_ascii_form_both_ways():
    assert matches("https://xn--fiqs8s.example.edu/app", "https://中国.example.edu/app")
    assert matches("https://中国.example.edu/app/x", "https://xn--fiqs8s.example.edu/app")
    assert canonical("https://中国.example.edu/app") == "https://xn--fiqs8s.example.edu/app"


def test_default_ports_are_made_explicit():
    assert matches("https://app.example.edu:443/portal", "https://app.example.edu/portal")
    assert matches("https://app.example.edu/portal", "https://app.example.edu:443/portal")
    assert not matches("https://app.example.edu:8443/portal", "https://app.example.edu/portal")
    assert matches("http://127.0.0.1:80/x", "http://127.0.0.1/x")


def test_another_host_or_scheme_never_matches():
    assert not matches("https://app.example.edu.evil.com/portal", "https://app.example.edu/portal")
    assert not matches("https://evil.com/portal", "https://app.example.edu/portal")
    assert not matches("http://127.0.0.1/portal", "https://127.0.0.1/portal")


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("https://user:pw@app.example.edu/portal", "user information"),
        ("https://app.example.edu@evil.com/portal", "user information"),
        ("https://app.example.edu/portal#frag", "fragment"),
        ("https://app.example.edu/a/../portal", "'.' or '..'"),
        ("https://app.example.edu/a/%2e%2E/portal", "'.' or '..'"),
        ("https://app.example.edu/./portal", "'.' or '..'"),
        ("https://app.example.edu/%2e/portal", "'.' or '..'"),
        ("https://app.example.edu/" + "a" * 2048, "2048"),
        ("ftp://app.example.edu/portal", "http(s)"),
        ("javascript:alert(1)", "http(s)"),
        ("//app.example.edu/portal", "http(s)"),
        ("/portal", "http(s)"),
        ("http://app.example.edu/portal", "https is required"),
        ("https://app.example.edu\\@evil.com/", "backslash"),
        ("https://app.example.edu/por tal", "spaces"),
        ("https://app.example.edu/portal\r\nX: y", "control"),
        ("https:///portal", "host"),
        ("", "empty"),
    ],
)
def test_what_can_never_be_a_service(value, why):
    with pytest.raises(ServiceRefused, match=why.replace("(", r"\(").replace(")", r"\)")):
        parse_service(value)


def test_http_only_on_loopback():
    for ok in ("http://127.0.0.1:8080/x", "http://localhost/x", "http://[::1]:9000/x"):
        assert parse_service(ok).scheme == "http"


def test_registered_services_have_no_query_nor_wildcard():
    assert "query" in registration_problem("https://app.example.edu/portal?x=1")
    assert "wildcard" in registration_problem("https://app.example.edu/*")
    assert registration_problem("https://app.example.edu/portal") is None


def test_the_registration_keeps_the_canonical_form_each_once():
    registered = CASRegistration().check(
        "cas",
        services=["HTTPS://App.Example.edu:443/portal", "https://app.example.edu/portal", "https://b.example.edu"],
    )
    assert registered["services"] == ["https://app.example.edu/portal", "https://b.example.edu/"]


def test_the_most_specific_registered_path_wins_and_a_tie_belongs_to_nobody():
    service = parse_service("https://app.example.edu/portal/admin/x")
    assert best_match(service, [("/portal", "wide"), ("/portal/admin", "narrow")]) == "narrow"
    assert best_match(service, [("/portal/admin", "one"), ("/portal/admin", "two")]) is None
    assert best_match(service, [("/other", "x")]) is None
