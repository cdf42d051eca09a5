"""The apps repository: client applications, the changes of their review state and
configuration, and their audit log (`client_events`).

Each change of an app is conditional on the state it was read in and logs its event in the same
transaction: of two concurrent changes exactly one matches, the other is told the app changed
meanwhile. Suspending an app also queues the logout notices of every session that received its
tokens and revokes them all, through the notices and grants repositories.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import and_, bindparam, delete, insert, null, select, update

from campusid.idp.store.database import Database, Prepared, Queries
from campusid.idp.store.grants import Grants
from campusid.idp.store.notices import Notices
from campusid.idp.store.repository import Repository, row_maker, typed
from campusid.idp.store.rows import (
    APP_FIELDS,
    CAS_REGISTRATION_FIELDS,
    OIDC_REGISTRATION_FIELDS,
    Client,
    ClientConfig,
    ClientEvent,
)
from campusid.idp.store.schema import (
    CLIENT_COLUMNS,
    CLIENT_JOIN,
    cas_registrations,
    cas_services,
    client_events,
    clients,
    oidc_registrations,
)

_c = clients.c
_r = oidc_registrations.c
CLIENT = select(*CLIENT_COLUMNS).select_from(CLIENT_JOIN).where(_c.client_id == bindparam("cid"))
CLIENTS = select(*CLIENT_COLUMNS).select_from(CLIENT_JOIN).order_by(_c.updated_at, _c.client_id)
CLIENTS_OF_OWNER = CLIENTS.where(_c.owner_id == bindparam("owner"))
CLIENTS_IN_STATE = CLIENTS.where(_c.state == bindparam("in_state"))
CLIENTS_WITH_REVISION = CLIENTS.where(_c.revision_state == bindparam("in_revision_state"))
INSERT_CLIENT = insert(clients)
INSERT_OIDC_REGISTRATION = insert(oidc_registrations)
INSERT_CLIENT_EVENT = insert(client_events).values(
    {c.name: typed(c.name, c) for c in client_events.c if c.name != "id"}
)
CLIENT_EVENTS = (
    select(client_events)
    .where(client_events.c.client_id == bindparam("cid"))
    .order_by(client_events.c.at, client_events.c.id)
)
RECENT_CLIENT_EVENTS = select(client_events).order_by(client_events.c.id.desc()).limit(bindparam("limit"))

_IN_STATE = and_(_c.client_id == bindparam("cid"), _c.state == bindparam("from_state"))
# A revision of an active app; `from_revision_state` may be NULL (no revision pending).
_ACTIVE_WITH_REVISION = and_(
    _c.client_id == bindparam("cid"),
    _c.state == "active",
    _c.revision_state.is_not_distinct_from(typed("from_revision_state", _c.revision_state)),
)


def _change_client(condition, **values):
    """UPDATE the app `condition` matches: `values`, and `updated_at` to :at. Every change of an app
    is this one conditional statement first; its registration's part follows in the same
    transaction only if it matched."""
    return update(clients).where(condition).values(**values, updated_at=typed("at", _c.updated_at))


def _change_registration(**values):
    return update(oidc_registrations).where(_r.client_id == bindparam("cid")).values(**values)


_TO_STATE = typed("to_state", _c.state)
_APP_CONFIG = {name: typed(f"new_{name}", _c[name]) for name in ("name", "description", "scopes", "justifications")}
_REGISTRATION_CONFIG = {
    name: typed(f"new_{name}", _r[name])
    for name in (
        "redirect_uris",
        "sector_identifier_uri",
        "grant_types",
        "post_logout_redirect_uris",
        "backchannel_logout_uri",
    )
}
_GRANTED_SCOPES = {"granted_scopes": typed("granted", _c.granted_scopes)}
_GRANTED_TYPES = {"granted_grant_types": typed("granted_grant_types", _r.granted_grant_types)}
MOVE_CLIENT = _change_client(_IN_STATE, state=_TO_STATE)
TOUCH_CLIENT = _change_client(_IN_STATE)  # no change of its own: it gates its registration's
APPROVE_CLIENT = _change_client(
    _IN_STATE, state=_TO_STATE, **_GRANTED_SCOPES, require_mfa=typed("require_mfa", _c.require_mfa)
)
EDIT_CLIENT = _change_client(_IN_STATE, **_APP_CONFIG)
SET_REVISION = _change_client(
    _ACTIVE_WITH_REVISION,
    revision=typed("new_revision", _c.revision),
    revision_state=typed("new_revision_state", _c.revision_state),
)
APPLY_REVISION = _change_client(
    _ACTIVE_WITH_REVISION, **_APP_CONFIG, **_GRANTED_SCOPES, revision=null(), revision_state=null()
)
GRANT_TYPES = _change_registration(**_GRANTED_TYPES)
EDIT_REGISTRATION = _change_registration(**_REGISTRATION_CONFIG)
APPLY_REGISTRATION = _change_registration(**_REGISTRATION_CONFIG, **_GRANTED_TYPES)
SET_CLIENT_SECRET = _change_registration(secret_hash=typed("new_secret_hash", _r.secret_hash))


# A CAS app's registration (its services and the proxy grant) and the index of its services by
# origin that /cas/login reads (store/cas.py), rewritten with every change of its services.
_cr = cas_registrations.c
INSERT_CAS_REGISTRATION = insert(cas_registrations)
INSERT_CAS_SERVICE = insert(cas_services).values(
    origin=typed("origin", cas_services.c.origin),
    path=typed("path", cas_services.c.path),
    client_id=typed("cid", cas_services.c.client_id),
)
DELETE_CAS_SERVICES = delete(cas_services).where(cas_services.c.client_id == bindparam("cid"))
_CAS_CONFIG = {name: typed(f"new_{name}", _cr[name]) for name in ("services", "grant_types")}
_CAS_GRANTED = {"granted_grant_types": typed("granted_grant_types", _cr.granted_grant_types)}
CAS_GRANT_TYPES = update(cas_registrations).where(_cr.client_id == bindparam("cid")).values(**_CAS_GRANTED)
EDIT_CAS_REGISTRATION = update(cas_registrations).where(_cr.client_id == bindparam("cid")).values(**_CAS_CONFIG)
APPLY_CAS_REGISTRATION = (
    update(cas_registrations).where(_cr.client_id == bindparam("cid")).values(**_CAS_CONFIG, **_CAS_GRANTED)
)
CAS_TYPES = ("cas",)  # the app types whose registration is a CAS one (idp/cas/registration.py)


def service_key(canonical: str) -> tuple[str, str]:
    """(origin, path) of a service in its canonical form (`scheme://host[:port]/path`, as the CAS
    face registers it): the origin up to the path's first "/"."""
    scheme, _, rest = canonical.partition("://")
    host, _, path = rest.partition("/")
    return f"{scheme}://{host}", "/" + path


def _config_values(config: ClientConfig) -> dict:
    return {
        "new_name": config.name,
        "new_description": config.description,
        "new_scopes": list(config.scopes),
        "new_justifications": dict(config.justifications),
        "new_redirect_uris": list(config.redirect_uris),
        "new_sector_identifier_uri": config.sector_identifier_uri,
        "new_grant_types": list(config.grant_types),
        "new_post_logout_redirect_uris": list(config.post_logout_redirect_uris),
        "new_backchannel_logout_uri": config.backchannel_logout_uri,
        "new_services": list(config.services),
    }


class Apps(Repository):
    def __init__(self, db: Database, grants: Grants, notices: Notices) -> None:
        super().__init__(db)
        self._grants, self._notices = grants, notices
        self._by_id = db.prepare("CLIENT", CLIENT)
        self._all = db.prepare("CLIENTS", CLIENTS)
        self._of_owner = db.prepare("CLIENTS_OF_OWNER", CLIENTS_OF_OWNER)
        self._in_state = db.prepare("CLIENTS_IN_STATE", CLIENTS_IN_STATE)
        self._with_revision = db.prepare("CLIENTS_WITH_REVISION", CLIENTS_WITH_REVISION)
        self._insert = db.prepare("INSERT_CLIENT", INSERT_CLIENT)
        self._insert_registration = db.prepare("INSERT_OIDC_REGISTRATION", INSERT_OIDC_REGISTRATION)
        self._insert_event = db.prepare("INSERT_CLIENT_EVENT", INSERT_CLIENT_EVENT)
        self._events = db.prepare("CLIENT_EVENTS", CLIENT_EVENTS)
        self._recent_events = db.prepare("RECENT_CLIENT_EVENTS", RECENT_CLIENT_EVENTS)
        self._move = db.prepare("MOVE_CLIENT", MOVE_CLIENT)
        self._touch = db.prepare("TOUCH_CLIENT", TOUCH_CLIENT)
        self._approve = db.prepare("APPROVE_CLIENT", APPROVE_CLIENT)
        self._edit = db.prepare("EDIT_CLIENT", EDIT_CLIENT)
        self._set_revision = db.prepare("SET_REVISION", SET_REVISION)
        self._apply_revision = db.prepare("APPLY_REVISION", APPLY_REVISION)
        self._grant_types = db.prepare("GRANT_TYPES", GRANT_TYPES)
        self._edit_registration = db.prepare("EDIT_REGISTRATION", EDIT_REGISTRATION)
        self._apply_registration = db.prepare("APPLY_REGISTRATION", APPLY_REGISTRATION)
        self._set_secret = db.prepare("SET_CLIENT_SECRET", SET_CLIENT_SECRET)
        self._insert_cas = db.prepare("INSERT_CAS_REGISTRATION", INSERT_CAS_REGISTRATION)
        self._insert_cas_service = db.prepare("INSERT_CAS_SERVICE", INSERT_CAS_SERVICE)
        self._delete_cas_services = db.prepare("DELETE_CAS_SERVICES", DELETE_CAS_SERVICES)
        self._cas_grant_types = db.prepare("CAS_GRANT_TYPES", CAS_GRANT_TYPES)
        self._edit_cas = db.prepare("EDIT_CAS_REGISTRATION", EDIT_CAS_REGISTRATION)
        self._apply_cas = db.prepare("APPLY_CAS_REGISTRATION", APPLY_CAS_REGISTRATION)
        self._client = row_maker(Client, self._by_id)
        self._event = row_maker(ClientEvent, self._events)

    async def get(self, client_id: str) -> Client | None:
        return await self._row(self._by_id, self._client, {"cid": client_id})

    async def list(self, *, owner_id: str | None = None, state: str | None = None) -> list[Client]:
        """Oldest change first; all, or those of one owner, or those in one state."""
        if owner_id is not None:
            found = await self._rows(self._of_owner, self._client, {"owner": owner_id})
            return [c for c in found if state is None or c.state == state]
        if state is not None:
            return await self._rows(self._in_state, self._client, {"in_state": state})
        return await self._rows(self._all, self._client)

    async def with_revision(self, revision_state: str) -> list[Client]:
        """Active apps whose revision is in `revision_state`, oldest change first."""
        return await self._rows(self._with_revision, self._client, {"in_revision_state": revision_state})

    async def create(self, client: Client, event: ClientEvent) -> None:
        """The app and its OIDC registration, and the first line of its audit log, together.
        Raises Conflict when the client_id is taken."""
        app = {name: getattr(client, name) for name in APP_FIELDS}
        cas = client.type in CAS_TYPES
        names = CAS_REGISTRATION_FIELDS if cas else OIDC_REGISTRATION_FIELDS
        registration = {"client_id": client.client_id, **{n: getattr(client, n) for n in names}}
        async with self.db.transaction() as tx:
            await tx.execute(self._insert, app)
            await tx.execute(self._insert_cas if cas else self._insert_registration, registration)
            if cas:
                await self._index_services(tx, client.client_id, client.services)
            await tx.execute(self._insert_event, vars(event))

    async def _index_services(self, tx: Queries, client_id: str, services) -> None:
        """Rewrite the index of a CAS app's services (store/cas.py reads it)."""
        await tx.execute(self._delete_cas_services, {"cid": client_id})
        for service in dict.fromkeys(services):
            origin, path = service_key(service)
            await tx.execute(self._insert_cas_service, {"origin": origin, "path": path, "cid": client_id})

    async def _change(
        self,
        q: Prepared,
        values: dict,
        event: ClientEvent,
        then: Prepared | None = None,
        then_values: dict | None = None,
        services=None,
    ) -> bool:
        """Apply one conditional change of the app and, only if it matched, the change `then` of its
        registration (and, given `services`, the new index of a CAS app's services) and log `event`
        (its time is the app's new updated_at). False when the app was no longer as its caller read it."""
        key = {"cid": event.client_id}
        async with self.db.transaction() as tx:
            if not await tx.execute(q, {**values, **key, "at": event.at}):
                return False
            if then is not None:
                await tx.execute(then, {**(then_values or {}), **key})
            if services is not None:
                await self._index_services(tx, event.client_id, services)
            await tx.execute(self._insert_event, vars(event))
        return True

    async def move(
        self,
        event: ClientEvent,
        *,
        granted_scopes: Sequence[str] | None = None,
        granted_grant_types: Sequence[str] = (),
        require_mfa: bool = False,
        app_type: str | None = None,
    ) -> bool:
        """Move the app of `event` from event.from_state to event.to_state (an approval also sets
        the granted scopes and grant types, in its registration of `app_type`, and whether its
        sign-ins need a second factor)."""
        values = {"from_state": event.from_state, "to_state": event.to_state}
        if granted_scopes is None:
            return await self._change(self._move, values, event)
        values.update(granted=list(granted_scopes), require_mfa=require_mfa)
        types = {"granted_grant_types": list(granted_grant_types)}
        grant_types = self._cas_grant_types if app_type in CAS_TYPES else self._grant_types
        return await self._change(self._approve, values, event, grant_types, types)

    async def suspend(self, event: ClientEvent) -> bool:
        """Suspend the active app of `event` and, in the same transaction, queue a logout notice
        for each session that received its tokens and revoke all of them (codes, access and
        refresh tokens). False when the app was no longer in event.from_state."""
        cid, now = event.client_id, event.at
        async with self.db.transaction() as tx:
            values = {"cid": cid, "from_state": event.from_state, "to_state": event.to_state, "at": now}
            if not await tx.execute(self._move, values):  # conditional on event.from_state
                return False
            await tx.execute(self._insert_event, vars(event))
            await self._notices.enqueue_for_client(tx, cid, now)  # before the grants it reads are revoked
            await self._grants.revoke_of_client(tx, cid, now)
        return True

    async def edit(self, config: ClientConfig, event: ClientEvent, app_type: str | None = None) -> bool:
        """Replace the configuration of the app of `event` (of `app_type`), while it is in event.from_state."""
        app, registration = _split(_config_values(config))
        cas = app_type in CAS_TYPES
        return await self._change(
            self._edit,
            {"from_state": event.from_state, **app},
            event,
            self._edit_cas if cas else self._edit_registration,
            registration,
            services=config.services if cas else None,
        )

    async def set_secret(self, secret_hash: str, event: ClientEvent) -> bool:
        values = {"from_state": event.from_state}
        return await self._change(self._touch, values, event, self._set_secret, {"new_secret_hash": secret_hash})

    async def set_revision(
        self, from_revision_state: str | None, revision: dict | None, revision_state: str | None, event: ClientEvent
    ) -> bool:
        """File or judge a revision of an active app, while its revision is in `from_revision_state`."""
        values = {
            "from_revision_state": from_revision_state,
            "new_revision": revision,
            "new_revision_state": revision_state,
        }
        return await self._change(self._set_revision, values, event)

    async def apply_revision(
        self,
        from_revision_state: str,
        config: ClientConfig,
        granted_scopes: Sequence[str],
        event: ClientEvent,
        granted_grant_types: Sequence[str] = (),
        app_type: str | None = None,
    ) -> bool:
        """Replace an active app's configuration with its approved revision."""
        app, registration = _split(_config_values(config))
        values = {"from_revision_state": from_revision_state, "granted": list(granted_scopes), **app}
        registration["granted_grant_types"] = list(granted_grant_types)
        cas = app_type in CAS_TYPES
        apply = self._apply_cas if cas else self._apply_registration
        services = config.services if cas else None
        return await self._change(self._apply_revision, values, event, apply, registration, services=services)

    async def events(self, client_id: str) -> list[ClientEvent]:
        """The app's audit log, oldest first."""
        return await self._rows(self._events, self._event, {"cid": client_id})

    async def recent_events(self, limit: int) -> list[ClientEvent]:
        """The newest `limit` lines of every app's audit log, newest first."""
        return await self._rows(self._recent_events, self._event, {"limit": limit})


def _split(config: dict) -> tuple[dict, dict]:
    """A configuration's values: the app's, and its registration's."""
    app = {k: v for k, v in config.items() if k[len("new_") :] in _APP_CONFIG}
    return app, {k: v for k, v in config.items() if k not in app}
