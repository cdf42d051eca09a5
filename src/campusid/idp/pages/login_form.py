"""The login page (docs/configuration.md, "The login surface"). A face that needs a sign-in shows it
in its own response (the authorization endpoint: no redirect to /login and second request first);
GET and POST /login show it for a sign-in begun elsewhere and when a submission must be answered.
Its form's CSRF token names the pending sign-in it belongs to (web/browser.py)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from campusid.idp.context import Context
from campusid.idp.signin.passkeys import offered
from campusid.idp.signin.pending import PendingSignIn
from campusid.idp.web.browser import pending_csrf, with_handle
from campusid.idp.web.http import PASSKEY_CSP
from campusid.idp.web.render import page

PURPOSE = "login"


def login_page(
    ctx: Context,
    request: Request,
    pending: PendingSignIn,
    status: int = 200,
    error: str | None = None,
    username: str = "",
    headers: dict | None = None,
) -> Response:
    """The form for a pending sign-in, in its language; it posts to /login, naming the sign-in."""
    passkeys = offered(ctx.settings.issuer)
    if passkeys:  # the passkey button runs our own script (static/passkey.js)
        headers = {**(headers or {}), "Content-Security-Policy": PASSKEY_CSP}
    return page(
        ctx,
        request,
        "login.html",
        status=status,
        headers=headers,
        at=pending,
        passkeys=passkeys,
        error=error,
        username=username,
        csrf=pending_csrf(ctx, PURPOSE, pending),
        client_name=pending.client_name,
        action=with_handle(ctx.path("/login"), pending),
        directory=ctx.directory is not None,
    )
