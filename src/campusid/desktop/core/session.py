"""The signed-in session: browser or device sign-in, reuse, silent refresh, sign-out.

The login frequency limit of the IdP (docs/configuration.md) is respected here: a live access
token or a refresh token that still works is always reused before a browser is opened, a sync
never starts a sign-in, and refreshes are serialised so a rotating refresh token is never sent
twice (which would revoke its whole family).
"""

from __future__ import annotations

import enum
import logging
import threading
import time
import webbrowser
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import asdict, dataclass
from typing import Any

from . import events as ev
from .errors import CoreError, LoginFailed, LoginInProgress, NotLoggedIn, RefreshRejected, SessionRevoked
from .oidc import DevicePrompt, OIDCPort, Tokens
from .token_store import TokenStore

log = logging.getLogger(__name__)

# An access token this close to expiry is refreshed before use.
REFRESH_MARGIN = 30.0
# Why the app signed itself out when campusid refused its refresh token: the session it was issued
# in ended there (signed out at campusid or in another app, the account disabled, the app suspended:
# OpenID Connect Back-Channel Logout 1.0 revokes the session's refresh tokens).
REVOKED = "session_revoked"
REVOKED_MESSAGE = (
    "campusid ended this sign-in (you signed out there or in another app, or your account or this app "
    "was disabled), so the app signed you out. Sign in again to continue."
)
DEFAULT_LOGIN_TIMEOUT = 300.0


class SessionState(enum.StrEnum):
    SIGNED_OUT = "signed_out"
    WAITING_FOR_BROWSER = "waiting_for_browser"
    WAITING_FOR_DEVICE = "waiting_for_device"  # a person is to enter the user code elsewhere (RFC 8628)
    SIGNED_IN = "signed_in"


LOGIN_METHODS = ("browser", "device")


@dataclass(frozen=True)
class Session:
    access_token: str
    expires_at: float
    refresh_token: str | None = None
    scope: str | None = None
    user_name: str | None = None

    @classmethod
    def from_tokens(cls, tokens: Tokens, previous: Session | None = None) -> Session:
        name = tokens.claims.get("name")
        return cls(
            access_token=tokens.access_token,
            expires_at=tokens.expires_at,
            # RFC 6749 6: a refresh answer without a new refresh token keeps the old one.
            refresh_token=tokens.refresh_token or (previous.refresh_token if previous else None),
            scope=tokens.scope or (previous.scope if previous else None),
            user_name=name if isinstance(name, str) else (previous.user_name if previous else None),
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Session | None:
        try:
            return cls(**{k: data[k] for k in ("access_token", "expires_at", "refresh_token", "scope", "user_name")})
        except (KeyError, TypeError):
            return None


@dataclass(frozen=True)
class LoginResult:
    session: Session
    reused: bool


class SessionManager:
    def __init__(
        self,
        oidc: OIDCPort,
        store: TokenStore,
        events: ev.EventBus,
        *,
        scope: str,
        open_browser: Callable[[str], Any] = webbrowser.open,
        on_signed_in: Callable[[], None] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._oidc = oidc
        self._store = store
        self._events = events
        self._scope = scope
        self._open_browser = open_browser
        self._on_signed_in = on_signed_in
        self._clock = clock
        self._lock = threading.Lock()  # guards _session, _pending, _waiting, _device, _last_error
        self._changed = threading.Condition(self._lock)  # a device prompt appeared or a login ended
        self._refresh_lock = threading.Lock()  # one refresh at a time (rotating refresh tokens)
        self._session = Session.from_dict(store.load() or {})
        self._pending: Future[LoginResult] | None = None
        self._waiting: SessionState | None = None
        self._device: DevicePrompt | None = None
        self._last_error: CoreError | None = None
        self._signed_out_reason: str | None = None

    # -- state -----------------------------------------------------------------------------
    @property
    def state(self) -> SessionState:
        with self._lock:
            if self._waiting is not None:
                return self._waiting
            return SessionState.SIGNED_IN if self._session else SessionState.SIGNED_OUT

    @property
    def current(self) -> Session | None:
        with self._lock:
            return self._session

    @property
    def login_pending(self) -> bool:
        with self._lock:
            return self._pending is not None

    @property
    def device_prompt(self) -> DevicePrompt | None:
        """The user code a pending device sign-in waits for someone to enter, else None."""
        with self._lock:
            return self._device

    @property
    def last_login_error(self) -> CoreError | None:
        """Why the last sign-in failed (denied, expired, refused), until the next one starts."""
        with self._lock:
            return self._last_error

    @property
    def signed_out_reason(self) -> str | None:
        """``session_revoked`` when the app signed itself out because campusid refused its refresh
        token; None otherwise (never signed in, signed out here, or signed in again since)."""
        with self._lock:
            return self._signed_out_reason

    # -- sign-in ---------------------------------------------------------------------------
    def start_login(
        self, *, force: bool = False, timeout: float = DEFAULT_LOGIN_TIMEOUT, method: str = "browser"
    ) -> Future[LoginResult]:
        """Begin a sign-in in the background; :class:`LoginInProgress` if one is already pending.

        ``method`` is ``browser`` (the system browser and a loopback redirect) or ``device``
        (RFC 8628: a code the person enters on another device; see :meth:`wait_for_device_prompt`).
        ``timeout`` bounds a browser sign-in; a device sign-in ends when its code expires."""
        if method not in LOGIN_METHODS:
            raise ValueError(f"unknown sign-in method {method!r}")
        with self._lock:
            if self._pending is not None:
                raise LoginInProgress("a sign-in is already waiting for the browser or the device code")
            future: Future[LoginResult] = Future()
            self._pending = future
            self._last_error = None
        threading.Thread(target=self._login_worker, args=(future, force, timeout, method), daemon=True).start()
        return future

    def wait_for_device_prompt(self, future: Future[LoginResult], timeout: float) -> DevicePrompt | None:
        """Block until the device sign-in of ``future`` has a user code to show (it), or has
        ended without needing one (None: a reused session, or a failure the future holds), or
        ``timeout`` seconds passed (None, and the future still pending)."""
        with self._changed:
            self._changed.wait_for(lambda: self._pending is not future or self._device is not None, timeout)
            return self._device if self._pending is future else None

    def cancel_login(self) -> bool:
        """Cancel a sign-in that waits for the browser (it fails with ``LoginCancelled``).

        ``False`` when no browser sign-in is waiting, or the OIDC port cannot cancel one.
        """
        cancel = getattr(self._oidc, "cancel_login", None)
        return bool(cancel is not None and self.login_pending and cancel())

    def login(self, *, force: bool = False, timeout: float = DEFAULT_LOGIN_TIMEOUT) -> LoginResult:
        return self.start_login(force=force, timeout=timeout).result()

    def _login_worker(self, future: Future[LoginResult], force: bool, timeout: float, method: str) -> None:
        future.set_running_or_notify_cancel()
        try:
            result = self._login(force, timeout, method)
        except BaseException as exc:
            self._finish_login(future, error=exc)
        else:
            self._finish_login(future, result=result)

    def _finish_login(self, future: Future[LoginResult], result: LoginResult | None = None, error=None) -> None:
        with self._changed:
            self._pending = None
            self._waiting = None
            self._device = None
            self._last_error = error if isinstance(error, CoreError) else None
            self._changed.notify_all()
        self._emit_state()
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    def _login(self, force: bool, timeout: float, method: str = "browser") -> LoginResult:
        if not force:
            reused = self._reusable_session()
            if reused is not None:
                return LoginResult(reused, reused=True)
        if method == "device":
            return self._device_login()
        with self._lock:
            self._waiting = SessionState.WAITING_FOR_BROWSER
        self._emit_state()
        tokens = self._oidc.browser_login(scope=self._scope, timeout=timeout, open_browser=self._open)
        session = self._replace_session(Session.from_tokens(tokens))
        if self._on_signed_in:
            self._on_signed_in()
        return LoginResult(session, reused=False)

    def _device_login(self) -> LoginResult:
        """RFC 8628: get a user code, publish it (wait_for_device_prompt, the status, an event),
        then wait while the OIDC port polls for the person's decision."""
        start = getattr(self._oidc, "start_device_login", None)
        finish = getattr(self._oidc, "finish_device_login", None)
        if start is None or finish is None:
            raise LoginFailed("this app cannot sign in without a browser")
        prompt = start(scope=self._scope)
        with self._changed:
            self._device = prompt
            self._waiting = SessionState.WAITING_FOR_DEVICE
            self._changed.notify_all()
        self._emit_state()
        self._events.emit(
            ev.DEVICE_CODE_SHOWN,
            verification_uri=prompt.verification_uri,
            user_code=prompt.user_code,
            expires_at=prompt.expires_at,
        )
        tokens = finish(prompt)
        session = self._replace_session(Session.from_tokens(tokens))
        if self._on_signed_in:
            self._on_signed_in()
        return LoginResult(session, reused=False)

    def _open(self, url: str) -> None:
        opened = bool(self._open_browser(url))
        self._events.emit(ev.LOGIN_URL_OPENED, browser_opened=opened)
        if not opened:
            log.warning("no web browser could be opened for the sign-in")

    def _reusable_session(self) -> Session | None:
        """A live session, or one a refresh token brings back; ``None`` when a browser sign-in is needed."""
        session = self.current
        if session is None:
            return None
        if session.expires_at - REFRESH_MARGIN > self._clock():
            return session
        try:
            return self._refresh(session)
        except RefreshRejected:
            return None

    # -- tokens ----------------------------------------------------------------------------
    def access_token(self) -> str:
        """A usable access token, refreshed first when it is about to expire; never starts a sign-in."""
        session = self.current
        if session is None:
            raise NotLoggedIn("nobody is signed in; call /login first")
        if session.expires_at - REFRESH_MARGIN > self._clock():
            return session.access_token
        return self._refresh(session).access_token

    def refresh_now(self) -> str:
        """Refresh regardless of expiry (the resource server rejected the token)."""
        session = self.current
        if session is None:
            raise NotLoggedIn("nobody is signed in; call /login first")
        return self._refresh(session, stale_token=session.access_token).access_token

    def _refresh(self, session: Session, stale_token: str | None = None) -> Session:
        with self._refresh_lock:
            latest = self.current
            if latest is None:
                raise NotLoggedIn("nobody is signed in; call /login first")
            fresh_enough = latest.expires_at - REFRESH_MARGIN > self._clock()
            if latest.access_token != (stale_token or "") and fresh_enough:
                return latest  # another thread refreshed while we waited
            if not latest.refresh_token:
                self._drop_session()
                raise NotLoggedIn("the session has expired and cannot be refreshed; sign in again")
            try:
                tokens = self._oidc.refresh(latest.refresh_token)
            except RefreshRejected:
                log.info("campusid refused the refresh token: the session ended there; signing out")
                self._drop_session(reason=REVOKED)
                raise SessionRevoked(REVOKED_MESSAGE) from None
            return self._replace_session(Session.from_tokens(tokens, previous=latest))

    def _replace_session(self, session: Session) -> Session:
        self._store.save(asdict(session))
        with self._lock:
            self._session = session
            self._signed_out_reason = None
        self._emit_state()
        return session

    def _drop_session(self, reason: str | None = None) -> None:
        self._store.clear()
        with self._lock:
            self._session = None
            self._signed_out_reason = reason
        self._emit_state()

    # -- sign-out --------------------------------------------------------------------------
    def logout(self) -> bool:
        """Revoke (best effort) and forget the tokens; ``True`` when the IdP confirmed the revocation."""
        session = self.current
        revoked = False
        if session is not None:
            try:
                if session.refresh_token:
                    self._oidc.revoke(session.refresh_token, "refresh_token")
                self._oidc.revoke(session.access_token, "access_token")
                revoked = True
            except CoreError as exc:
                log.warning("token revocation failed (%s); forgetting the tokens anyway", exc.code)
        self._drop_session()
        return revoked

    def _emit_state(self) -> None:
        session = self.current
        self._events.emit(
            ev.STATE_CHANGED,
            state=self.state.value,
            user={"name": session.user_name} if session else None,
            reason=self.signed_out_reason,
        )
