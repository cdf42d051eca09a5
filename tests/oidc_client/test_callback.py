"""Callback checks (RFC 6749 4.1.2, RFC 9207) and the full handle_callback path."""

from __future__ import annotations

import logging
from urllib.parse import urlencode

import pytest

from campusid.oidc_client import (
    AuthorizationErrorResponse,
    CallbackError,
    IssuerMismatchError,
    OIDCClient,
    StateMismatchError,
)

from .fake_op import REDIRECT_URI, FakeOP


def test_valid_callback_url_yields_validated_tokens(client: OIDCClient, op: FakeOP, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    req = client.authorization_request()
    params = op.authorize(req)
    tokens = client.handle_callback(req, f"{REDIRECT_URI}?{urlencode(params)}")
    assert tokens.access_token == "at-1" and tokens.refresh_token == "rt-1"
    assert tokens.id_claims["nonce"] == req.nonce and tokens.id_claims["sub"] == "pairwise-sub-1"
    assert tokens.expires_at is not None and tokens.expires_at.tzinfo is not None
    body = op.token_bodies()[0]
    assert body["code_verifier"] == req.code_verifier and body["redirect_uri"] == REDIRECT_URI
    assert req.code_verifier not in caplog.text


def test_callback_mapping_is_accepted(client: OIDCClient, op: FakeOP) -> None:
    req = client.authorization_request()
    assert client.handle_callback(req, op.authorize(req)).id_claims["aud"] == "campus-app"


@pytest.mark.parametrize("state", ["wrong", "", None])
def test_wrong_or_missing_state(client: OIDCClient, op: FakeOP, state: str | None) -> None:
    req = client.authorization_request()
    params = op.authorize(req)
    if state is None:
        del params["state"]
    else:
        params["state"] = state
    with pytest.raises(StateMismatchError):
        client.handle_callback(req, params)
    assert op.calls["/oauth/token"] == 0  # the code is never sent


def test_missing_iss_when_the_provider_announces_it(client: OIDCClient, op: FakeOP) -> None:
    req = client.authorization_request()
    params = op.authorize(req)
    del params["iss"]
    with pytest.raises(IssuerMismatchError):
        client.handle_callback(req, params)
    assert op.calls["/oauth/token"] == 0


def test_missing_iss_is_fine_when_not_announced(client: OIDCClient, op: FakeOP) -> None:
    op.metadata_overrides["authorization_response_iss_parameter_supported"] = None
    req = client.authorization_request()
    params = op.authorize(req)
    del params["iss"]
    assert client.handle_callback(req, params).access_token == "at-1"


@pytest.mark.parametrize(
    "iss", ["https://evil.example", "https://idp.example/", "https://IDP.example", "https://idp.exämple"]
)
def test_mismatched_iss(client: OIDCClient, op: FakeOP, iss: str) -> None:
    req = client.authorization_request()
    with pytest.raises(IssuerMismatchError):
        client.handle_callback(req, op.authorize(req, iss=iss))


def test_unicode_iss_of_an_idn_issuer_is_refused(rsa_key) -> None:
    import httpx

    op = FakeOP(key=rsa_key, issuer="https://xn--bcher-kva.example")
    client = OIDCClient(
        issuer="https://bücher.example",
        client_id="campus-app",
        redirect_uri=REDIRECT_URI,
        http=httpx.Client(transport=httpx.MockTransport(op.handler)),
    )
    req = client.authorization_request()
    with pytest.raises(IssuerMismatchError):
        client.handle_callback(req, op.authorize(req, iss="https://bücher.example"))
    req = client.authorization_request()
    assert client.handle_callback(req, op.authorize(req)).id_claims["iss"] == "https://xn--bcher-kva.example"


def test_error_response(client: OIDCClient, op: FakeOP) -> None:
    req = client.authorization_request()
    params = {"error": "access_denied", "error_description": "user said no", "state": req.state, "iss": op.issuer}
    with pytest.raises(AuthorizationErrorResponse) as excinfo:
        client.handle_callback(req, params)
    assert excinfo.value.error == "access_denied" and excinfo.value.description == "user said no"
    assert op.calls["/oauth/token"] == 0


def test_error_response_with_a_foreign_state_is_a_state_mismatch(client: OIDCClient, op: FakeOP) -> None:
    req = client.authorization_request()
    with pytest.raises(StateMismatchError):
        client.handle_callback(req, {"error": "access_denied", "state": "forged", "iss": op.issuer})


def test_duplicate_and_missing_code(client: OIDCClient, op: FakeOP) -> None:
    req = client.authorization_request()
    params = op.authorize(req)
    url = f"{REDIRECT_URI}?{urlencode(params)}&code=second"
    with pytest.raises(CallbackError, match="more than once"):
        client.handle_callback(req, url)
    with pytest.raises(CallbackError, match="neither a code"):
        client.handle_callback(req, {"state": req.state, "iss": op.issuer})
