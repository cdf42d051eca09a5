"""Ticket form (CAS 3.0 3.7), a ticket's row as issued, and the answers' rendering: XML escaping, no whitespace inside
cas:user and attribute elements, JSON's shape, CAS 1.0 text."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pytest

from campusid.idp.cas.rules import responses
from campusid.idp.cas.rules.logout_request import logout_request
from campusid.idp.cas.rules.tickets import KINDS, PGT, PT, ST, issue, kind_of, new_ticket, ticket_hash
from campusid.idp.store.rows import SignIn


@pytest.mark.parametrize("kind", KINDS)
def test_tickets_are_a_prefix_then_at_least_128_bits_of_letters_and_digits(kind):
    seen = set()
    for _ in range(200):
        ticket = new_ticket(kind)
        prefix, _, body = ticket.partition("-")
        assert prefix == kind and re.fullmatch(r"[A-Za-z0-9]{32}", body)  # 32 * log2(62) = 190 bits
        assert len(ticket) <= 64
        assert kind_of(ticket) == kind
        seen.add(ticket)
    assert len(seen) == 200


def test_a_ticket_is_issued_for_its_app_service_and_sign_in_and_stored_by_its_hash():
    sign_in = SignIn(user_id="u1", auth_time=1_000, sid="s1", amr="pwd", acr="0")
    st, row = issue(ST, "portal", "https://a.example.edu/x", sign_in, 5_000, 2_000, lifetime=60, new_login=True)
    assert kind_of(st) == ST and row.id_hash == ticket_hash(st) and st not in repr(row)
    assert (row.kind, row.client_id, row.service, row.user_id, row.sid, row.auth_time) == (
        ST,
        "portal",
        "https://a.example.edu/x",
        "u1",
        "s1",
        1_000,
    )
    assert (row.created_at, row.expires_at, row.session_expires_at, row.new_login, row.proxies) == (
        2_000,
        2_060,
        5_000,
        True,
        (),
    )
    # a PGT lives as long as the SSO session (CAS 3.0 3.3); a PT derived from it keeps its chain
    pgt, pgt_row = issue(PGT, "portal", "https://a.example.edu/cb", row, 5_000, 2_010, lifetime=None, proxies=("cb",))
    assert kind_of(pgt) == PGT and pgt_row.expires_at == 5_000 and not pgt_row.new_login
    _, pt_row = issue(PT, "back", "https://b.example.edu/", pgt_row, 5_000, 2_020, lifetime=60, proxies=("cb",))
    assert (pt_row.client_id, pt_row.user_id, pt_row.sid, pt_row.expires_at, pt_row.proxies) == (
        "back",
        "u1",
        "s1",
        2_080,
        ("cb",),
    )


def test_kind_of_reads_only_known_prefixes():
    assert kind_of("PGTIOU-abc") == "PGTIOU" and kind_of("PGT-abc") == "PGT"
    assert kind_of("XX-abc") is None and kind_of("ST-") is None and kind_of("st-abc") is None


def test_xml_success_escapes_everything_and_keeps_no_whitespace_inside_values():
    hostile = "Ann <b>\"&'</b>\x01"
    body = responses.success_xml(
        responses.Success("a&<b", {"displayName": [hostile], "isFromNewLogin": [True]}, "PGTIOU-x", ("https://p/",))
    )
    root = ET.fromstring(body)
    ns = {"cas": responses.NS}
    assert root.find("cas:authenticationSuccess/cas:user", ns).text == "a&<b"
    assert root.find("cas:authenticationSuccess/cas:attributes/cas:displayName", ns).text == "Ann <b>\"&'</b>\ufffd"
    assert root.find("cas:authenticationSuccess/cas:attributes/cas:isFromNewLogin", ns).text == "true"
    assert root.find("cas:authenticationSuccess/cas:proxies/cas:proxy", ns).text == "https://p/"
    assert "<cas:user>a&amp;&lt;b</cas:user>" in body  # no newline or indentation inside


def test_xml_failure_carries_the_code_and_an_escaped_description():
    root = ET.fromstring(responses.failure_xml("INVALID_TICKET", "bad <ticket> & more"))
    node = root.find("cas:authenticationFailure", {"cas": responses.NS})
    assert node.get("code") == "INVALID_TICKET" and node.text == "bad <ticket> & more"


def test_json_answers_have_the_service_response_shape():
    ok = json.loads(responses.success_json(responses.Success("alice", {"mail": ["a@x"]}, "PGTIOU-1", ("https://p",))))
    assert ok == {
        "serviceResponse": {
            "authenticationSuccess": {
                "user": "alice",
                "attributes": {"mail": ["a@x"]},
                "proxyGrantingTicket": "PGTIOU-1",
                "proxies": ["https://p"],
            }
        }
    }
    bad = json.loads(responses.failure_json("INVALID_SERVICE", "no"))
    assert bad == {"serviceResponse": {"authenticationFailure": {"code": "INVALID_SERVICE", "description": "no"}}}


def test_cas1_text():
    assert responses.validate_text("alice") == "yes\nalice\n"
    assert responses.validate_text(None) == "no\n\n"
    assert responses.validate_text("evil\nyes") == "no\n\n"


def test_the_logout_request_is_saml_with_the_username_and_the_ticket():
    body = logout_request("a<b", "ST-abc", 0)
    root = ET.fromstring(body)
    ns = {"samlp": "urn:oasis:names:tc:SAML:2.0:protocol", "saml": "urn:oasis:names:tc:SAML:2.0:assertion"}
    assert root.tag == "{urn:oasis:names:tc:SAML:2.0:protocol}LogoutRequest"
    assert root.get("Version") == "2.0" and root.get("IssueInstant") == "1970-01-01T00:00:00Z"
    assert root.get("ID").startswith("LR-")
    assert root.find("saml:NameID", ns).text == "a<b"
    assert root.find("samlp:SessionIndex", ns).text == "ST-abc"
