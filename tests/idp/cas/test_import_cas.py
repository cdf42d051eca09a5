"""`campusid apps import-cas` (docs/cas.md): the sample Apereo registry of examples/cas-registry, twelve
definitions of the kinds universities write, imported as drafts or refused with the reason per file;
and the serviceId patterns one by one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from campusid.idp.cas.apereo_import import Refused, prefix_of, read_definition
from tests.conftest import add_users, run_cli

REGISTRY = Path(__file__).resolve().parents[3] / "examples" / "cas-registry"


def test_the_sample_registry_imports_six_drafts_and_refuses_six_with_reasons(idp_env):
    add_users(idp_env, "correct horse battery staple", ("admin", "admin"))
    files = sorted(str(p) for p in REGISTRY.glob("*.json"))
    assert len(files) == 12
    result = json.loads(run_cli(idp_env, "apps", "import-cas", *files, "--json").stdout)
    assert result["counts"] == {"imported": 6, "refused": 6}
    imported = {Path(i["file"]).name: i for i in result["imported"]}
    assert {name: (i["services"], i["scopes"], i["grant_types"]) for name, i in imported.items()} == {
        "Library-10000001.json": (["https://library.example.edu/"], ["profile", "email", "student_number"], []),
        "CourseLMS-10000002.json": (["https://lms.example.edu/"], ["profile", "email"], []),
        "Portal-10000003.json": (["https://portal.example.edu/cas/login"], ["profile", "email"], []),
        "Wiki-10000004.json": (["https://wiki.example.edu:8443/confluence/"], ["profile", "email"], []),
        "MyApps-10000005.json": (["https://myapps.example.edu/"], ["profile"], ["cas_proxy"]),
        "CampusCard-10000006.json": (["https://card.example.edu/login"], [], []),
    }
    assert {i["state"] for i in imported.values()} == {"draft"}  # nothing activated without review
    assert any("eduPersonAffiliation" in n for n in imported["CourseLMS-10000002.json"]["notes"])
    reasons = {Path(r["file"]).name: r["reason"] for r in result["refused"]}
    assert reasons == {
        "AllDepartments-10000007.json": "the host is a wildcard (.* or *): a prefix must name one host",
        "OfficeAutomation-10000008.json": "the host has an alternation or group: register each host's address instead",
        "Mail-10000009.json": "the host has an unescaped '.', which matches any character (write \\.)",
        "AcademicAffairs-10000010.json": (
            "the service 'http://jwc.example.edu/' uses http on a host that is not loopback (https is required)"
        ),
        "HTTPSandIMAPS-10000001.json": "the serviceId does not begin with a literal https:// (or http://) scheme",
        "Shibboleth-10000012.json": "SamlRegisteredService is not a CAS RegexRegisteredService",
    }
    shown = json.loads(run_cli(idp_env, "apps", "show", "cas-10000005", "--json").stdout)
    assert shown["type"] == "cas" and shown["owner"] == "admin" and shown["grant_types"] == ["cas_proxy"]
    again = json.loads(run_cli(idp_env, "apps", "import-cas", str(REGISTRY / "Library-10000001.json"), "--json").stdout)
    assert again["counts"] == {"imported": 0, "refused": 1} and "exists" in again["refused"][0]["reason"]


@pytest.mark.parametrize(
    ("pattern", "prefix"),
    [
        (r"^https://app\.example\.edu/.*", "https://app.example.edu/"),
        (r"^https://app\.example\.edu(/.*)?", "https://app.example.edu/"),
        (r"^https://app\.example\.edu/portal/.*$", "https://app.example.edu/portal/"),
        (r"^https?://app\.example\.edu/x.+", "https://app.example.edu/x"),
        (r"^https://app\.example\.edu:8443/a\-b/c\.php(\?.*)?$", "https://app.example.edu:8443/a-b/c.php"),
        (r"^https:\/\/app\.example\.edu\/x\/.*", "https://app.example.edu/x/"),
        ("https://app.example.edu/login", "https://app.example.edu/login"),
    ],
)
def test_plain_prefixes(pattern, prefix):
    assert prefix_of(pattern) == prefix


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        (r"^https://.*\.example\.edu/.*", "wildcard"),
        (r"^https://.+/.*", "wildcard"),
        (r"^https://(a|b)\.example\.edu/.*", "alternation"),
        (r"^https://app\.example\.edu/(a|b)/.*", "group"),
        (r"^https://app[0-9]\.example\.edu/.*", "character class"),
        (r"^https://app\.example\.edu/\d+/.*", "character class"),
        (r"^https://app\.example\.edu/a.*/b", "unescaped"),
        (r"^https://app.example.edu/.*", "unescaped"),
        (r"^(https|http)://app\.example\.edu/.*", "scheme"),
        (r".*", "scheme"),
        (r"", "empty"),
    ],
)
def test_what_cannot_be_a_safe_prefix(pattern, why):
    with pytest.raises(Refused, match=why):
        prefix_of(pattern)


def test_not_json_or_not_a_cas_service():
    for text in ("{", "[]", '{"@class": "x.OidcRegisteredService", "serviceId": "https://a/"}', '{"@class": "x"}'):
        with pytest.raises(Refused):
            read_definition(text)
