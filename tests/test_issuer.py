"""The one issuer canonicalisation (campusid.issuer), as the IdP and the relying-party library apply it.

Both sides used to have their own copy, and they differed: the client kept an ASCII host as it was
(so it accepted hosts that UTS 46 / IDNA 2008 refuse, and invalid ``xn--`` labels), and it kept
``.`` and ``..`` path segments that the IdP refused. The cases below are those where they differed,
plus the ones neither handled (a line break that urlsplit silently dropped, a space or a Unicode
character in the path, a bracketed host that is no IPv6 address, un-normalised percent-encoding).
Each one is checked on both sides, so that they cannot drift apart again.
"""

from __future__ import annotations

import pytest

from campusid.idp.issuer import IssuerError as IdPIssuerError
from campusid.idp.issuer import canonical_issuer as idp_issuer
from campusid.issuer import Issuer, IssuerError, parse_issuer
from campusid.oidc_client import canonical_issuer as client_issuer


@pytest.mark.parametrize(
    ("configured", "canonical"),
    [
        ("HTTPS://Login.Example.EDU:443/idp/", "https://login.example.edu/idp"),
        ("https://XN--BCHER-KVA.example", "https://xn--bcher-kva.example"),
        ("https://bücher.example", "https://xn--bcher-kva.example"),
        ("https://ＥＸＡＭＰＬＥ.edu", "https://example.edu"),
        ("https://straße.de", "https://xn--strae-oqa.de"),  # UTS 46 non-transitional: IDNA 2008 keeps ß
        ("http://LOCALHOST:8000//", "http://localhost:8000"),
        ("http://127.0.0.1:80", "http://127.0.0.1"),
        ("http://[0:0:0:0:0:0:0:1]:8000", "http://[::1]:8000"),  # RFC 5952 text form
        ("https://[2001:DB8::1]", "https://[2001:db8::1]"),
        ("https://idp.example/%7euser/%2f/", "https://idp.example/~user/%2F"),  # RFC 3986 6.2.2.1-2
        ("  https://idp.example/tenant  ", "https://idp.example/tenant"),
    ],
)
def test_both_sides_give_the_same_canonical_issuer(configured: str, canonical: str) -> None:
    assert idp_issuer(configured).canonical == canonical
    assert client_issuer(configured) == canonical


@pytest.mark.parametrize(
    ("configured", "hint"),
    [
        # Refused by the IdP, accepted as they were by the client before: UTS 46 validates every
        # label, ASCII and xn-- ones included (UTS 46 section 4.1, RFC 5891 section 5.4).
        ("https://bad_label.example", "host"),
        ("https://a..example", "host"),
        ("https://-leading.example.edu", "host"),
        ("https://ab--cd.example", "host"),
        ("https://xn--zz.example", "host"),
        ("https://xn--a.example", "host"),
        ("https://" + "a" * 64 + ".example", "host"),
        ("https://idp.example\\tenant", "host"),
        # Refused by the IdP, kept by the client before: dot segments, also percent-encoded.
        ("https://idp.example/a/../b", "'..'"),
        ("https://idp.example/./", "'.'"),
        ("https://idp.example/%2E%2e", "'..'"),
        # Accepted by both before.
        ("https://idp.exa\nmple", "control"),
        ("https://idp.example/\ttenant", "control"),
        ("https://idp.example/a b", "spaces"),
        ("https://idp.example/登录", "percent-encode"),
        ("https://idp.example/a\\b", "percent-encode"),
        ("https://idp.example/%zz", "percent-encode"),
        ("https://[v1.x]", "IPv6"),
        ("https://[fe80::1%25eth0]", "zone"),
        # Refused by both before, and still.
        ("http://idp.example", "https"),
        ("http://localhost.:8000", "https"),
        ("https://idp.example?", "query"),
        ("https://idp.example/#", "fragment"),
        ("https://user@idp.example", "user"),
        ("idp.example", "https://"),
        ("https://", "no host"),
        ("https://idp.example:99999", "not a valid URL"),
        ("https://idp.example/" + "a" * 10_000, "longer than 2048 characters"),
    ],
)
def test_both_sides_refuse_what_cannot_be_an_issuer(configured: str, hint: str) -> None:
    with pytest.raises(IdPIssuerError) as at_idp:
        idp_issuer(configured)
    with pytest.raises(ValueError) as at_client:
        client_issuer(configured)
    assert hint in str(at_idp.value)
    assert hint in str(at_client.value)
    assert str(at_idp.value).startswith("CAMPUSID_ISSUER ")  # the IdP names the setting to fix
    assert str(at_client.value).startswith("issuer ")


def test_the_idp_and_the_client_raise_the_same_error_class() -> None:
    assert IdPIssuerError is IssuerError
    with pytest.raises(IssuerError):
        client_issuer("https://bad_label.example")


def test_the_unicode_form_is_for_display_only() -> None:
    issuer = parse_issuer("https://Bücher.example:8443/Tenant/")
    assert issuer == Issuer(
        canonical="https://xn--bcher-kva.example:8443/Tenant",
        display="https://bücher.example:8443/Tenant",
        scheme="https",
        host="xn--bcher-kva.example",
        port=8443,
        path="/Tenant",
    )
    assert str(issuer) == issuer.canonical
    assert issuer.canonical.isascii()


def test_an_empty_issuer_says_what_to_set() -> None:
    with pytest.raises(IssuerError, match="CAMPUSID_ISSUER is empty; set it to the public URL"):
        idp_issuer("  ")
    with pytest.raises(IssuerError, match="issuer is empty"):
        client_issuer("")
