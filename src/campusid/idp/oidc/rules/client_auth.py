"""Client authentication at the token, revocation and introspection endpoints.

Web clients: `client_secret_basic` only (RFC 6749 2.3.1 — the id and secret are
form-urlencoded before base64). Native clients are public: `client_id` in the body and no
secret (RFC 8252 8.4). Secrets are compared as SHA-256 digests in constant time.
"""

from __future__ import annotations

import base64
import binascii

from campusid.idp.crypto import equal, token_hash
from campusid.idp.errors import RequestError
from campusid.idp.oidc.errors import InvalidClient, InvalidRequest
from campusid.idp.store.rows import Client
from campusid.idp.web.params import decode_component


def parse_basic(header: str) -> tuple[str, str]:
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() != "basic" or not value or len(value) > 4096:
        raise InvalidClient("client authentication must use HTTP Basic")
    try:
        decoded = base64.b64decode(value.strip(), validate=True)
    except (binascii.Error, ValueError):
        raise InvalidClient("the Basic credentials are not valid base64") from None
    user, sep, password = decoded.partition(b":")
    if not sep:
        raise InvalidClient("the Basic credentials are malformed")
    try:
        client_id = decode_component(user, "the client id")
        secret = decode_component(password, "the client secret")
    except RequestError:
        raise InvalidClient("the Basic credentials are not valid UTF-8 or contain a NUL character") from None
    if not client_id:
        raise InvalidClient("the Basic credentials name no client")
    return client_id, secret


def credentials(authorization: str | None, form: dict[str, str]) -> tuple[str, str | None]:
    """(client_id, secret) as presented: HTTP Basic for web clients, `client_id` alone in the body
    for public ones (secret None). Raises InvalidClient for any other way of authenticating."""
    if "client_secret" in form:
        raise InvalidClient("client_secret_post is not supported; use HTTP Basic (client_secret_basic)")
    if "client_assertion" in form:
        raise InvalidClient("client assertions are not supported")
    if authorization is not None:
        client_id, secret = parse_basic(authorization)
        if "client_id" in form and form["client_id"] != client_id:
            raise InvalidRequest("client_id in the body differs from the authenticated client")
        return client_id, secret
    client_id = form.get("client_id")
    if not client_id:
        raise InvalidClient("client authentication is required")
    return client_id, None


def verify(client: Client | None, secret: str | None) -> Client:
    """The client the credentials name, if they authenticate it and it is active; else InvalidClient."""
    if secret is not None:
        if client is None or client.type != "web" or not client.secret_hash:
            equal(token_hash(secret), "0" * 64)  # same work as a real comparison
            raise InvalidClient("client authentication failed")
        if not equal(token_hash(secret), client.secret_hash):
            raise InvalidClient("client authentication failed")
    else:
        if client is None:
            raise InvalidClient("client authentication failed")
        if client.type != "native":
            raise InvalidClient("this client must authenticate with HTTP Basic (client_secret_basic)")
    if client.state != "active":
        raise InvalidClient("this application is not active")
    return client


async def authenticate(lookup, authorization: str | None, form: dict[str, str]) -> Client:
    """Return the authenticated client or raise InvalidClient; `await lookup(client_id)` reads the store."""
    client_id, secret = credentials(authorization, form)
    return verify(await lookup(client_id), secret)
