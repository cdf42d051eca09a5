"""``DesktopCore``: the one object the GUI and the bridge drive (session, sync, cache, scope check)."""

from __future__ import annotations

import logging
import webbrowser
from collections.abc import Callable
from concurrent.futures import Future
from datetime import UTC, datetime
from typing import Any

import httpx

from ..config import DesktopSettings
from . import events as ev
from .cache import GradeCache, GradeSnapshot
from .errors import CoreError, NotLoggedIn
from .oidc import CampusOIDC, DevicePrompt, OIDCPort
from .records import RecordsClient
from .scope_check import JWKSCache, ScopeChecker
from .session import DEFAULT_LOGIN_TIMEOUT, LoginResult, SessionManager
from .sync import GradeSync
from .token_store import TokenStore, open_token_store

log = logging.getLogger(__name__)

GRADES_SCOPE = "grades.read"


def device_prompt_data(prompt: DevicePrompt) -> dict[str, Any]:
    """What to tell the person about a pending device sign-in (never the device code)."""
    return {
        "verification_uri": prompt.verification_uri,
        "verification_uri_complete": prompt.verification_uri_complete,
        "user_code": prompt.user_code,
        "expires_at": datetime.fromtimestamp(prompt.expires_at, UTC),
    }


class DesktopCore:
    def __init__(
        self,
        settings: DesktopSettings,
        *,
        oidc: OIDCPort | None = None,
        token_store: TokenStore | None = None,
        records: RecordsClient | None = None,
        open_browser: Callable[[str], Any] = webbrowser.open,
        events: ev.EventBus | None = None,
        http: httpx.Client | None = None,
    ) -> None:
        self.settings = settings
        self.events = events or ev.EventBus()
        data_dir = settings.data_dir
        data_dir.mkdir(parents=True, exist_ok=True)
        # One HTTP client (one connection pool, one TLS context) for the IdP and the records API.
        self.http = http or httpx.Client(timeout=15.0, follow_redirects=False)
        self.oidc = oidc or CampusOIDC(settings.issuer, settings.client_id, http=self.http)
        self.token_store = token_store or open_token_store(data_dir, f"{settings.client_id}@{settings.issuer}")
        self.events.emit(ev.TOKEN_STORAGE, kind=self.token_store.kind, detail=self.token_store.detail)
        self.cache = GradeCache(data_dir / "grades.sqlite3")
        self.jwks = JWKSCache(data_dir / "jwks.json", self._locate_jwks, http=self.http)
        self.scope_checker = ScopeChecker(self.jwks, settings.records_audience)
        self.session = SessionManager(
            self.oidc,
            self.token_store,
            self.events,
            scope=settings.scope,
            open_browser=open_browser,
            on_signed_in=self._prefetch_jwks,
        )
        self.sync = GradeSync(
            self.session, records or RecordsClient(settings.records_url, http=self.http), self.cache, self.events
        )

    # -- operations ------------------------------------------------------------------------
    def start_login(
        self, *, force: bool = False, timeout: float = DEFAULT_LOGIN_TIMEOUT, method: str = "browser"
    ) -> Future[LoginResult]:
        return self.session.start_login(force=force, timeout=timeout, method=method)

    def start_sync(self) -> Future[GradeSnapshot]:
        return self.sync.start()

    def cached_grades(self) -> GradeSnapshot:
        """The cache, offline, for a session whose access token grants ``grades.read``."""
        session = self.session.current
        if session is None:
            raise NotLoggedIn("nobody is signed in and nothing is cached; call /login then /sync_grades")
        self.scope_checker.require(session.access_token, GRADES_SCOPE)
        return self.cache.load()

    def logout(self) -> bool:
        """Revoke and forget the tokens, and the cached grades of whoever was signed in."""
        revoked = self.session.logout()
        self.cache.clear()
        return revoked

    @property
    def logged_in(self) -> bool:
        return self.session.current is not None

    def status(self) -> dict[str, Any]:
        session = self.session.current
        snapshot = self.cache.load()
        prompt = self.session.device_prompt
        failed = self.session.last_login_error
        return {
            "state": self.session.state.value,
            "user": {"name": session.user_name} if session else None,
            "expires_at": datetime.fromtimestamp(session.expires_at, UTC) if session else None,
            "last_sync": snapshot.synced_at,
            "courses_cached": len(snapshot.grades),
            "token_storage": {"kind": self.token_store.kind, "detail": self.token_store.detail},
            "device_login": device_prompt_data(prompt) if prompt is not None else None,
            "last_login_error": {"code": failed.code, "message": failed.message} if failed is not None else None,
            "signed_out_reason": _signed_out_reason(self.session.signed_out_reason),
        }

    def close(self) -> None:
        """Release the HTTP connections (a running sign-in or sync finishes on its own thread)."""
        self.http.close()

    # -- helpers ---------------------------------------------------------------------------
    def _locate_jwks(self) -> tuple[str, str]:
        info = self.oidc.provider()
        return info.issuer, info.jwks_uri

    def _prefetch_jwks(self) -> None:
        # Keep the keys on disk while online, so /grades can check the token's scope offline later.
        try:
            self.jwks.fetch()
        except CoreError as exc:
            log.warning("could not cache the IdP's JWKS after sign-in (%s)", exc.code)


def _signed_out_reason(code: str | None) -> dict[str, str] | None:
    from .session import REVOKED, REVOKED_MESSAGE

    return {"code": code, "message": REVOKED_MESSAGE} if code == REVOKED else None
