"""The rows the store hands out: frozen dataclasses, one per table (fields in the table's column
order, checked when the statements are compiled) and one per joined read of the hot path.

JSON columns arrive decoded. A client row is shared between requests (decoded once per distinct
row, see store.py), so its lists are tuples and its objects read-only mappings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class User:
    id: str
    username: str
    name: str
    given_name: str | None
    family_name: str | None
    email: str | None
    student_number: str | None
    role: str
    password_hash: str
    created_at: int
    disabled_at: int | None = None
    source: str = "local"  # or "directory" (LDAP / AD): its password is the directory's
    external_id: str | None = None  # a directory account's entryUUID / objectGUID

    @property
    def disabled(self) -> bool:
        return self.disabled_at is not None


@dataclass(frozen=True)
class Client:
    """An app and its OIDC registration, as one row (what the OIDC face and the review workflow
    read in one statement). The app's part is every face's (clients): its owner, its review, the
    bundles it asked for and those granted, require_mfa. The registration's (oidc_registrations):
    its secret's digest, redirect URIs, sector, grant types, logout URIs."""

    client_id: str
    name: str
    description: str
    type: str
    state: str
    scopes: tuple[str, ...]
    granted_scopes: tuple[str, ...]
    justifications: Mapping[str, str]
    revision: Mapping | None
    revision_state: str | None
    owner_id: str
    created_at: int
    updated_at: int
    require_mfa: bool = False
    # its OIDC registration
    secret_hash: str | None = None
    redirect_uris: tuple[str, ...] = ()
    sector_identifier_uri: str | None = None
    grant_types: tuple[str, ...] = ()
    granted_grant_types: tuple[str, ...] = ()
    post_logout_redirect_uris: tuple[str, ...] = ()
    backchannel_logout_uri: str | None = None
    # its CAS registration (cas_registrations; the grant types above are its own for a CAS app)
    services: tuple[str, ...] = ()


# The app's part of a Client and its registration's part, by field name (apps.py writes each to its table).
APP_FIELDS = (
    "client_id",
    "name",
    "description",
    "type",
    "state",
    "scopes",
    "granted_scopes",
    "justifications",
    "revision",
    "revision_state",
    "owner_id",
    "created_at",
    "updated_at",
    "require_mfa",
)
OIDC_REGISTRATION_FIELDS = (
    "secret_hash",
    "redirect_uris",
    "sector_identifier_uri",
    "grant_types",
    "granted_grant_types",
    "post_logout_redirect_uris",
    "backchannel_logout_uri",
)
CAS_REGISTRATION_FIELDS = ("services", "grant_types", "granted_grant_types")


@dataclass(frozen=True)
class ClientConfig:
    """What a developer edits: the part of a client a revision replaces."""

    name: str
    description: str
    redirect_uris: tuple[str, ...] | list[str]
    scopes: tuple[str, ...] | list[str]
    justifications: Mapping[str, str]
    sector_identifier_uri: str | None
    grant_types: tuple[str, ...] | list[str] = ()
    post_logout_redirect_uris: tuple[str, ...] | list[str] = ()
    backchannel_logout_uri: str | None = None
    services: tuple[str, ...] | list[str] = ()  # a CAS app's


@dataclass(frozen=True)
class Event:
    """One security event; `id` is None until the database numbers it."""

    id: int | None
    at: int
    type: str
    username: str | None
    client_id: str | None
    ip: str | None
    detail: str


@dataclass(frozen=True)
class ClientEvent:
    """One line of an app's audit log; `id` is None until the database numbers it."""

    id: int | None
    client_id: str
    actor: str | None
    action: str
    from_state: str | None
    to_state: str | None
    feedback: str | None
    at: int


@dataclass(frozen=True)
class SigningKey:
    kid: str
    alg: str
    public_jwk: Mapping
    private_enc: bytes
    created_at: int
    activates_at: int


@dataclass(frozen=True)
class SignIn:
    """Who signed in, when and how: what a session holds and what its codes carry into ID tokens.

    `sid` is the session's public id (OpenID Connect Back-Channel Logout 1.0 2.1), `amr` the
    authentication methods (RFC 8176 values, space-separated: "pwd", "pwd otp"), `acr` the
    authentication context class reference (OIDC Core 2)."""

    user_id: str
    auth_time: int
    sid: str
    amr: str
    acr: str

    @property
    def methods(self) -> list[str]:
        return self.amr.split()


@dataclass(frozen=True)
class Session:
    id_hash: str
    user_id: str
    auth_time: int
    created_at: int
    expires_at: int
    sid: str
    amr: str
    acr: str
    ip: str | None = None
    user_agent: str | None = None
    last_seen_at: int | None = None

    @property
    def sign_in(self) -> SignIn:
        return SignIn(self.user_id, self.auth_time, self.sid, self.amr, self.acr)


@dataclass(frozen=True)
class Interaction:
    """A pending login or consent; `params` is the authorization request (or the page to return to)."""

    id_hash: str
    kind: str
    params: dict
    user_id: str | None
    auth_time: int | None
    created_at: int
    expires_at: int
    sid: str | None = None
    amr: str | None = None
    acr: str | None = None

    @property
    def sign_in(self) -> SignIn | None:
        """The sign-in this interaction continues (after the login form), else None."""
        if self.user_id is None or self.auth_time is None or self.sid is None:
            return None
        return SignIn(self.user_id, self.auth_time, self.sid, self.amr or "", self.acr or "")


@dataclass(frozen=True)
class Grant:
    """One issued authorization code and what it binds (RFC 6749 4.1.2, RFC 7636 4.4)."""

    id: str
    code_hash: str | None
    client_id: str
    user_id: str
    redirect_uri: str
    code_challenge: str
    nonce: str | None
    scope: str
    auth_time: int
    created_at: int
    code_expires_at: int
    code_used_at: int | None
    revoked_at: int | None
    sid: str | None = None
    amr: str | None = None
    acr: str | None = None


@dataclass(frozen=True)
class DeviceCode:
    """One device authorization request (RFC 8628 3.1-3.2) and where it stands: `status` is
    pending, approved, denied or redeemed; `user_id`, `auth_time`, `sid`, `amr` and `acr` the
    sign-in of whoever decided; `poll_interval` the seconds the device must leave between polls
    (grown by slow_down, 3.5) and `polled_at_ms` when it last polled, in milliseconds."""

    id: str
    device_code_hash: str
    user_code_hash: str
    client_id: str
    scope: str
    status: str
    user_id: str | None
    auth_time: int | None
    sid: str | None
    amr: str | None
    acr: str | None
    created_at: int
    expires_at: int
    poll_interval: int
    polled_at_ms: int | None
    decided_at: int | None
    redeemed_at: int | None


@dataclass(frozen=True)
class RefreshToken:
    token_hash: str
    grant_id: str
    created_at: int
    expires_at: int
    used_at: int | None


@dataclass(frozen=True)
class AuthorizeContext:
    """The authorization endpoint's one read: the client, this browser's live session's sign-in
    (None without one) and that user's remembered consent for the client."""

    client: Client
    session: SignIn | None
    consent_scope: str | None


@dataclass(frozen=True)
class LoginContext:
    """The login POST's one read: the live interaction, the user the form names (None when no
    such user) and, for an authorization request, its client (None when gone) with that user's
    remembered consent."""

    interaction: Interaction
    user_id: str | None
    password_hash: str | None
    disabled_at: int | None
    source: str | None
    role: str | None
    has_factor: bool | None
    client: Client | None
    consent_scope: str | None


@dataclass(frozen=True)
class TokenSubject:
    """A grant that still stands, with its user's claims: what userinfo and the records API need."""

    grant_id: str
    client_id: str
    scope: str
    user_id: str
    name: str
    given_name: str | None
    family_name: str | None
    email: str | None
    student_number: str | None


@dataclass(frozen=True)
class Factor:
    """A second factor: `kind` "totp" (its secret sealed in `secret_enc`) or "passkey"; usable
    once `confirmed_at` is set."""

    id: str
    user_id: str
    kind: str
    label: str
    secret_enc: bytes | None
    credential_id: str | None
    public_key: bytes | None
    sign_count: int
    last_step: int | None
    created_at: int
    confirmed_at: int | None
    last_used_at: int | None


@dataclass(frozen=True)
class ConnectedApp:
    """An app a user consented to or that holds a live grant for them (the account page)."""

    client_id: str
    name: str
    scope: str


@dataclass(frozen=True)
class Ended:
    """What ended with a session or an account: the user, the sessions' sids and the grants
    revoked with them (id, client_id, sid) — what the apps holding them are to be told."""

    user_id: str
    sids: tuple[str, ...]
    grants: tuple[tuple[str, str, str | None], ...]


@dataclass(frozen=True)
class CasTicket:
    """A CAS ticket as stored (cas_tickets): its hash, kind (ST, PT, PGT), app, the exact service it
    is bound to, the sign-in it was issued in, the proxies before it (most recent first)."""

    id_hash: str
    kind: str
    client_id: str
    service: str
    user_id: str
    sid: str
    auth_time: int
    new_login: bool
    proxies: tuple[str, ...] | list[str]
    created_at: int
    expires_at: int
    session_expires_at: int
    used_at: int | None = None


@dataclass(frozen=True)
class CasPerson:
    """What a CAS validation releases about the ticket's user (by the app's granted bundles)."""

    username: str
    name: str
    given_name: str | None
    family_name: str | None
    email: str | None
    student_number: str | None


@dataclass(frozen=True)
class ConsumedTicket:
    """A CAS ticket this call consumed, with its user and its app (None when gone): what a
    validation reads in its one statement."""

    ticket: CasTicket
    person: CasPerson | None
    client: Client | None


@dataclass(frozen=True)
class CasLoginContext:
    """/cas/login's one read: the active CAS apps with a service at the request's origin (each
    (path, client)), and this browser's live session."""

    services: tuple[tuple[str, Client], ...]
    session: Session | None


@dataclass(frozen=True)
class CasValidation:
    """A ticket validated in a session (cas_validations): where single logout will tell."""

    client_id: str
    user_id: str
    sid: str
    service: str
    ticket_sealed: str
    validated_at: int
    expires_at: int
