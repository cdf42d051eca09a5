"""The schema, one for SQLite and PostgreSQL. Times are integer Unix seconds (UTC)."""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
    func,
)

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(column_0_label)s",
        "uq": "uq_%(table_name)s_%(column_0_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

users = Table(
    "users",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("username", String(64), nullable=False, unique=True),
    Column("name", String(200), nullable=False),
    Column("given_name", String(100)),
    Column("family_name", String(100)),
    Column("email", String(254)),
    Column("student_number", String(32), unique=True),
    Column("role", String(16), nullable=False),
    Column("password_hash", String(255), nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("disabled_at", BigInteger),  # set: the account cannot sign in (campusid users disable)
    # Where the account comes from: "local" (campusid users add) or "directory" (made at its first
    # sign-in against LDAP / AD, keyed by the entry's stable identifier: entryUUID / objectGUID).
    Column("source", String(16), nullable=False, server_default="local", index=True),
    Column("external_id", String(255)),
    # a unique index, not a constraint: SQLite adds it without rebuilding the table others reference
    Index("ix_users_external_id", "external_id", unique=True),
)

# An app (a "client application", whatever protocol it speaks): who owns it, where its review
# stands, the bundles (scopes) it asked for and those its review granted. What a protocol needs
# of it is its registration, in a table of that face's (OIDC's: oidc_registrations).
clients = Table(
    "clients",
    metadata,
    Column("client_id", String(64), primary_key=True),
    Column("name", String(200), nullable=False),
    Column("description", Text, nullable=False, default=""),
    Column("type", String(16), nullable=False),  # which face's registration it has: web, native (OIDC)
    Column("state", String(16), nullable=False),
    Column("scopes", JSON, nullable=False),
    Column("granted_scopes", JSON, nullable=False),
    Column("justifications", JSON, nullable=False),
    Column("revision", JSON),
    Column("revision_state", String(16)),
    Column("owner_id", String(32), ForeignKey("users.id"), nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    # Approved with --require-mfa: every sign-in to this app uses a second factor (docs/mfa.md).
    Column("require_mfa", Boolean, nullable=False, server_default=false()),
)

# An app's OpenID Connect registration (web and native apps): its secret's digest (web apps), the
# redirect URIs its requests must name exactly, its sector (OIDC Core 8.1), the grant types beyond
# the code flow and refresh it asked for and those its review granted (`device_code`, RFC 8628),
# and single logout: where the browser may go after RP-initiated logout (each exactly as
# registered), and where logout tokens are POSTed (OpenID Connect Back-Channel Logout 1.0 2.2).
oidc_registrations = Table(
    "oidc_registrations",
    metadata,
    Column("client_id", String(64), ForeignKey("clients.client_id"), primary_key=True),
    Column("secret_hash", String(64)),
    Column("redirect_uris", JSON, nullable=False),
    Column("sector_identifier_uri", String(2000)),
    Column("grant_types", JSON, nullable=False, server_default="[]"),
    Column("granted_grant_types", JSON, nullable=False, server_default="[]"),
    Column("post_logout_redirect_uris", JSON, nullable=False, server_default="[]"),
    Column("backchannel_logout_uri", String(2000)),
)

# An app's CAS registration (Apereo CAS Protocol 3.0.3, docs/cas.md): the service URLs its tickets
# may be issued for (each a prefix: idp/cas/rules/services.py), and the grant types beyond service
# tickets it asked for and its review granted (`cas_proxy`: proxy-granting tickets, CAS 3.0 2.5.4).
cas_registrations = Table(
    "cas_registrations",
    metadata,
    Column("client_id", String(64), ForeignKey("clients.client_id"), primary_key=True),
    Column("services", JSON, nullable=False),
    Column("grant_types", JSON, nullable=False, server_default="[]"),
    Column("granted_grant_types", JSON, nullable=False, server_default="[]"),
)

# The registered services of CAS apps by origin (`https://host:port`, lower-case ASCII, port always
# written), so /cas/login finds the apps a `service` may belong to with one index lookup; the path
# of each (normalised) is matched at a segment boundary by idp/cas/rules/services.py.
cas_services = Table(
    "cas_services",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("origin", String(300), nullable=False, index=True),
    Column("path", String(2048), nullable=False),
    Column("client_id", String(64), ForeignKey("clients.client_id"), nullable=False, index=True),
)


# An app with its OIDC registration as one row, in the field order of rows.Client (checked when the
# statements are compiled): what every read of an app returns. An outer join: an app of another
# face has no OIDC registration.
def _registration_column(name: str):
    """A column both faces' registrations have (the grant types): the app's own face's value."""
    return func.coalesce(oidc_registrations.c[name], cas_registrations.c[name], type_=JSON).label(name)


CLIENT_COLUMNS = (
    *clients.c,
    *(
        oidc_registrations.c[name] if name not in ("grant_types", "granted_grant_types") else _registration_column(name)
        for name in (
            "secret_hash",
            "redirect_uris",
            "sector_identifier_uri",
            "grant_types",
            "granted_grant_types",
            "post_logout_redirect_uris",
            "backchannel_logout_uri",
        )
    ),
    cas_registrations.c.services,
)
CLIENT_JOIN = clients.outerjoin(oidc_registrations, oidc_registrations.c.client_id == clients.c.client_id).outerjoin(
    cas_registrations, cas_registrations.c.client_id == clients.c.client_id
)

client_events = Table(
    "client_events",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("client_id", String(64), ForeignKey("clients.client_id"), nullable=False, index=True),
    Column("actor", String(64)),
    Column("action", String(32), nullable=False),
    Column("from_state", String(16)),
    Column("to_state", String(16)),
    Column("feedback", Text),
    Column("at", BigInteger, nullable=False),
)

signing_keys = Table(
    "signing_keys",
    metadata,
    Column("kid", String(64), primary_key=True),
    Column("alg", String(8), nullable=False),
    Column("public_jwk", JSON, nullable=False),
    Column("private_enc", LargeBinary, nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("activates_at", BigInteger, nullable=False),
)

sessions = Table(
    "sessions",
    metadata,
    Column("id_hash", String(64), primary_key=True),
    Column("user_id", String(32), ForeignKey("users.id"), nullable=False, index=True),
    Column("auth_time", BigInteger, nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("expires_at", BigInteger, nullable=False),
    # How the user signed in (RFC 8176 `amr` values, space-separated; the `acr`), and the session's
    # public id (`sid` in ID tokens and logout tokens: OpenID Connect Back-Channel Logout 1.0 2.1).
    # The cookie's value never leaves the browser; `sid` is a separate random value.
    Column("sid", String(64), nullable=False, unique=True),
    Column("amr", String(64), nullable=False, server_default="pwd"),
    Column("acr", String(64), nullable=False, server_default="urn:campusid:acr:pwd"),
    # What /account shows of a session: the browser it signed in from, and when it was last used.
    Column("ip", String(64)),
    Column("user_agent", String(200)),
    Column("last_seen_at", BigInteger),
)

interactions = Table(
    "interactions",
    metadata,
    Column("id_hash", String(64), primary_key=True),
    Column("kind", String(16), nullable=False),
    Column("params", JSON, nullable=False),
    Column("user_id", String(32)),
    Column("auth_time", BigInteger),
    Column("created_at", BigInteger, nullable=False),
    Column("expires_at", BigInteger, nullable=False),
    Column("sid", String(64)),  # with user_id: the sign-in this interaction continues
    Column("amr", String(64)),
    Column("acr", String(64)),
)

grants = Table(
    "grants",
    metadata,
    Column("id", String(32), primary_key=True),  # time-ordered (protocol/ids.py): inserted at the right edge
    Column("code_hash", String(64), unique=True),
    Column("client_id", String(64), nullable=False),
    Column("user_id", String(32), nullable=False),
    Column("redirect_uri", String(2000), nullable=False),
    Column("code_challenge", String(128), nullable=False),
    Column("nonce", String(512)),
    Column("scope", String(1000), nullable=False),
    Column("auth_time", BigInteger, nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("code_expires_at", BigInteger, nullable=False),
    Column("code_used_at", BigInteger),
    Column("revoked_at", BigInteger),
    # The sign-in the grant was issued in: its session (every grant of a session ends with it) and
    # how the user authenticated, carried into the ID token (`sid`, `amr`, `acr`).
    Column("sid", String(64)),
    Column("amr", String(64)),
    Column("acr", String(64)),
)

refresh_tokens = Table(
    "refresh_tokens",
    metadata,
    Column("token_hash", String(64), primary_key=True),
    Column("grant_id", String(32), ForeignKey("grants.id"), nullable=False, index=True),
    Column("created_at", BigInteger, nullable=False),
    Column("expires_at", BigInteger, nullable=False),
    Column("used_at", BigInteger),
)

consents = Table(
    "consents",
    metadata,
    Column("user_id", String(32), primary_key=True),
    Column("client_id", String(64), primary_key=True),
    Column("scope", String(1000), nullable=False),
    Column("updated_at", BigInteger, nullable=False),
)

grades = Table(
    "grades",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("student_number", String(32), nullable=False, index=True),
    Column("course_code", String(32), nullable=False),
    Column("course_name", String(200), nullable=False),
    Column("term", String(32), nullable=False),
    Column("credits", Float, nullable=False),
    Column("score", Float, nullable=False),
    Column("grade_point", Float, nullable=False),
    UniqueConstraint("student_number", "course_code", "term", name="uq_grades_student_course_term"),
)

# Security events (the audit trail of sign-ins, tokens, consents, keys and apps), newest first.
# Numbered in insertion order, so a page of events is a range of ids (keyset paging); each filter
# of `campusid events list` and the console has an index that serves it in that order.
events = Table(
    "events",
    metadata,
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
    Column("at", BigInteger, nullable=False),
    Column("type", String(32), nullable=False),
    Column("username", String(64)),
    Column("client_id", String(64)),
    Column("ip", String(64)),
    Column("detail", String(500), nullable=False),
)

# Device authorization requests (RFC 8628): what a device asked for, whether the person who
# entered its user code allowed it, and the polling pace. Both codes are kept only as digests:
# the device code (256 random bits) as SHA-256, the user code (~2^34 combinations, so a plain
# digest could be reversed by trying them all) as an HMAC under a key derived from the secret key.
device_codes = Table(
    "device_codes",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("device_code_hash", String(64), nullable=False, unique=True),
    Column("user_code_hash", String(64), nullable=False, unique=True),
    Column("client_id", String(64), nullable=False),
    Column("scope", String(1000), nullable=False),
    Column("status", String(16), nullable=False),
    # Once decided: who, and the sign-in they decided in (its session's sid, amr and acr go on
    # into the grant and its ID tokens, and the grant ends with that session).
    Column("user_id", String(32)),
    Column("auth_time", BigInteger),
    Column("sid", String(64)),
    Column("amr", String(64)),
    Column("acr", String(64)),
    Column("created_at", BigInteger, nullable=False),
    Column("expires_at", BigInteger, nullable=False),
    Column("poll_interval", Integer, nullable=False),
    Column("polled_at_ms", BigInteger),
    Column("decided_at", BigInteger),
    Column("redeemed_at", BigInteger),
)

# A user's second factors (docs/mfa.md): a TOTP secret (RFC 6238), sealed under the secret key
# like the signing keys, or a passkey (WebAuthn credential id, public key, signature counter).
# A TOTP factor is usable once confirmed with a first code; `last_step` is the last time step
# accepted, so a code is accepted once (the update that records it is conditional).
factors = Table(
    "factors",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("user_id", String(32), ForeignKey("users.id"), nullable=False, index=True),
    Column("kind", String(16), nullable=False),
    Column("label", String(100), nullable=False),
    Column("secret_enc", LargeBinary),
    Column("credential_id", String(1400), unique=True),
    Column("public_key", LargeBinary),
    Column("sign_count", BigInteger, nullable=False, server_default="0"),
    Column("last_step", BigInteger),
    Column("created_at", BigInteger, nullable=False),
    Column("confirmed_at", BigInteger),
    Column("last_used_at", BigInteger),
)

# Single-use recovery codes, kept only as HMAC-SHA256 digests under a key derived from the secret key.
recovery_codes = Table(
    "recovery_codes",
    metadata,
    Column("user_id", String(32), ForeignKey("users.id"), primary_key=True),
    Column("code_hash", String(64), primary_key=True),
    Column("created_at", BigInteger, nullable=False),
    Column("used_at", BigInteger),
)

# Back-channel logout notices waiting to be delivered (OpenID Connect Back-Channel Logout 1.0):
# written in the transaction that ends the session, claimed by one worker at a time (`claim`,
# with `next_at` pushed past the attempt), deleted once an app answers 2xx, marked `failed` after
# the last attempt. `next_at` is the index every worker's poll reads.
logout_notices = Table(
    "logout_notices",
    metadata,
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
    Column("client_id", String(64), nullable=False),
    Column("user_id", String(32), nullable=False),
    Column("sid", String(64), nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("next_at", BigInteger, nullable=False),
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("claim", String(32)),
    Column("failed_at", BigInteger),
    # Whose notice it is (the face that delivers it: "oidc" back-channel logout, "cas" single logout),
    # and for a face that delivers per ticket, where to (a CAS service URL) and the ticket it ends
    # (the SessionIndex, sealed under the secret key: idp/cas/slo.py).
    Column("face", String(16), nullable=False, server_default="oidc"),
    Column("target", String(2048)),
    Column("session_index", String(255)),
)

# CAS tickets (Apereo CAS Protocol 3.0.3 3.1-3.4): service tickets (ST), proxy tickets (PT) and
# proxy-granting tickets (PGT), kept only as the SHA-256 of the ticket. An ST or PT is used once:
# `used_at` is set by the one conditional UPDATE that consumes it (idp/store/cas.py). Each is bound
# to its app, the exact service string it was issued for (a PT: its targetService; a PGT: its
# pgtUrl), the SSO session it was issued in (it ends with it) and the proxies before it.
cas_tickets = Table(
    "cas_tickets",
    metadata,
    Column("id_hash", String(64), primary_key=True),
    Column("kind", String(8), nullable=False),
    Column("client_id", String(64), nullable=False),
    Column("service", String(2048), nullable=False),
    Column("user_id", String(32), nullable=False),
    Column("sid", String(64), nullable=False),
    Column("auth_time", BigInteger, nullable=False),
    Column("new_login", Boolean, nullable=False),
    Column("proxies", JSON, nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("expires_at", BigInteger, nullable=False),
    Column("session_expires_at", BigInteger, nullable=False),
    Column("used_at", BigInteger),
)

# The tickets validated in each SSO session, for CAS single logout: when the session ends, each is a
# logout notice (a samlp:LogoutRequest POSTed to its service, naming the ticket as SessionIndex).
# The ticket is sealed (AES-256-GCM under the secret key), never stored in the clear.
cas_validations = Table(
    "cas_validations",
    metadata,
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
    Column("client_id", String(64), nullable=False),
    Column("user_id", String(32), nullable=False),
    Column("sid", String(64), nullable=False),
    Column("service", String(2048), nullable=False),
    Column("ticket_sealed", String(255), nullable=False),
    Column("validated_at", BigInteger, nullable=False),
    Column("expires_at", BigInteger, nullable=False),
)

Index("ix_sessions_expires_at", sessions.c.expires_at)
Index("ix_device_codes_expires_at", device_codes.c.expires_at)
Index("ix_events_at", events.c.at)
Index("ix_events_type_id", events.c.type, events.c.id)
Index("ix_events_username_id", events.c.username, events.c.id)
Index("ix_events_client_id_id", events.c.client_id, events.c.id)
# Housekeeping (store/janitor.py): each purge statement walks one of these in expiry order.
Index("ix_interactions_expires_at", interactions.c.expires_at)
Index("ix_grants_code_expires_at", grants.c.code_expires_at)
Index("ix_refresh_tokens_expires_at", refresh_tokens.c.expires_at)
Index("ix_logout_notices_next_at", logout_notices.c.failed_at, logout_notices.c.next_at)
Index("ix_logout_notices_sid", logout_notices.c.sid)
Index("ix_grants_client_id", grants.c.client_id)
# A user's grants (disabling the account, the account page) and those of one session of the user
# (signing out, ending a session, back-channel logout): one B-tree for both, so an issued code
# writes one index fewer. A statement that finds grants by sid binds the session's user too.
Index("ix_grants_user_id_sid", grants.c.user_id, grants.c.sid)
# CAS: expired tickets and the validations of sessions past their expiry are purged in expiry order;
# a session's tickets and validations are found by its user and sid, an app's by its client_id.
Index("ix_cas_tickets_expires_at", cas_tickets.c.expires_at)
Index("ix_cas_tickets_user_id_sid", cas_tickets.c.user_id, cas_tickets.c.sid)
Index("ix_cas_tickets_client_id", cas_tickets.c.client_id)
Index("ix_cas_validations_expires_at", cas_validations.c.expires_at)
Index("ix_cas_validations_user_id_sid", cas_validations.c.user_id, cas_validations.c.sid)
Index("ix_cas_validations_client_id", cas_validations.c.client_id)
