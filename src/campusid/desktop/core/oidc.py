"""The one place the desktop core talks to ``campusid.oidc_client`` (the relying-party library).

The core depends on the small :class:`OIDCPort` protocol below; :class:`CampusOIDC` implements it
over the library and turns the library's exceptions into the core's typed errors, so a rename in
the library is a fix here only. Tests may hand the core another ``OIDCPort``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

import httpx

from .errors import (
    CoreError,
    LoginCancelled,
    LoginFailed,
    LoginTimeout,
    RateLimited,
    RefreshRejected,
    UpstreamError,
    UpstreamUnavailable,
)

log = logging.getLogger(__name__)

# When the IdP's authorize endpoint says temporarily_unavailable it gives no time; this is our guess.
AUTHORIZE_RETRY_AFTER = 60.0
OPEN_BROWSER_THREAD = "campusid-open-browser"


@dataclass(frozen=True)
class Tokens:
    access_token: str
    expires_at: float
    refresh_token: str | None = None
    scope: str | None = None
    id_token: str | None = None
    claims: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ProviderInfo:
    issuer: str
    jwks_uri: str


@dataclass(frozen=True)
class DevicePrompt:
    """What the person must do to finish a sign-in without a browser here (RFC 8628 3.3): open
    ``verification_uri`` elsewhere and enter ``user_code`` before ``expires_at`` (Unix time).
    ``handle`` is the OIDC port's own state for finishing it (never shown)."""

    verification_uri: str
    user_code: str
    expires_at: float
    verification_uri_complete: str | None = None
    handle: Any = field(default=None, repr=False, compare=False)


class OIDCPort(Protocol):
    def provider(self) -> ProviderInfo: ...
    def browser_login(self, *, scope: str, timeout: float, open_browser: Callable[[str], Any]) -> Tokens: ...
    def refresh(self, refresh_token: str) -> Tokens: ...
    def revoke(self, token: str, hint: str) -> None: ...


class DevicePort(Protocol):
    """An OIDC port that can also sign in without a browser on this machine (RFC 8628)."""

    def start_device_login(self, *, scope: str) -> DevicePrompt: ...
    def finish_device_login(self, prompt: DevicePrompt) -> Tokens: ...


class CampusOIDC:
    """:class:`OIDCPort` over ``campusid.oidc_client``: native public client, loopback redirect, PKCE S256."""

    def __init__(self, issuer: str, client_id: str, http: httpx.Client | None = None, timeout: float = 10.0):
        self._issuer = issuer
        self._client_id = client_id
        self._http = http or httpx.Client(timeout=timeout, follow_redirects=False)
        self._timeout = timeout
        self._lock = threading.Lock()
        self._client: Any = None
        self._receiver: Any = None  # the loopback receiver of the sign-in in progress
        self._cancelled = False
        self._device_cancel = threading.Event()  # set to stop a device sign-in's polling

    def _oidc(self) -> Any:
        from campusid import oidc_client as lib  # imported late: the core runs (offline) without it

        with self._lock:
            if self._client is None:
                client = lib.OIDCClient(
                    self._issuer, self._client_id, http=self._http, timeout=self._timeout, sleep=self._device_wait
                )
                with translated(login=False):
                    client.discover()
                self._client = client
            return self._client

    def provider(self) -> ProviderInfo:
        client = self._oidc()
        meta = client.discover()
        return ProviderInfo(issuer=_attr(meta, "issuer"), jwks_uri=_attr(meta, "jwks_uri"))

    def browser_login(self, *, scope: str, timeout: float, open_browser: Callable[[str], Any]) -> Tokens:
        from campusid import oidc_client as lib

        client = self._oidc()
        with translated(login=True), lib.LoopbackReceiver(path="/callback", timeout=timeout) as receiver:
            with self._lock:
                self._receiver, self._cancelled = receiver, False
            try:
                request = client.authorization_request(scope=scope, redirect_uri=receiver.redirect_uri)
                # webbrowser.open may block until a BROWSER command exits; the receiver must keep serving.
                threading.Thread(
                    target=open_browser, args=(request.url,), name=OPEN_BROWSER_THREAD, daemon=True
                ).start()
                params = receiver.wait(request.state)
            except Exception:
                if self._cancelled:
                    raise LoginCancelled("the sign-in was cancelled in the app") from None
                raise
            finally:
                with self._lock:
                    self._receiver = None
            token_set = client.handle_callback(request, params)
            tokens = _tokens(token_set)
            if "name" not in tokens.claims:
                tokens = _with_userinfo(client, tokens)
            return tokens

    def start_device_login(self, *, scope: str) -> DevicePrompt:
        """RFC 8628: a user code for the person to enter on another device."""
        client = self._oidc()
        self._device_cancel.clear()
        with translated(login=True):
            authorization = client.start_device_login(scope)
        return DevicePrompt(
            verification_uri=authorization.verification_uri,
            user_code=authorization.user_code,
            expires_at=authorization.expires_at.timestamp(),
            verification_uri_complete=authorization.verification_uri_complete,
            handle=authorization,
        )

    def finish_device_login(self, prompt: DevicePrompt) -> Tokens:
        """Poll until the person allows or denies (or the code expires, or the app cancels)."""
        client = self._oidc()
        with translated(login=True):
            tokens = _tokens(client.wait_for_device_login(prompt.handle))
        return tokens if "name" in tokens.claims else _with_userinfo(client, tokens)

    def _device_wait(self, seconds: float) -> None:
        """The device flow's pause between polls; cancel_login cuts it short."""
        if self._device_cancel.wait(seconds):
            raise LoginCancelled("the sign-in was cancelled in the app")

    def cancel_login(self) -> bool:
        """Stop waiting: close the loopback receiver of a browser sign-in, or stop a device
        sign-in's polling."""
        with self._lock:
            receiver = self._receiver
            if receiver is None:
                self._device_cancel.set()
                return True
            self._cancelled = True
        receiver.close()
        return True

    def refresh(self, refresh_token: str) -> Tokens:
        client = self._oidc()
        with translated(login=False):
            return _tokens(client.refresh(refresh_token))

    def revoke(self, token: str, hint: str) -> None:
        client = self._oidc()
        with translated(login=False):
            client.revoke(token, token_type_hint=hint)


def _attr(obj: Any, name: str) -> Any:
    return obj[name] if isinstance(obj, dict) else getattr(obj, name)


def _tokens(ts: Any) -> Tokens:
    expires_at = getattr(ts, "expires_at", None)
    if isinstance(expires_at, datetime):
        expires_at = expires_at.timestamp()
    if expires_at is None:
        expires_at = time.time() + float(getattr(ts, "expires_in", None) or 300)
    return Tokens(
        access_token=ts.access_token,
        expires_at=float(expires_at),
        refresh_token=getattr(ts, "refresh_token", None),
        scope=getattr(ts, "scope", None),
        id_token=getattr(ts, "id_token", None),
        claims=dict(getattr(ts, "id_claims", None) or {}),
    )


def _with_userinfo(client: Any, tokens: Tokens) -> Tokens:
    try:
        info = client.userinfo(tokens.access_token)
    except Exception as exc:  # the name is a nicety; a login does not fail for it
        log.info("userinfo unavailable after login (%s)", type(exc).__name__)
        return tokens
    claims = dict(tokens.claims)
    if isinstance(info, dict) and isinstance(info.get("name"), str):
        claims["name"] = info["name"]
    return Tokens(tokens.access_token, tokens.expires_at, tokens.refresh_token, tokens.scope, tokens.id_token, claims)


class translated:
    """Context manager turning ``campusid.oidc_client`` and transport errors into core errors."""

    def __init__(self, *, login: bool) -> None:
        self.login = login

    def __enter__(self) -> translated:
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> bool:
        if exc is None or isinstance(exc, CoreError) or not isinstance(exc, Exception):
            return False
        raise translate_error(exc, login=self.login) from None


def translate_error(exc: Exception, *, login: bool) -> CoreError:
    """Map one relying-party library error to the bridge's error vocabulary (bridge/envelope.py)."""
    name = type(exc).__name__
    names = {cls.__name__ for cls in type(exc).__mro__}
    if isinstance(exc, httpx.TransportError) or _caused_by_transport(exc):
        return UpstreamUnavailable(f"the identity provider is unreachable ({name})")
    if "LoginTimeoutError" in names:
        return LoginTimeout("nobody finished the browser sign-in in time")
    if "DeviceCodeExpiredError" in names:
        return LoginTimeout("nobody approved the sign-in on the other device before the code expired")
    if "DeviceAccessDeniedError" in names:
        return LoginFailed("the sign-in was denied on the other device")
    if "AuthorizationErrorResponse" in names:
        error = getattr(exc, "error", "")
        if error == "temporarily_unavailable":
            return RateLimited(
                "the identity provider's login frequency limit was reached", retry_after=AUTHORIZE_RETRY_AFTER
            )
        return LoginFailed(f"the identity provider refused the sign-in ({error})")
    if "TokenEndpointError" in names:
        status, error = getattr(exc, "status", None), getattr(exc, "error", "")
        retry_after = getattr(exc, "retry_after", None)
        if status == 429:
            return RateLimited("the identity provider's token endpoint is rate limiting", retry_after=retry_after)
        if status is None or status in (502, 503, 504):
            return UpstreamUnavailable("the identity provider's token endpoint is unavailable", retry_after=retry_after)
        if not login and error == "invalid_grant":
            return RefreshRejected("the session has ended at the identity provider; sign in again")
        if error in ("unauthorized_client", "invalid_client", "invalid_scope"):
            return LoginFailed(f"the identity provider refused the sign-in ({error})")
        if login:
            return LoginFailed(f"the code exchange failed ({error}); start a new sign-in")
        return UpstreamError(f"the identity provider's token endpoint answered {error}")
    if "DiscoveryError" in names:
        return UpstreamError(f"the identity provider's metadata is unusable: {exc}")
    if login:
        return LoginFailed(f"the sign-in failed ({name}); start a new sign-in")
    return UpstreamError(f"the identity provider failed ({name})")


def _caused_by_transport(exc: BaseException) -> bool:
    seen = 0
    cause = exc.__cause__ or exc.__context__
    while cause is not None and seen < 5:
        if isinstance(cause, httpx.TransportError | OSError):
            return True
        cause, seen = cause.__cause__ or cause.__context__, seen + 1
    return False
