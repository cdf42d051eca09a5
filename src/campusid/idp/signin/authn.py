"""How a user signed in: the `amr` and `acr` of OIDC Core 2 and a session's `sid`.

`amr` values are RFC 8176's ("pwd" for a password; "otp", "hwk", "swk", "mfa" with a second
factor or a passkey). `acr` names the assurance of the whole sign-in: campusid's own two classes,
`urn:campusid:acr:pwd` for a password alone and `urn:campusid:acr:mfa` when a second factor was
used in this sign-in. `sid` is the session's public identifier (OpenID Connect Back-Channel Logout
1.0 2.1): a fresh random value, never the cookie's, carried in ID tokens and logout tokens.
"""

from __future__ import annotations

from campusid.idp.crypto import new_token
from campusid.idp.store.rows import SignIn

LOCAL, DIRECTORY = "local", "directory"
ACR_PASSWORD = "urn:campusid:acr:pwd"
ACR_MFA = "urn:campusid:acr:mfa"
PASSWORD = "pwd"


def new_sid() -> str:
    """128 random bits (RFC 9700 / the project's baseline for identifiers a client sees)."""
    return new_token(16)


def password_checker(account_source: str | None, directory_configured: bool) -> str:
    """Who checks a typed password: LOCAL (the account's argon2id hash) or DIRECTORY (a bind to
    LDAP / AD, docs/directory.md). A username is looked up locally first, so the local accounts
    (`campusid users add`: admins, service and demo users) keep working beside the directory;
    a name with no account here, or a copy made from the directory, is the directory's to check.
    Without a directory every password is checked locally (a directory copy's hash verifies
    nothing, so it cannot sign in then)."""
    if directory_configured and account_source != LOCAL:
        return DIRECTORY
    return LOCAL


def password_sign_in(user_id: str, now: int) -> SignIn:
    """A sign-in with a password alone, at `now`, in a new session."""
    return SignIn(user_id=user_id, auth_time=now, sid=new_sid(), amr=PASSWORD, acr=ACR_PASSWORD)


def amr_claim(amr: str | None) -> list[str] | None:
    """The ID token's `amr` (a JSON array, OIDC Core 2), or None when not known (older grants)."""
    return amr.split() if amr else None
