"""My grades: the routes of the example web client.

    GET  /          signed out: a "Sign in with campusid" button; signed in: name, grades table, GPA
    GET  /login     starts a fresh login (new state, nonce and PKCE verifier in the server session)
    GET  /callback  checks the authorization response and exchanges the code on this server
    POST /logout    revokes the access token, ends the session and signs out at campusid too
                    (OpenID Connect RP-Initiated Logout 1.0), which sends the browser back to /
    POST /backchannel-logout  campusid says a session ended (Back-Channel Logout 1.0): the logout
                    token is verified and every local session of that campusid session ends

Any failure at /callback ends the login: the pending request is removed from the session before
anything is checked, so a code is never exchanged twice and a replayed callback URL finds nothing
to complete (a code is single use: RFC 6749 section 4.1.2). The page says "Login failed — start
again" and its button starts a new login; it never retries.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import jinja2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from campusid import i18n
from campusid.i18n import N_
from campusid.oidc_client import (
    AsyncOIDCClient,
    AuthorizationErrorResponse,
    AuthorizationRequest,
    IDTokenError,
    IssuerMismatchError,
    LogoutTokenError,
    OIDCError,
    StateMismatchError,
    TokenEndpointError,
)

from .sessions import COOKIE, SessionStore

log = logging.getLogger("examples.web_client")
HERE = Path(__file__).parent
SCOPE = "openid profile grades.read"
PENDING_LOGIN_SECONDS = 600
SIGNED_OUT_ELSEWHERE = N_("You signed out at campusid, so you are signed out here too.")


@dataclass(frozen=True)
class Settings:
    issuer: str
    client_id: str
    client_secret: str = ""
    port: int = 8001
    host: str = "127.0.0.1"
    records_url: str = ""

    @property
    def redirect_uri(self) -> str:
        return f"http://{self.host}:{self.port}/callback"

    @property
    def home_url(self) -> str:
        """Where campusid sends the browser back after signing out (registered as a post-logout URI)."""
        return f"http://{self.host}:{self.port}/"

    @property
    def grades_url(self) -> str:
        return self.records_url or self.issuer.rstrip("/") + "/records/v1/grades"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """CAMPUSID_ISSUER, WEB_CLIENT_ID, WEB_CLIENT_SECRET, WEB_CLIENT_PORT, WEB_CLIENT_RECORDS_URL."""
        env = os.environ if env is None else env
        return cls(
            issuer=env.get("CAMPUSID_ISSUER", "http://127.0.0.1:8000"),
            client_id=env.get("WEB_CLIENT_ID", "campusid-web-demo"),
            client_secret=env.get("WEB_CLIENT_SECRET", ""),
            port=int(env.get("WEB_CLIENT_PORT", "8001")),
            records_url=env.get("WEB_CLIENT_RECORDS_URL", ""),
        )

    def __repr__(self) -> str:  # never shows the secret
        return f"Settings(issuer={self.issuer!r}, client_id={self.client_id!r}, port={self.port})"


def gpa(grades: list[dict[str, Any]]) -> tuple[float | None, float]:
    """Credit-weighted grade point average and the total credits."""
    credits = sum(float(g["credits"]) for g in grades)
    if credits <= 0:
        return None, 0.0
    return round(sum(float(g["credits"]) * float(g["grade_point"]) for g in grades) / credits, 2), credits


def failure_reason(exc: OIDCError | None) -> str:
    """A human sentence for a failed callback (shown in the reader's language); no code, token or
    verifier ever appears in it."""
    if exc is None:
        return N_(
            "No sign-in is in progress in this browser: this sign-in response was already used, "
            "has expired, or was started elsewhere."
        )
    if isinstance(exc, StateMismatchError):
        return N_("The sign-in response does not belong to the sign-in started in this browser.")
    if isinstance(exc, IssuerMismatchError):
        return N_("The sign-in response did not come from the expected identity provider.")
    if isinstance(exc, AuthorizationErrorResponse):
        if exc.error == "access_denied":
            return N_("The sign-in was cancelled or access was not granted.")
        return N_("The identity provider could not complete the sign-in (%(error)s).", error=exc.error)
    if isinstance(exc, IDTokenError):
        return N_("The identity token from the provider could not be verified for this application.")
    if isinstance(exc, TokenEndpointError):
        return N_("The sign-in could not be completed with the identity provider.")
    return N_("The sign-in response could not be verified.")


def page_language(request: Request) -> str:
    """The catalogue the browser's Accept-Language prefers (the one campusid uses too)."""
    return i18n.accept_language(request.headers.get("accept-language")) or i18n.DEFAULT_LOCALE


def templates_in(locale: str) -> jinja2.Environment:
    """The templates with Jinja2's i18n extension and campusid's catalogue of `locale`: marked
    text in the page's language, marked messages (N_) translated where they are printed."""
    tr = i18n.translator(locale)
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        extensions=["jinja2.ext.i18n"],
        finalize=tr.text,
    )
    env.policies["ext.i18n.trimmed"] = True
    env.install_gettext_translations(tr.catalogue, newstyle=True)
    env.globals["lang_tag"] = tr.tag
    return env


def create_app(settings: Settings, http: httpx.AsyncClient | None = None) -> Starlette:
    """Build the app. ``http`` lets a caller share (or wrap) the transport to the identity provider."""
    if not settings.client_secret:
        raise ValueError("WEB_CLIENT_SECRET is required: this is a confidential client")
    templates = {locale: templates_in(locale) for locale in i18n.locales()}
    sessions = SessionStore()
    secure_cookie = urlsplit(settings.redirect_uri).scheme == "https"
    idp_origin = "{0.scheme}://{0.netloc}".format(urlsplit(settings.issuer))
    security_headers = {
        "Cache-Control": "no-store",
        "Referrer-Policy": "no-referrer",
        "X-Frame-Options": "DENY",
        "X-Content-Type-Options": "nosniff",
        # form-action covers the redirect to the identity provider after the sign-in button
        "Content-Security-Policy": (
            f"default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self' {idp_origin}; "
            "frame-ancestors 'none'; base-uri 'none'"
        ),
    }
    state: dict[str, Any] = {}

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        owns = http is None
        transport = http if http is not None else httpx.AsyncClient(timeout=10)
        state["http"] = transport
        state["oidc"] = AsyncOIDCClient(
            settings.issuer,
            settings.client_id,
            settings.client_secret,
            settings.redirect_uri,
            http=transport,
        )
        try:
            yield
        finally:
            if owns:
                await transport.aclose()

    def page(request: Request, template: str, status: int = 200, **context: Any) -> Response:
        body = templates[page_language(request)].get_template(template).render(**context)
        return Response(body, status, media_type="text/html; charset=utf-8", headers=security_headers)

    def session_of(request: Request) -> tuple[str | None, dict[str, Any] | None]:
        sid = request.cookies.get(COOKIE)
        return sid, sessions.get(sid)

    def set_cookie(response: Response, sid: str) -> Response:
        response.set_cookie(COOKIE, sid, httponly=True, samesite="lax", secure=secure_cookie, path="/")
        return response

    def failed(request: Request, exc: OIDCError | None) -> Response:
        return page(request, "login_failed.html", 400, reason=failure_reason(exc))

    async def home(request: Request) -> Response:
        sid, data = session_of(request)
        user = data.get("user") if data else None
        if not user:
            return page(request, "home.html", notice=data.pop("notice", None) if data else None)
        try:
            r = await state["http"].get(
                settings.grades_url,
                headers={"Authorization": f"Bearer {user['access_token']}"},  # i18n: ignore (a header)
            )
        except httpx.HTTPError:
            return page(request, "problem.html", 502, message=N_("The records service cannot be reached right now."))
        if r.status_code == 401:
            # the token expired or was revoked: the session ends, the student signs in again
            sessions.drop(sid)
            return page(request, "home.html", notice=N_("Your session has ended. Please sign in again."))
        if r.status_code == 403:
            message = N_("campusid did not grant this application access to your grades.")
            return page(request, "problem.html", 403, message=message)
        if r.status_code != 200:
            return page(request, "problem.html", 502, message=N_("The records service answered with an error."))
        body = r.json()
        grades = body.get("grades", [])
        average, credits = gpa(grades)
        return page(
            request,
            "grades.html",
            name=body.get("student", {}).get("name", ""),
            grades=grades,
            gpa=average,
            credits=credits,
            csrf=data["csrf"],
        )

    async def login(request: Request) -> Response:
        sid, data = session_of(request)
        if data is None:
            sid, data = sessions.new()
        try:  # campusid's pages in the language of ours (OpenID Connect Core 1.0 3.1.2.1 ui_locales)
            locale = i18n.tag_of(page_language(request))
            req = await state["oidc"].authorization_request(scope=SCOPE, ui_locales=locale)
        except OIDCError as exc:
            log.warning("cannot start a login: %s", type(exc).__name__)
            message = N_("The identity provider cannot be reached right now.")
            return page(request, "problem.html", 502, message=message)
        data["pending"] = req  # replaces any earlier unfinished login: only the newest one can complete
        return set_cookie(RedirectResponse(req.url, 303), sid)

    async def callback(request: Request) -> Response:
        sid, data = session_of(request)
        pending: AuthorizationRequest | None = data.pop("pending", None) if data else None
        if pending is None or time.time() - pending.created_at.timestamp() > PENDING_LOGIN_SECONDS:
            return failed(request, None)
        try:
            tokens = await state["oidc"].handle_callback(pending, str(request.url))
        except OIDCError as exc:
            log.info("login failed: %s", type(exc).__name__)
            return failed(request, exc)
        data.pop("user", None)
        data["user"] = {
            "sub": tokens.id_claims["sub"],
            "sid": tokens.id_claims.get("sid"),  # campusid's session: a back-channel logout names it
            "access_token": tokens.access_token,
            "id_token": tokens.id_token,  # the hint of a later RP-initiated logout
        }
        new_sid = sessions.rotate(sid, data)
        return set_cookie(RedirectResponse("/", 303), new_sid)

    async def logout(request: Request) -> Response:
        sid, data = session_of(request)
        form = await request.form()
        if data is None or form.get("csrf") != data.get("csrf"):
            return RedirectResponse("/", 303)
        user = data.get("user")
        sessions.drop(sid)
        target = "/"
        if user:
            try:
                await state["oidc"].revoke(user["access_token"], "access_token")
            except OIDCError as exc:
                log.warning("token revocation failed: %s", type(exc).__name__)
            try:  # sign out at campusid too; it sends the browser back to our home page
                target = await state["oidc"].logout_url(
                    id_token_hint=user.get("id_token"),
                    post_logout_redirect_uri=settings.home_url,
                    ui_locales=i18n.tag_of(page_language(request)),
                )
            except OIDCError as exc:
                log.warning("no RP-initiated logout: %s", type(exc).__name__)
        response = RedirectResponse(target, 303)
        response.delete_cookie(COOKIE, path="/")
        return response

    async def backchannel_logout(request: Request) -> Response:
        """Back-Channel Logout 1.0 2.5 and 2.8: 200 once the sessions are ended, 400 with an error
        for a token that does not verify (nothing ends then)."""
        headers = {"Cache-Control": "no-store"}
        try:
            form = await request.form(max_files=0, max_fields=10)
            token = form.get("logout_token")
            if not isinstance(token, str) or len(token) > 8192:
                raise LogoutTokenError("no logout_token")
            claims = await state["oidc"].validate_logout_token(token)
        except (LogoutTokenError, ValueError, UnicodeDecodeError) as exc:
            log.info("back-channel logout refused: %s", exc)
            body = b'{"error":"invalid_request","error_description":"the logout token is not valid"}'
            return Response(body, 400, media_type="application/json", headers=headers)
        except OIDCError as exc:  # the provider's keys cannot be fetched now: campusid retries
            log.warning("back-channel logout not checked now: %s", type(exc).__name__)
            return Response(b'{"error":"temporarily_unavailable"}', 503, media_type="application/json", headers=headers)
        ended = sessions.end_signed_in(sid=claims.get("sid"), sub=claims.get("sub"), notice=SIGNED_OUT_ELSEWHERE)
        log.info("back-channel logout: %d local session(s) ended", ended)
        return Response(status_code=200, headers=headers)

    async def favicon(request: Request) -> Response:
        return Response(status_code=204)

    return Starlette(
        routes=[
            Route("/favicon.ico", favicon),
            Route("/", home),
            Route("/login", login),
            Route("/callback", callback),
            Route("/logout", logout, methods=["POST"]),
            Route("/backchannel-logout", backchannel_logout, methods=["POST"]),
            Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        ],
        lifespan=lifespan,
    )


def main() -> None:
    import uvicorn

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    settings = Settings.from_env()
    if not settings.client_secret:
        print(
            "error: set WEB_CLIENT_SECRET to the secret `campusid demo` printed for campusid-web-demo "
            "(see examples/web_client/README.md)",
            file=sys.stderr,
        )
        raise SystemExit(2)
    url = f"http://{settings.host}:{settings.port}/"
    print(f"My grades on {url} (issuer {settings.issuer})", flush=True)  # i18n: ignore (an operator's console)
    # No access log: the callback's query string carries the authorization code.
    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        access_log=False,
        proxy_headers=False,
        log_level="warning",
    )
