"""The pages every face shares, as routes: signing in (password, second factor, passkeys), the one
consent page, the account page, the language switch and the home page."""

from __future__ import annotations

from starlette.routing import Route

from campusid.idp.context import Context
from campusid.idp.pages import account, consent, language, login, passkeys, second_factor

# Run by every password sign-in: reached without the router (idp/app.py).
HOT = {("POST", "/login")}


def install(ctx: Context) -> None:
    """The core's own kind of sign-in: one begun on this server, which returns to its page."""
    ctx.continuations.register(login.LocalSignIn())


def routes() -> list[Route]:
    return [
        Route("/login", login.login_get, methods=["GET"]),
        Route("/login", login.login_post, methods=["POST"]),
        Route("/login/mfa", second_factor.mfa_get, methods=["GET"]),
        Route("/login/mfa", second_factor.mfa_post, methods=["POST"]),
        Route("/passkey/options", passkeys.options_post, methods=["POST"]),
        Route("/passkey", passkeys.passkey_post, methods=["POST"]),
        Route("/consent", consent.consent_get, methods=["GET"]),
        Route("/consent", consent.consent_post, methods=["POST"]),
        Route("/account", account.account_get, methods=["GET"]),
        Route("/account/sessions/end", account.end_session_post, methods=["POST"]),
        Route("/account/sessions/others", account.signout_others_post, methods=["POST"]),
        Route("/account/apps/revoke", account.revoke_app_post, methods=["POST"]),
        Route("/account/security/totp", second_factor.totp_get, methods=["GET"]),
        Route("/account/security/totp", second_factor.totp_post, methods=["POST"]),
        Route("/account/security/factor/remove", account.remove_factor_post, methods=["POST"]),
        Route("/account/security/recovery-codes", account.recovery_codes_post, methods=["POST"]),
        Route("/account/security/password", account.password_post, methods=["POST"]),
        Route("/language", language.language_get, methods=["GET"]),
        Route("/", login.home, methods=["GET"]),
    ]
