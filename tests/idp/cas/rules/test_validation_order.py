"""The error codes of a validation request, checked in their order (rules/validation.py)."""

from __future__ import annotations

import pytest

from campusid.idp.cas.rules.validation import (
    INVALID_REQUEST,
    INVALID_TICKET_SPEC,
    ORDER,
    P3_PROXY_VALIDATE,
    P3_SERVICE_VALIDATE,
    VALIDATE,
    CasFailure,
    check_request,
    check_ticket_spec,
    read_params,
    response_format,
)


def codes_of(raw: bytes, endpoint=P3_SERVICE_VALIDATE) -> str | None:
    try:
        params = check_request(read_params(raw), ("service", "ticket"))
        check_ticket_spec(endpoint, params["ticket"])
    except CasFailure as failure:
        return failure.code
    return None


def test_the_order_is_the_contracts():
    assert ORDER == (
        "INVALID_REQUEST",
        "INVALID_TICKET_SPEC",
        "INVALID_TICKET",
        "INVALID_SERVICE",
        "UNAUTHORIZED_SERVICE_PROXY",
        "INVALID_PROXY_CALLBACK",
        "INTERNAL_ERROR",
    )


@pytest.mark.parametrize(
    "raw",
    [
        b"ticket=ST-1",  # no service
        b"service=https%3A%2F%2Fa%2F&ticket=",  # empty ticket
        b"service=x&service=y&ticket=ST-1",  # twice
        b"service=x&ticket=ST-1&renew=true&renew=true",  # any parameter twice
        b"service=" + b"a" * 2049 + b"&ticket=ST-1",
        b"service=x&pgtUrl=" + b"a" * 2049 + b"&ticket=ST-1",
        b"service=x&ticket=ST-" + b"a" * 254,
        b"service=%ff&ticket=ST-1",  # not UTF-8
        b"service=x%00&ticket=ST-1",  # NUL
        b"service=x&ticket=ST-1&format=YAML",
    ],
)
def test_invalid_request_comes_first_even_for_a_proxy_ticket(raw):
    assert codes_of(raw.replace(b"ST-1", b"PT-1")) == INVALID_REQUEST
    assert codes_of(raw) == INVALID_REQUEST


def test_ticket_spec_refuses_what_the_endpoint_does_not_validate():
    assert codes_of(b"service=x&ticket=PT-abc") == INVALID_TICKET_SPEC
    assert codes_of(b"service=x&ticket=PGT-abc") == INVALID_TICKET_SPEC
    assert codes_of(b"service=x&ticket=PGTIOU-abc") == INVALID_TICKET_SPEC
    assert codes_of(b"service=x&ticket=garbage") == INVALID_TICKET_SPEC
    assert codes_of(b"service=x&ticket=PT-abc", VALIDATE) == INVALID_TICKET_SPEC
    assert codes_of(b"service=x&ticket=PT-abc", P3_PROXY_VALIDATE) is None
    assert codes_of(b"service=x&ticket=ST-abc") is None


def test_format_is_case_insensitive_and_xml_by_default():
    assert response_format(read_params(b"format=json")) == "JSON"
    assert response_format(read_params(b"format=Xml")) == "XML"
    assert response_format(read_params(b"")) == "XML"
    assert response_format(read_params(b"format=JSON&format=JSON")) == "XML"  # refused, answered in XML
