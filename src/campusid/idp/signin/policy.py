"""The one place that decides whether a sign-in needs a second factor (docs/mfa.md).

Three things can ask for one: the person's role (`CAMPUSID_MFA_REQUIRED_ROLES`, admins by
default), the app (`apps approve --require-mfa`) and the request itself (OIDC `acr_values`
asking for `urn:campusid:acr:mfa`; SAML's REFEDS MFA context later). A person who has a factor
always uses it. Every face states its app's and its request's part as an `AppPolicy`; the login
page, the authorization endpoint, the consoles and the account page all ask the functions here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from campusid.idp.signin.authn import ACR_MFA
from campusid.idp.signin.pending import ENROL, VERIFY
from campusid.idp.store.rows import SignIn

NONE = "none"  # after the password, nothing more is needed
__all__ = ["ENROL", "NONE", "VERIFY", "AppPolicy", "acr_requested", "role_requires", "second_factor_step"]


@dataclass(frozen=True)
class AppPolicy:
    """What the app and the request ask of a sign-in: `app_requires_mfa` (its review said so),
    `request_asks_mfa` (the request asked for a second factor)."""

    app_requires_mfa: bool = False
    request_asks_mfa: bool = False

    @property
    def wants_mfa(self) -> bool:
        return self.app_requires_mfa or self.request_asks_mfa


NO_POLICY = AppPolicy()


def acr_requested(acr_values: str | None) -> bool:
    """OIDC Core 3.1.2.1 `acr_values`: space-separated, in order of preference; campusid honours
    `urn:campusid:acr:mfa` wherever it appears, and has nothing weaker to offer for the others."""
    return bool(acr_values) and ACR_MFA in acr_values.split()


def role_requires(role: str, roles_required: Iterable[str]) -> bool:
    """The person's role must use a second factor (CAMPUSID_MFA_REQUIRED_ROLES)."""
    return role in roles_required


def second_factor_step(*, has_factor: bool, role: str, roles_required: Iterable[str], policy: AppPolicy) -> str:
    """After a correct password: VERIFY when the person has a factor (one who has one always uses
    it), else ENROL when the role, the app or the request asks for one, else NONE."""
    if has_factor:
        return VERIFY
    if role_requires(role, roles_required) or policy.wants_mfa:
        return ENROL
    return NONE


def session_satisfies(sign_in: SignIn, policy: AppPolicy) -> bool:
    """Whether a live session may answer a request without a new sign-in: one that needs a second
    factor needs a session that used one (OIDC Core 3.1.2.3: the OP re-authenticates when the
    session does not meet the request)."""
    return not policy.wants_mfa or sign_in.acr == ACR_MFA


def session_meets_role(sign_in: SignIn, role: str, roles_required: Iterable[str]) -> bool:
    """A person whose role must use a second factor may use this server's own pages (the consoles,
    the account page) only in a session that used one."""
    return not role_requires(role, roles_required) or sign_in.acr == ACR_MFA
