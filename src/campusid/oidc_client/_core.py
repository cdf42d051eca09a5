"""The relying-party logic once, as I/O-free generator flows.

Each flow yields the ``httpx.Request`` it needs and receives the ``httpx.Response`` (or has the
transport's ``httpx.HTTPError`` thrown in); :mod:`.client` drives the same flows with a sync or an
async ``httpx`` client. So the sync and async clients cannot drift apart.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Generator, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, TypeVar

import httpx

from .authorization import AuthorizationRequest, build_authorization_request
from .callback import check_callback, check_state, parse_callback
from .device import (
    SLOW_DOWN_STEP,
    DeviceAuthorization,
    PollState,
    ShowCode,
    Wait,
    device_authorization_form,
    device_token_form,
    parse_device_authorization_response,
)
from .discovery import ProviderMetadata, discovery_url, parse_metadata
from .errors import (
    DeviceAccessDeniedError,
    DeviceCodeExpiredError,
    DiscoveryError,
    IDTokenError,
    LogoutTokenError,
    OIDCError,
    TokenEndpointError,
    UserInfoError,
)
from .idtoken import (
    ASYMMETRIC_ALGS,
    JWKS,
    allowed_algs,
    check_alg,
    check_claims,
    parse_jwks,
    read_header,
    verify_signature,
)
from .issuer import canonical_issuer
from .logout import LOGOUT_TOKEN_TYPES, SeenTokens, check_logout_token_claims, jws_header, logout_url
from .tokens import (
    TokenSet,
    check_revocation_response,
    client_request,
    code_exchange_form,
    parse_token_response,
    parse_userinfo_response,
    refresh_form,
    revocation_form,
    token_endpoint_error,
    userinfo_request,
    with_claims,
)

T = TypeVar("T")
# A flow yields the requests it needs sent, and, in the device flow, the pauses it needs waited
# (Wait) and the code it needs shown (ShowCode); the driver sends None back for those two.
Flow = Generator[httpx.Request | Wait | ShowCode, httpx.Response | None, T]

log = logging.getLogger("campusid.oidc_client")

_JSON = {"Accept": "application/json"}


class ClientCore:
    """Configuration and caches (metadata, JWKS) shared by both client faces."""

    def __init__(
        self,
        *,
        issuer: str,
        client_id: str,
        client_secret: str | None,
        redirect_uri: str | None,
        leeway: float,
        discovery_ttl: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not client_id:
            raise ValueError("client_id is required")
        self.issuer = canonical_issuer(issuer)
        self.client_id = client_id
        self.client_secret = client_secret
        self.redirect_uri = redirect_uri
        self.leeway = leeway
        self.discovery_ttl = discovery_ttl
        self.clock = clock  # the time ID tokens are checked at and the device flow counts with
        self._metadata: ProviderMetadata | None = None
        self._metadata_at = 0.0
        self._jwks: JWKS | None = None
        self._seen_logout_tokens = SeenTokens()

    def __repr__(self) -> str:
        kind = "confidential" if self.client_secret is not None else "public"
        return f"issuer={self.issuer!r}, client_id={self.client_id!r}, {kind}"

    # --- discovery (OpenID Connect Discovery 1.0 section 4) ----------------------------------

    def discover(self) -> Flow[ProviderMetadata]:
        if self._metadata is not None and time.monotonic() - self._metadata_at < self.discovery_ttl:
            return self._metadata
        try:
            response = yield httpx.Request("GET", discovery_url(self.issuer), headers=_JSON)
        except httpx.HTTPError as exc:
            raise DiscoveryError(f"discovery request failed: {type(exc).__name__}: {exc}") from exc
        metadata = parse_metadata(response, self.issuer)
        if self._metadata is not None and metadata.jwks_uri != self._metadata.jwks_uri:
            self._jwks = None
        self._metadata, self._metadata_at = metadata, time.monotonic()
        log.debug("provider metadata loaded for %s", self.issuer)
        return metadata

    # --- authorization request (RFC 6749 section 4.1.1, RFC 7636) ----------------------------

    def authorization_request(
        self, scope: str, redirect_uri: str | None, extra_params: Mapping[str, str]
    ) -> Flow[AuthorizationRequest]:
        redirect_uri = redirect_uri or self.redirect_uri
        if not redirect_uri:
            raise ValueError("redirect_uri is required (constructor or call)")
        metadata = yield from self.discover()
        return build_authorization_request(
            metadata.authorization_endpoint,
            client_id=self.client_id,
            redirect_uri=redirect_uri,
            scope=scope,
            extra_params=extra_params,
        )

    # --- callback and code exchange ----------------------------------------------------------

    def handle_callback(self, req: AuthorizationRequest, callback: str | Mapping[str, Any]) -> Flow[TokenSet]:
        params = parse_callback(callback)
        check_state(req, params)  # before any network traffic
        metadata = yield from self.discover()
        code = check_callback(req, params, self.issuer, iss_required=metadata.iss_parameter_supported)
        return (yield from self.exchange_code(req, code))

    def exchange_code(self, req: AuthorizationRequest, code: str) -> Flow[TokenSet]:
        """RFC 6749 section 4.1.3 + RFC 7636 section 4.5. Sent once: a code is single use (RFC 6749 4.1.2),
        so a failure raises and the caller starts a new login."""
        metadata = yield from self.discover()
        form = code_exchange_form(code, req.redirect_uri, req.code_verifier)
        response = yield from self._token_call(metadata.token_endpoint, form)
        tokens = parse_token_response(
            response,
            requested_scope=req.scope,
            sent_secrets=(req.code_verifier, code, self.client_secret or ""),
        )
        if tokens.id_token is None:
            # OpenID Connect Core 1.0 section 3.1.3.3: an openid request gets an ID token.
            raise IDTokenError("the token response has no id_token")
        claims = yield from self.validate_id_token(tokens.id_token, nonce=req.nonce)
        return with_claims(tokens, claims)

    def _client_request(self, endpoint: str, form: dict[str, str]) -> httpx.Request:
        """The form POST to `endpoint`, authenticated as this client (RFC 6749 section 2.3.1)."""
        return client_request(endpoint, self.client_id, self.client_secret, form)

    def _token_call(self, endpoint: str, form: dict[str, str]) -> Flow[httpx.Response]:
        """The form POST to `endpoint` as this client, sent once; a transport failure is a TokenEndpointError."""
        try:
            return (yield self._client_request(endpoint, form))
        except httpx.HTTPError as exc:
            raise TokenEndpointError("network_error", type(exc).__name__, None) from None

    # --- ID token (OpenID Connect Core 1.0 section 3.1.3.7) ----------------------------------

    def _fetch_jwks(self, metadata: ProviderMetadata) -> Flow[JWKS]:
        try:
            response = yield httpx.Request("GET", metadata.jwks_uri, headers=_JSON)
        except httpx.HTTPError as exc:
            raise IDTokenError(f"JWKS request failed: {type(exc).__name__}") from exc
        self._jwks = parse_jwks(response)
        log.debug("JWKS loaded for %s (%d keys)", self.issuer, len(self._jwks.keys))
        return self._jwks

    def _signing_key(self, metadata: ProviderMetadata, kid: str | None, alg: str) -> Flow[tuple[JWKS, Any]]:
        """(JWKS, the key it has for kid/alg or None): the kept JWKS, fetched when there is none
        yet, and fetched again exactly once when it lacks the key (OpenID Connect Core 10.1.1:
        the provider may have rotated its keys)."""
        jwks, fetched = self._jwks, False
        if jwks is None:
            jwks, fetched = (yield from self._fetch_jwks(metadata)), True
        key = jwks.find(kid, alg)
        if key is None and not fetched:
            jwks = yield from self._fetch_jwks(metadata)
            key = jwks.find(kid, alg)
        return jwks, key

    def validate_id_token(
        self, id_token: str, nonce: str | None = None, max_age: int | None = None
    ) -> Flow[dict[str, Any]]:
        alg, kid = read_header(id_token)
        if alg not in ASYMMETRIC_ALGS:  # 'none' and HS* are refused before any key is looked at
            raise IDTokenError(f"ID token algorithm {alg!r} is not accepted")
        metadata = yield from self.discover()
        jwks, key = yield from self._signing_key(metadata, kid, alg)
        check_alg(alg, allowed_algs(metadata.id_token_signing_alg_values_supported, jwks))
        if key is None:
            raise IDTokenError("no key in the provider's JWKS matches the ID token (kid/alg)")
        claims = verify_signature(id_token, key, alg)
        check_claims(
            claims,
            issuer=self.issuer,
            client_id=self.client_id,
            leeway=self.leeway,
            nonce=nonce,
            max_age=max_age,
            now=self.clock(),
        )
        return claims

    # --- single logout (RP-Initiated Logout 1.0, Back-Channel Logout 1.0) ---------------------

    def logout_url(
        self,
        id_token_hint: str | None,
        post_logout_redirect_uri: str | None,
        state: str | None,
        ui_locales: str | None,
    ) -> Flow[str]:
        metadata = yield from self.discover()
        endpoint = metadata.raw.get("end_session_endpoint")
        if not isinstance(endpoint, str) or not endpoint.startswith(("https://", "http://")):
            raise DiscoveryError("the provider has no end_session_endpoint")
        return logout_url(
            endpoint,
            id_token_hint=id_token_hint,
            client_id=self.client_id,
            post_logout_redirect_uri=post_logout_redirect_uri,
            state=state,
            ui_locales=ui_locales,
        )

    def validate_logout_token(self, logout_token: str) -> Flow[dict[str, Any]]:
        """Back-Channel Logout 1.0 section 2.6: the signature by the provider's key named by
        `kid` (never `none` or a shared secret), the claims, and a `jti` not seen before."""
        try:
            alg, kid = read_header(logout_token)
        except IDTokenError as exc:
            raise LogoutTokenError(str(exc).replace("ID token", "logout token")) from None
        if alg not in ASYMMETRIC_ALGS:
            raise LogoutTokenError(f"logout token algorithm {alg!r} is not accepted")
        try:
            header = jws_header(logout_token)
        except ValueError:
            raise LogoutTokenError("logout token header cannot be read") from None
        if header.get("typ") not in LOGOUT_TOKEN_TYPES:
            raise LogoutTokenError("logout token typ is not logout+jwt")
        metadata = yield from self.discover()
        jwks, key = yield from self._signing_key(metadata, kid, alg)
        if key is None or alg not in allowed_algs(metadata.id_token_signing_alg_values_supported, jwks):
            raise LogoutTokenError("no key in the provider's JWKS matches the logout token (kid/alg)")
        try:
            claims = verify_signature(logout_token, key, alg)
        except IDTokenError:
            raise LogoutTokenError("logout token signature is invalid") from None
        now = self.clock()
        check_logout_token_claims(claims, issuer=self.issuer, client_id=self.client_id, leeway=self.leeway, now=now)
        exp = claims.get("exp") if isinstance(claims.get("exp"), int | float) else None
        if not self._seen_logout_tokens.first_time(claims["jti"], exp, now):
            raise LogoutTokenError("logout token was already used (jti seen before)")
        return claims

    # --- refresh, userinfo, revocation --------------------------------------------------------

    def refresh(self, refresh_token: str, scope: str | None) -> Flow[TokenSet]:
        """RFC 6749 section 6; a returned ID token is validated (OpenID Connect Core 1.0 section 12.2)."""
        metadata = yield from self.discover()
        response = yield from self._token_call(metadata.token_endpoint, refresh_form(refresh_token, scope))
        tokens = parse_token_response(
            response, requested_scope=scope, sent_secrets=(refresh_token, self.client_secret or "")
        )
        claims: dict[str, Any] = {}
        if tokens.id_token is not None:
            claims = yield from self.validate_id_token(tokens.id_token)
        tokens = with_claims(tokens, claims)
        if tokens.refresh_token is None:
            # RFC 6749 section 6: without a new refresh token the old one stays valid.
            tokens = replace(tokens, refresh_token=refresh_token)
        return tokens

    def userinfo(self, access_token: str, expected_sub: str | None) -> Flow[dict[str, Any]]:
        metadata = yield from self.discover()
        if metadata.userinfo_endpoint is None:
            raise OIDCError("the provider has no userinfo_endpoint")
        try:
            response = yield userinfo_request(metadata.userinfo_endpoint, access_token)
        except httpx.HTTPError as exc:
            raise UserInfoError("network_error", type(exc).__name__) from None
        return parse_userinfo_response(response, expected_sub)

    def revoke(self, token: str, token_type_hint: str | None) -> Flow[None]:
        """RFC 7009 section 2."""
        metadata = yield from self.discover()
        if metadata.revocation_endpoint is None:
            raise OIDCError("the provider has no revocation_endpoint")
        response = yield from self._token_call(metadata.revocation_endpoint, revocation_form(token, token_type_hint))
        check_revocation_response(response, token)

    # --- device authorization grant (RFC 8628) ------------------------------------------------

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self.clock(), UTC)

    def start_device_login(self, scope: str) -> Flow[DeviceAuthorization]:
        """RFC 8628 3.1-3.2: a device code and the user code to show the person."""
        metadata = yield from self.discover()
        if metadata.device_authorization_endpoint is None:
            raise DiscoveryError("the provider has no device_authorization_endpoint (RFC 8628 section 4)")
        form = device_authorization_form(scope)
        response = yield from self._token_call(metadata.device_authorization_endpoint, form)
        authorization = parse_device_authorization_response(
            response, now=self._now(), sent_secrets=(self.client_secret or "",)
        )
        return replace(authorization, scope=scope)

    def wait_for_device_login(self, authorization: DeviceAuthorization) -> Flow[TokenSet]:
        """RFC 8628 3.4-3.5: poll every `interval` seconds until the person decides. slow_down adds
        5 seconds to the interval for good; an unreachable provider (or a 5xx) doubles the wait
        until it answers again; polling stops when the code expires. The tokens' ID token is
        validated (no nonce: the device flow has none)."""
        metadata = yield from self.discover()
        pace = PollState(authorization.interval)
        sent = (authorization.device_code, self.client_secret or "")
        while True:
            wait = pace.next_wait()
            left = (authorization.expires_at - self._now()).total_seconds()
            if left <= wait:
                if left > 0:
                    yield Wait(left)  # nothing to gain from polling a code that has expired
                raise DeviceCodeExpiredError("expired_token", "nobody approved the sign-in before the code expired")
            yield Wait(wait)
            request = self._client_request(metadata.token_endpoint, device_token_form(authorization.device_code))
            try:
                response = yield request
            except httpx.HTTPError as exc:
                log.info("device login: the token endpoint is unreachable (%s); backing off", type(exc).__name__)
                pace.unreachable()
                continue
            if response.status_code == 200:
                return (yield from self._device_tokens(response, authorization, sent))
            error = token_endpoint_error(response, sent)
            if response.status_code >= 500:
                pace.unreachable()
                continue
            pace.answered()
            if error.error == "authorization_pending":
                continue
            if error.error == "slow_down":
                pace.interval += SLOW_DOWN_STEP
                if error.retry_after:  # a rate limit's 429 says how long, once
                    pace.backoff = error.retry_after
                continue
            if error.error == "access_denied":
                raise DeviceAccessDeniedError(error.error, error.description, error.status)
            if error.error == "expired_token":
                raise DeviceCodeExpiredError(error.error, error.description, error.status)
            raise error

    def _device_tokens(
        self, response: httpx.Response, authorization: DeviceAuthorization, sent: tuple[str, ...]
    ) -> Flow[TokenSet]:
        tokens = parse_token_response(response, requested_scope=authorization.scope, sent_secrets=sent)
        if tokens.id_token is None:
            if "openid" in (authorization.scope or "").split():
                raise IDTokenError("the token response has no id_token")
            return tokens
        claims = yield from self.validate_id_token(tokens.id_token)
        return with_claims(tokens, claims)

    def device_login(self, scope: str) -> Flow[TokenSet]:
        """Start, show the code (ShowCode), and wait for the person's decision."""
        authorization = yield from self.start_device_login(scope)
        yield ShowCode(authorization)
        return (yield from self.wait_for_device_login(authorization))
