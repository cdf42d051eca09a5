"""The login page (docs/configuration.md, "The login surface"). The authorization endpoint shows
it as soon as a sign-in is needed, in its own response (no redirect to /login and second request
first); GET and POST /login show it for a sign-in started here and when a submission must be
answered."""

from __future__ import annotations

from starlette.responses import Response

from campusid.idp.protocol.passkeys import offered
from campusid.idp.web.context import Context
from campusid.idp.web.http import PASSKEY_CSP, page
from campusid.idp.web.sessions import Pending, csrf_token


def client_name(pending: Pending) -> str | None:
    """The application's name, as the authorization request (or the device page) that began the
    interaction found it."""
    if pending.kind not in ("authorize", "device"):
        return None
    return pending.params.get("client_name")


def login_page(
    ctx: Context,
    pending: Pending,
    status: int = 200,
    error: str | None = None,
    username: str = "",
    headers: dict | None = None,
) -> Response:
    """The form for a pending interaction (its CSRF token bound to the interaction's cookie
    value); it always posts to /login."""
    passkeys = offered(ctx.settings.issuer)
    if passkeys:  # the passkey button runs our own script (static/passkey.js)
        headers = {**(headers or {}), "Content-Security-Policy": PASSKEY_CSP}
    return page(
        ctx,
        "login.html",
        status=status,
        headers=headers,
        passkeys=passkeys,
        error=error,
        username=username,
        csrf=csrf_token(ctx, "login", pending.raw_id),
        client_name=client_name(pending),
        action=ctx.path("/login"),
        directory=ctx.directory is not None,
    )
