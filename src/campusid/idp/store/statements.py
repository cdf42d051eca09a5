"""Every statement the store runs, built from the tables of schema.py with SQLAlchemy Core.

No SQL text is kept by hand: each statement is compiled once per dialect when the store opens
(database.prepare), so a column renamed or dropped in schema.py fails at start, and the test
that compiles every statement against the migrated database of each dialect fails with it.
Parameters are named with `bindparam`; the store passes them by name.
"""

from __future__ import annotations

from sqlalchemy import and_, bindparam, delete, exists, insert, literal, null, select, update
from sqlalchemy.sql import Executable

from campusid.idp.store.logout import grants_of_session
from campusid.idp.store.schema import (
    client_events,
    clients,
    consents,
    factors,
    grants,
    interactions,
    refresh_tokens,
    sessions,
    signing_keys,
    users,
)


def _p(name: str, like) -> bindparam:
    """A named parameter typed like a column (so PostgreSQL gets the cast it needs)."""
    return bindparam(name, type_=like.type)


# -- users ----------------------------------------------------------------------------------
USER_BY_NAME = select(users).where(users.c.username == bindparam("name"))
USER_BY_ID = select(users).where(users.c.id == bindparam("uid"))
USERS = select(users).order_by(users.c.username)
INSERT_USER = insert(users)
# Only a local account has a password here: a directory account's is the directory's, never set.
SET_PASSWORD_HASH = (
    update(users)
    .where(users.c.id == bindparam("uid"), users.c.source == "local")
    .values(password_hash=_p("hash", users.c.password_hash))
)
SET_ROLE = update(users).where(users.c.id == bindparam("uid")).values(role=_p("new_role", users.c.role))
# Conditional on the current state, so a second disable (or enable) changes nothing and says so.
DISABLE_USER = (
    update(users)
    .where(users.c.id == bindparam("uid"), users.c.disabled_at.is_(None))
    .values(disabled_at=_p("at", users.c.disabled_at))
)
ENABLE_USER = (
    update(users).where(users.c.id == bindparam("uid"), users.c.disabled_at.is_not(None)).values(disabled_at=null())
)

# -- clients and their audit log ------------------------------------------------------------
CLIENT = select(clients).where(clients.c.client_id == bindparam("cid"))
CLIENTS = select(clients).order_by(clients.c.updated_at, clients.c.client_id)
CLIENTS_OF_OWNER = CLIENTS.where(clients.c.owner_id == bindparam("owner"))
CLIENTS_IN_STATE = CLIENTS.where(clients.c.state == bindparam("in_state"))
CLIENTS_WITH_REVISION = CLIENTS.where(clients.c.revision_state == bindparam("in_revision_state"))
INSERT_CLIENT = insert(clients)
INSERT_CLIENT_EVENT = insert(client_events).values({c.name: _p(c.name, c) for c in client_events.c if c.name != "id"})
CLIENT_EVENTS = (
    select(client_events)
    .where(client_events.c.client_id == bindparam("cid"))
    .order_by(client_events.c.at, client_events.c.id)
)
RECENT_CLIENT_EVENTS = select(client_events).order_by(client_events.c.id.desc()).limit(bindparam("limit"))

# Each change of an app is conditional on the state it was read in: of two concurrent changes
# exactly one matches, the other is told the app changed meanwhile.
_IN_STATE = and_(clients.c.client_id == bindparam("cid"), clients.c.state == bindparam("from_state"))
# A revision of an active app; `from_revision_state` may be NULL (no revision pending).
_ACTIVE_WITH_REVISION = and_(
    clients.c.client_id == bindparam("cid"),
    clients.c.state == "active",
    clients.c.revision_state.is_not_distinct_from(_p("from_revision_state", clients.c.revision_state)),
)


def _change_client(condition, **values):
    """UPDATE the app `condition` matches: `values`, and `updated_at` to :at."""
    return update(clients).where(condition).values(**values, updated_at=_p("at", clients.c.updated_at))


_TO_STATE = _p("to_state", clients.c.state)
# What a review granted: the scopes and grant types (an approval, or a revision applied).
_GRANTED = {
    "granted_scopes": _p("granted", clients.c.granted_scopes),
    "granted_grant_types": _p("granted_grant_types", clients.c.granted_grant_types),
}
_CONFIG = {
    name: _p(f"new_{name}", clients.c[name])
    for name in (
        "name",
        "description",
        "redirect_uris",
        "scopes",
        "justifications",
        "sector_identifier_uri",
        "grant_types",
        "post_logout_redirect_uris",
        "backchannel_logout_uri",
    )
}
MOVE_CLIENT = _change_client(_IN_STATE, state=_TO_STATE)
APPROVE_CLIENT = _change_client(
    _IN_STATE, state=_TO_STATE, **_GRANTED, require_mfa=_p("require_mfa", clients.c.require_mfa)
)
EDIT_CLIENT = _change_client(_IN_STATE, **_CONFIG)
SET_CLIENT_SECRET = _change_client(_IN_STATE, secret_hash=_p("new_secret_hash", clients.c.secret_hash))
SET_REVISION = _change_client(
    _ACTIVE_WITH_REVISION,
    revision=_p("new_revision", clients.c.revision),
    revision_state=_p("new_revision_state", clients.c.revision_state),
)
APPLY_REVISION = _change_client(_ACTIVE_WITH_REVISION, **_CONFIG, **_GRANTED, revision=null(), revision_state=null())

# -- signing keys ---------------------------------------------------------------------------
KEYS = select(signing_keys).order_by(signing_keys.c.activates_at, signing_keys.c.kid)
INSERT_KEY = insert(signing_keys)
DELETE_KEY = delete(signing_keys).where(signing_keys.c.kid == bindparam("kid"))

# -- browser sessions and pending interactions ----------------------------------------------
SESSION = select(sessions).where(sessions.c.id_hash == bindparam("h"), sessions.c.expires_at > bindparam("now"))
INSERT_SESSION = insert(sessions)
DELETE_SESSION = delete(sessions).where(sessions.c.id_hash == bindparam("h"))
# Ending one session: by the browser's cookie (logout) or by its sid for its own user (the account
# page); either returns who it was, for the grants issued in it to be revoked with it.
END_SESSION = delete(sessions).where(sessions.c.id_hash == bindparam("h")).returning(sessions.c.sid, sessions.c.user_id)
END_SESSION_BY_SID = (
    delete(sessions)
    .where(sessions.c.sid == bindparam("sid"), sessions.c.user_id == bindparam("uid"))
    .returning(sessions.c.sid, sessions.c.user_id)
)
# A user's sessions (disabling the account ends them all), with their sids for the apps to tell.
END_USER_SESSIONS = delete(sessions).where(sessions.c.user_id == bindparam("uid")).returning(sessions.c.sid)

INTERACTION = select(interactions).where(
    interactions.c.id_hash == bindparam("h"), interactions.c.expires_at > bindparam("now")
)
INSERT_INTERACTION = insert(interactions)
FINISH_INTERACTION = (
    delete(interactions).where(interactions.c.id_hash == bindparam("h")).returning(interactions.c.id_hash)
)
# The login POST: the interaction, the user the form names and, for an authorization request,
# its client with that user's remembered consent, in one statement (with what decides whether
# the sign-in needs a second factor: the user's role and whether they have one).
LOGIN_CONTEXT = (
    select(
        interactions,
        users.c.id,
        users.c.password_hash,
        users.c.disabled_at,
        users.c.source,
        users.c.role,
        # whether the user has a second factor (factors.user_id is indexed)
        exists().where(factors.c.user_id == users.c.id, factors.c.confirmed_at.is_not(None)),
        clients,
        consents.c.scope,
    )
    .select_from(
        interactions.outerjoin(users, users.c.username == bindparam("name"))
        .outerjoin(clients, clients.c.client_id == interactions.c.params["client_id"].as_string())
        .outerjoin(consents, and_(consents.c.user_id == users.c.id, consents.c.client_id == clients.c.client_id))
    )
    .where(interactions.c.id_hash == bindparam("h"), interactions.c.expires_at > bindparam("now"))
)

# -- consents -------------------------------------------------------------------------------
_CONSENT_OF = and_(consents.c.user_id == bindparam("uid"), consents.c.client_id == bindparam("cid"))
CONSENT = select(consents.c.scope).where(_CONSENT_OF)
UPDATE_CONSENT = (
    update(consents)
    .where(_CONSENT_OF)
    .values(scope=_p("new_scope", consents.c.scope), updated_at=_p("at", consents.c.updated_at))
)
INSERT_CONSENT = insert(consents)

# -- authorization: the client with this browser's session and consent, in one statement ----
AUTHORIZE_CONTEXT = (
    select(
        clients,
        sessions.c.user_id,
        sessions.c.auth_time,
        sessions.c.sid,
        sessions.c.amr,
        sessions.c.acr,
        consents.c.scope,
    )
    .select_from(
        clients.outerjoin(
            sessions, and_(sessions.c.id_hash == bindparam("session"), sessions.c.expires_at > bindparam("now"))
        ).outerjoin(
            consents, and_(consents.c.user_id == sessions.c.user_id, consents.c.client_id == clients.c.client_id)
        )
    )
    .where(clients.c.client_id == bindparam("cid"))
)

# -- grants: codes, refresh tokens, revocation ----------------------------------------------
INSERT_GRANT = insert(grants)
# The single-use rule (RFC 6749 4.1.2): of any number of concurrent redemptions, on any number
# of workers, exactly one UPDATE matches. A code of another client is never touched.
CONSUME_CODE = (
    update(grants)
    .where(
        grants.c.code_hash == bindparam("h"),
        grants.c.client_id == bindparam("cid"),
        grants.c.code_used_at.is_(None),
        grants.c.code_expires_at > bindparam("now"),
        grants.c.revoked_at.is_(None),
    )
    .values(code_used_at=bindparam("now"))
    .returning(*grants.c)
)
GRANT_BY_CODE = select(grants).where(grants.c.code_hash == bindparam("h"))
GRANT = select(grants).where(grants.c.id == bindparam("gid"))


def _revoke_grants(which):
    """Revoke the live grants `which` selects: their code, access tokens and refresh family."""
    return (
        update(grants)
        .where(which, grants.c.revoked_at.is_(None))
        .values(revoked_at=bindparam("now"), code_used_at=bindparam("now"))
    )


def _end_refresh_tokens(which):
    """End the unused refresh tokens `which` selects."""
    return update(refresh_tokens).where(which, refresh_tokens.c.used_at.is_(None)).values(used_at=bindparam("now"))


def _of_grants(which):
    return refresh_tokens.c.grant_id.in_(select(grants.c.id).where(which))


REVOKE_GRANT = _revoke_grants(grants.c.id == bindparam("gid"))
END_REFRESH_FAMILY = _end_refresh_tokens(refresh_tokens.c.grant_id == bindparam("gid"))
# Every grant of a user at once (the account is disabled): its codes, access and refresh tokens.
REVOKE_USER_GRANTS = _revoke_grants(grants.c.user_id == bindparam("uid")).returning(
    grants.c.id, grants.c.client_id, grants.c.sid
)
END_USER_REFRESH_TOKENS = _end_refresh_tokens(_of_grants(grants.c.user_id == bindparam("uid")))
# Every grant issued in one session (it ended): codes, access and refresh tokens.
REVOKE_SESSION_GRANTS = _revoke_grants(grants_of_session).returning(grants.c.id, grants.c.client_id, grants.c.sid)
END_SESSION_REFRESH_TOKENS = _end_refresh_tokens(_of_grants(grants_of_session))
INSERT_REFRESH = insert(refresh_tokens)
# Rotation: the one caller whose UPDATE matched gets the row (RFC 9700 4.14.2).
USE_REFRESH = (
    update(refresh_tokens)
    .where(
        refresh_tokens.c.token_hash == bindparam("h"),
        refresh_tokens.c.used_at.is_(None),
        refresh_tokens.c.expires_at > bindparam("now"),
    )
    .values(used_at=bindparam("now"))
    .returning(*refresh_tokens.c)
)
REFRESH_TOKEN = select(refresh_tokens).where(refresh_tokens.c.token_hash == bindparam("h"))
# userinfo and the records API: the grant (not revoked) with its user, in one statement.
TOKEN_SUBJECT = (
    select(
        grants.c.id.label("grant_id"),
        grants.c.client_id,
        grants.c.scope,
        users.c.id.label("user_id"),
        users.c.name,
        users.c.given_name,
        users.c.family_name,
        users.c.email,
        users.c.student_number,
    )
    .select_from(grants.join(users, users.c.id == grants.c.user_id))
    .where(grants.c.id == bindparam("gid"), grants.c.revoked_at.is_(None))
)


# The readiness check's round trip (idp/web/health.py).
PING = select(literal(1))


def all_statements() -> dict[str, Executable]:
    """Every statement of this module and of the store's domain modules, by name (what the store
    compiles at start)."""
    from campusid.idp.store import devices, directory, events, factors, housekeeping, logout

    out: dict[str, Executable] = {}
    features = (events, devices, housekeeping, directory, factors, logout)
    for namespace in (globals(), *(vars(module) for module in features)):
        for name, value in namespace.items():
            if name.isupper() and isinstance(value, Executable):
                if name in out and out[name] is not value:
                    raise ValueError(f"two statements are named {name}")
                out[name] = value
    return out
