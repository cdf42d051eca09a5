"""Single logout, the protocol rules: OpenID Connect RP-Initiated Logout 1.0 (the end_session
endpoint's request) and Back-Channel Logout 1.0 (the logout token).

`decide_logout_request` is the one unit that decides an RP-initiated request: it assembles the
parameters (an allow-list, no duplicates), verifies the `id_token_hint`, identifies the client and
matches the `post_logout_redirect_uri`, each step a named function raising `LogoutRefused` with
the message the logout page shows. The page (idp/web/logout.py) only asks it and renders.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from urllib.parse import urlencode, urlsplit, urlunsplit

from joserfc import jws
from joserfc.errors import JoseError

from campusid.i18n import N_
from campusid.idp.crypto import new_token
from campusid.idp.keys import ID_TOKEN_ALG, KeyManager
from campusid.idp.oidc.rules.jws import CompactSigner, split_compact
from campusid.idp.oidc.rules.redirect_uri import registration_problem
from campusid.idp.store.rows import Client

# RP-Initiated Logout 1.0 2: the request's parameters; anything else is ignored.
PARAMETERS = ("id_token_hint", "client_id", "post_logout_redirect_uri", "state", "ui_locales", "logout_hint")
MAX_HINT = 8192
MAX_VALUE = 2000
MAX_URIS = 20
BACKCHANNEL_EVENT = "http://schemas.openid.net/event/backchannel-logout"
LOGOUT_TOKEN_TYP = "logout+jwt"  # Back-Channel Logout 1.0 2.4 (explicit typing, RFC 8725 3.11)


# What the logout page says about a refused request, by the refusal's kind.
REFUSALS = {
    "malformed": N_("This sign-out request is malformed: a parameter is repeated, too long or not valid text."),
    "too_long": N_("This sign-out request has a parameter that is too long."),
    "hint": N_("The application sent an ID token that this sign-in service did not issue, or that was changed."),
    "client_mismatch": N_("The application named in the request is not the one the ID token was issued to."),
    "no_client": N_("The request asks to return to an address but does not say which application it comes from."),
    "unknown_client": N_("The application in this request is not known here."),
    "uri": N_("The address to return to is not registered for this application, so you were not sent there."),
    "form": N_("The sign-out form expired or was not sent from this page. Nothing was changed; try again."),
}


class LogoutRefused(Exception):
    """A request the end_session endpoint will not follow: no redirect; `kind` names the logout
    page's message (REFUSALS, `text`), `message` says it precisely in English for logs and tests."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message

    @property
    def text(self) -> str:
        return REFUSALS[self.kind]


@dataclass(frozen=True)
class LogoutRequest:
    """An RP-initiated logout request the endpoint may follow.

    `client_id` is the app it came from (named by the hint, or by client_id), `redirect_uri` the
    registered post-logout URI with `state` added (None: show "signed out"), `hint_sid` the
    session the hint names (None without a hint)."""

    client_id: str | None
    redirect_uri: str | None
    hint_sid: str | None
    ui_locales: str | None

    def confirmation_needed(self, session_sid: str | None) -> bool:
        """RP-Initiated Logout 1.0 2 and 4: the OP asks the user unless the hint names this
        browser's session (an RP that holds its ID token logged this very session in)."""
        return self.hint_sid is None or session_sid is None or self.hint_sid != session_sid


# -- registration --------------------------------------------------------------------------------
def post_logout_uri_problem(uri: str, client_type: str) -> str | None:
    """Why `uri` cannot be a post_logout_redirect_uri of this client type (the redirect URI rules:
    RP-Initiated Logout 1.0 3.1 asks the same care as for redirect_uri), or None."""
    return registration_problem(uri, client_type)


def backchannel_uri_problem(uri: str) -> str | None:
    """Why `uri` cannot be a backchannel_logout_uri (Back-Channel Logout 1.0 2.2: an absolute URI,
    no fragment), or None. https, or http on a loopback host for development; private addresses
    are allowed (campus services live there, and every URI passes review)."""
    problem = registration_problem(uri, "web")
    if problem and "https" in problem:
        return N_("must use https (http only on a loopback host: 127.0.0.1, [::1], localhost)")
    return problem


# -- the RP-initiated request --------------------------------------------------------------------
def assemble(params: dict[str, str]) -> dict[str, str]:
    """The request's parameters we use, each bounded; the caller's parser has already refused
    duplicates and non-UTF-8 (RP-Initiated Logout 1.0 2: parameters as in OAuth 2.0)."""
    out = {}
    for name in PARAMETERS:
        value = params.get(name)
        if value is None or value == "":
            continue
        limit = MAX_HINT if name == "id_token_hint" else MAX_VALUE
        if len(value) > limit:
            raise LogoutRefused("too_long", f"the parameter {name} is too long")
        if not value.isprintable():
            raise LogoutRefused("malformed", f"the parameter {name} holds control characters")
        out[name] = value
    return out


async def verify_id_token_hint(token: str, keys: KeyManager, issuer: str) -> dict:
    """The claims of an ID token we issued (RP-Initiated Logout 1.0 2: "the OP MUST validate that
    it was the issuer"): RS256 only (never `none`), a published key by `kid`, the signature, `iss`
    and `aud`. An expired hint is accepted (the same section: the RP may hold an old one), so
    `exp` is not checked; the signature still is."""
    refused = LogoutRefused("hint", "the id_token_hint is not a valid ID token of this sign-in service")
    try:
        header, _, payload, _ = split_compact(token)
        claims = json.loads(payload)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise refused from None
    if header.get("alg") != ID_TOKEN_ALG or not isinstance(header.get("kid"), str) or "crit" in header:
        raise refused
    key = await keys.verification_key(header["kid"], ID_TOKEN_ALG)
    if key is None:
        raise refused
    try:
        jws.deserialize_compact(token, key, algorithms=[ID_TOKEN_ALG])
    except (JoseError, ValueError):
        raise refused from None
    if not isinstance(claims, dict) or claims.get("iss") != issuer:
        raise refused
    aud = claims.get("aud")
    if not (isinstance(aud, str) and aud) and not (isinstance(aud, list) and len(aud) == 1 and isinstance(aud[0], str)):
        raise refused
    return claims


def hint_client_id(claims: dict) -> str:
    aud = claims["aud"]
    return aud if isinstance(aud, str) else aud[0]


def check_client(hint: dict | None, client_id: str | None) -> str | None:
    """The client the request comes from: the hint's audience, which a client_id given beside it
    must equal (RP-Initiated Logout 1.0 2), or client_id alone, or nobody."""
    if hint is not None:
        named = hint_client_id(hint)
        if client_id is not None and client_id != named:
            raise LogoutRefused("client_mismatch", "client_id is not the audience of the id_token_hint")
        return named
    return client_id


def check_post_logout_redirect_uri(client: Client | None, uri: str) -> str:
    """`uri` exactly as `client` registered it (RP-Initiated Logout 1.0 3: "MUST have been
    previously registered"; compared character for character); a URI given without a client to
    hold it against, or one registered by another app, is refused."""
    if client is None:
        raise LogoutRefused("no_client", "post_logout_redirect_uri needs an id_token_hint or client_id naming the app")
    if uri not in client.post_logout_redirect_uris:
        raise LogoutRefused(
            "uri", "post_logout_redirect_uri is not registered for this application; nothing was followed"
        )
    return uri


def with_state(uri: str, state: str | None) -> str:
    """The post-logout URI with `state` added to its query (RP-Initiated Logout 1.0 3)."""
    if state is None:
        return uri
    parts = urlsplit(uri)
    query = f"{parts.query}&{urlencode({'state': state})}" if parts.query else urlencode({"state": state})
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, ""))


async def decide_logout_request(params: dict[str, str], keys: KeyManager, issuer: str, find_client) -> LogoutRequest:
    """The RP-initiated logout request `params` asks for, or LogoutRefused: the one place that
    decides (RP-Initiated Logout 1.0 2 and 3). `find_client` is the store's async client lookup."""
    p = assemble(params)
    hint = await verify_id_token_hint(p["id_token_hint"], keys, issuer) if "id_token_hint" in p else None
    client_id = check_client(hint, p.get("client_id"))
    client = await find_client(client_id) if client_id is not None else None
    if client_id is not None and client is None:
        raise LogoutRefused("unknown_client", "the application is not known here")
    uri = None
    if "post_logout_redirect_uri" in p:
        uri = with_state(check_post_logout_redirect_uri(client, p["post_logout_redirect_uri"]), p.get("state"))
    sid = hint.get("sid") if hint is not None and isinstance(hint.get("sid"), str) else None
    return LogoutRequest(client_id, uri, sid, p.get("ui_locales"))


# -- the back-channel logout token -----------------------------------------------------------------
class LogoutTokens:
    """Signs logout tokens (Back-Channel Logout 1.0 2.4) with the ID tokens' RS256 key."""

    def __init__(self, keys: KeyManager, issuer: str, ttl: int = 120) -> None:
        self._keys = keys
        self._issuer = issuer
        self._ttl = ttl

    def claims(self, *, sub: str, client_id: str, sid: str, now: int) -> dict:
        """iss, aud, iat, exp, jti, sub and sid, and the back-channel logout event; never a nonce
        (2.4: "A nonce Claim MUST NOT be present", so it cannot pass for an ID token)."""
        return {
            "iss": self._issuer,
            "aud": client_id,
            "iat": now,
            "exp": now + self._ttl,
            "jti": new_token(16),
            "sub": sub,
            "sid": sid,
            "events": {BACKCHANNEL_EVENT: {}},
        }

    def sign(self, *, sub: str, client_id: str, sid: str, now: int | None = None) -> str:
        now = int(time.time()) if now is None else now
        key = self._keys.signing_key(ID_TOKEN_ALG, now)
        signer = CompactSigner(ID_TOKEN_ALG, key, {"alg": ID_TOKEN_ALG, "kid": key.kid, "typ": LOGOUT_TOKEN_TYP})
        return signer.sign(self.claims(sub=sub, client_id=client_id, sid=sid, now=now))
