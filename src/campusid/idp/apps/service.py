"""The review workflow: draft → under_review → approved → active; under_review → rejected
(feedback required) → edit → under_review; active ⇄ suspended. Every transition is one atomic
conditional UPDATE plus an audit event, through the async store (the portal, the console, the
API and the CLI all come here)."""

from __future__ import annotations

import re
import secrets
import time
from typing import TYPE_CHECKING

from campusid.i18n import N_
from campusid.idp import release
from campusid.idp.apps import rules
from campusid.idp.apps.errors import AppError, Forbidden, InvalidTransition, NotFound, ValidationFailed
from campusid.idp.apps.queries import QueriesMixin, _event_view, _revision_view
from campusid.idp.apps.registrations import Registrations, given_registration, registration_args
from campusid.idp.apps.revisions import RevisionsMixin
from campusid.idp.apps.states import (
    ACTIVE,
    APPROVED,
    DRAFT,
    EDITABLE,
    REJECTED,
    STATES,
    SUSPENDED,
    UNDER_REVIEW,
)
from campusid.idp.crypto import new_token, token_hash
from campusid.idp.store import Conflict, Store
from campusid.idp.store.rows import Client, ClientConfig, ClientEvent, User

__all__ = [
    "AppError",
    "AppService",
    "Forbidden",
    "InvalidTransition",
    "NotFound",
    "ValidationFailed",
    "STATES",
    "DRAFT",
    "UNDER_REVIEW",
    "APPROVED",
    "ACTIVE",
    "REJECTED",
    "SUSPENDED",
    "EDITABLE",
]

if TYPE_CHECKING:
    from campusid.idp.events import Events

_CLIENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-]{2,63}$")
_SUB_SHAPE = re.compile(r"^[A-Za-z0-9_\-]{43}$")


def _now() -> int:
    return int(time.time())


class AppService(RevisionsMixin, QueriesMixin):
    def __init__(self, store: Store, events: Events | None = None, registrations: Registrations | None = None) -> None:
        self._store = store
        # which face checks an app's registration, by its type (the faces register theirs)
        self.registrations = registrations if registrations is not None else Registrations()
        if events is None:
            # imported here, not with this module: the CLI imports this package before it chooses
            # how its figures are kept, which importing idp/metrics.py would fix (see there)
            from campusid.idp.events import Events

            events = Events(store)
        self._events = events

    async def _audited(self, event: ClientEvent, revision_state: str | None = None) -> None:
        """A review transition that took place (its row is in the app's own audit log already),
        as the security event `app_state_changed` of the app: who, and from which state to which
        (a revision's too)."""
        from campusid.idp import events as ev  # see __init__

        detail = f"{event.action}: {event.from_state or '-'} -> {event.to_state or '-'}"
        if revision_state is not None:
            detail += f" (revision {revision_state})"
        if event.feedback:
            detail += f"; feedback: {event.feedback}"
        await self._events.record(ev.APP_STATE_CHANGED, username=event.actor, client_id=event.client_id, detail=detail)

    # -- reading --------------------------------------------------------------------------
    async def get(self, client_id: str) -> Client:
        app = await self._store.apps.get(client_id)
        if app is None:
            raise NotFound(N_("no application with client_id %(client_id)r", client_id=client_id))
        return app

    async def show(self, client_id: str) -> dict:
        """The app as `apps show --json` prints it."""
        app = await self.get(client_id)
        shown = {
            "client_id": app.client_id,
            "name": app.name,
            "description": app.description,
            "type": app.type,
            "state": app.state,
            "redirect_uris": list(app.redirect_uris),
            "scopes": list(app.scopes),
            "granted_scopes": list(app.granted_scopes),
            "sector_identifier_uri": app.sector_identifier_uri,
            "justifications": dict(app.justifications or {}),
            "grant_types": list(app.grant_types),
            "granted_grant_types": list(app.granted_grant_types),
            "require_mfa": bool(app.require_mfa),
            "post_logout_redirect_uris": list(app.post_logout_redirect_uris),
            "backchannel_logout_uri": app.backchannel_logout_uri,
            "revision": _revision_view(app),
            "token_endpoint_auth_method": "client_secret_basic" if app.type == "web" else "none",
            "owner": await self.owner_name(app),
            "created_at": app.created_at,
            "updated_at": app.updated_at,
            "history": [
                {k: v for k, v in _event_view(e).items() if k != "client_id"}
                for e in await self._store.apps.events(client_id)
            ],
        }
        if app.type == "cas":  # a CAS app's registration (docs/cas.md): its services, no secret
            shown["services"] = list(app.services)
            shown["token_endpoint_auth_method"] = None
        return shown

    # -- validation -----------------------------------------------------------------------
    async def _user(self, username: str, what: str) -> User:
        user = await self._store.users.by_username(username)
        if user is None:
            raise ValidationFailed(N_("%(who)s %(username)r is not a known user", who=what, username=username))
        return user

    # -- transitions ----------------------------------------------------------------------
    async def create(
        self,
        *,
        name: str,
        app_type: str,
        redirect_uris: list[str] | None = None,
        scopes: list[str] | None,
        owner: str,
        description: str = "",
        sector_identifier_uri: str | None = None,
        client_id: str | None = None,
        justifications: dict[str, str] | None = None,
        grant_types: list[str] | None = None,
        post_logout_redirect_uris: list[str] | None = None,
        backchannel_logout_uri: str | None = None,
        services: list[str] | None = None,
    ) -> tuple[dict, str | None]:
        """Register an app in `draft`. Returns (app, client_secret) — the secret only for web apps, once.

        `justifications` ({sensitive scope: why}) is required for every requested sensitive scope
        when given (the portal and the API always give it; the operator's CLI may omit it).
        `grant_types` asks the review for grant types beyond the code flow (`device_code`)."""
        face = self.registrations.of(app_type)
        requested = face.bundles(list(scopes or ()))
        rules.check_app(name, requested)
        given = given_registration(
            redirect_uris=redirect_uris,
            sector_identifier_uri=sector_identifier_uri,
            post_logout_redirect_uris=post_logout_redirect_uris,
            backchannel_logout_uri=backchannel_logout_uri,
            grant_types=grant_types,
            services=services,
        )
        registered = face.check(app_type, **registration_args(face, app_type, given))
        reasons = rules.check_justifications(requested, justifications) if justifications is not None else {}
        owner_row = await self._user(owner, "owner")
        if client_id is None:
            client_id = f"app-{secrets.token_hex(10)}"
        elif not _CLIENT_ID.match(client_id) or _SUB_SHAPE.match(client_id):
            raise ValidationFailed(N_("client_id must be 3-64 letters, digits, '.', '_' or '-'"))
        secret = new_token(32) if app_type == "web" else None
        now = _now()
        row = Client(
            client_id=client_id,
            name=name.strip(),
            description=description or "",
            type=app_type,
            state=DRAFT,
            scopes=tuple(requested),
            granted_scopes=(),
            justifications=reasons,
            revision=None,
            revision_state=None,
            owner_id=owner_row.id,
            created_at=now,
            updated_at=now,
            secret_hash=token_hash(secret) if secret else None,
            redirect_uris=tuple(registered.get("redirect_uris", ())),
            sector_identifier_uri=registered.get("sector_identifier_uri"),
            grant_types=tuple(registered.get("grant_types", ())),
            granted_grant_types=(),
            post_logout_redirect_uris=tuple(registered.get("post_logout_redirect_uris", ())),
            backchannel_logout_uri=registered.get("backchannel_logout_uri"),
            services=tuple(registered.get("services", ())),
        )
        event = ClientEvent(None, client_id, owner, "create", None, DRAFT, None, now)
        try:
            await self._store.apps.create(row, event)
        except Conflict:
            raise InvalidTransition(
                N_("an application with client_id %(client_id)r exists", client_id=client_id)
            ) from None
        await self._audited(event)
        return await self.show(client_id), secret

    async def _transition(
        self,
        client_id: str,
        from_states: tuple[str, ...],
        to_state: str,
        action: str,
        actor: str | None,
        feedback: str | None = None,
        *,
        granted_scopes: list[str] | None = None,
        granted_grant_types: list[str] = (),
        require_mfa: bool = False,
        config: ClientConfig | None = None,
        secret_hash: str | None = None,
        suspend: bool = False,
    ) -> dict:
        """One step of the review workflow: allowed only from `from_states`, and applied only if
        the app is still in the state it was read in (else InvalidTransition); audited."""
        app = await self.get(client_id)
        if app.state not in from_states:
            raise InvalidTransition(
                N_(
                    "cannot %(action)s an application that is %(state)s (only from %(from_states)s)",
                    action=action,
                    state=app.state,
                    from_states=" or ".join(from_states),
                )
            )
        event = ClientEvent(None, client_id, actor, action, app.state, to_state, feedback, _now())
        if suspend:
            ok = await self._store.apps.suspend(event)
        elif config is not None:
            ok = await self._store.apps.edit(config, event, app.type)
        elif secret_hash is not None:
            ok = await self._store.apps.set_secret(secret_hash, event)
        else:
            ok = await self._store.apps.move(
                event,
                granted_scopes=granted_scopes,
                granted_grant_types=granted_grant_types,
                require_mfa=require_mfa,
                app_type=app.type,
            )
        if not ok:
            raise InvalidTransition(
                N_("the application changed state while you were working; it is no longer %(state)s", state=app.state)
            )
        if event.from_state != event.to_state:  # an edit or a new secret changes no state
            await self._audited(event)
        return await self.show(client_id)

    async def edit(
        self,
        client_id: str,
        *,
        actor: str | None = None,
        name: str | None = None,
        description: str | None = None,
        redirect_uris: list[str] | None = None,
        scopes: list[str] | None = None,
        sector_identifier_uri: str | None = None,
        justifications: dict[str, str] | None = None,
        grant_types: list[str] | None = None,
        post_logout_redirect_uris: list[str] | None = None,
        backchannel_logout_uri: str | None = None,
        services: list[str] | None = None,
    ) -> dict:
        """Change a draft or rejected app; a None field keeps its value (an empty
        backchannel_logout_uri removes it)."""
        app = await self.get(client_id)
        if app.state not in EDITABLE:
            raise InvalidTransition(
                N_("cannot edit an application that is %(state)s (only draft or rejected)", state=app.state)
            )
        face = self.registrations.of(app.type)
        new_name = name if name is not None else app.name
        new_scopes = face.bundles(scopes) if scopes is not None else list(app.scopes)
        rules.check_app(new_name, new_scopes)

        def kept(given, current):
            return given if given is not None else current

        given = {
            "redirect_uris": kept(redirect_uris, list(app.redirect_uris)),
            "sector_identifier_uri": kept(sector_identifier_uri, app.sector_identifier_uri),
            "post_logout_redirect_uris": kept(post_logout_redirect_uris, app.post_logout_redirect_uris),
            "backchannel_logout_uri": kept(backchannel_logout_uri, app.backchannel_logout_uri),
            "grant_types": kept(grant_types, app.grant_types),
            "services": kept(services, list(app.services)),
        }
        registered = face.check(app.type, **registration_args(face, app.type, given))
        config = ClientConfig(
            name=new_name.strip(),
            description=kept(description, app.description),
            scopes=new_scopes,
            justifications=(
                rules.check_justifications(new_scopes, justifications)
                if justifications is not None
                else app.justifications
            ),
            **{"redirect_uris": (), "sector_identifier_uri": None, **registered},
        )
        return await self._transition(client_id, (app.state,), app.state, "edit", actor, config=config)

    async def submit(self, client_id: str, actor: str | None = None) -> dict:
        return await self._transition(client_id, EDITABLE, UNDER_REVIEW, "submit", actor)

    async def _for_review(self, client_id: str, by: str) -> Client:
        """The app, once `by` is an admin other than its owner (nobody reviews their own app)."""
        reviewer = await self._user(by, "reviewer")
        if reviewer.role != "admin":
            raise Forbidden(N_("%(by)r is not an admin; only admins review applications", by=by))
        app = await self.get(client_id)
        if reviewer.id == app.owner_id:
            raise Forbidden(N_("nobody reviews their own application"))
        return app

    async def approve(
        self,
        client_id: str,
        by: str,
        grant_scopes: rules.Picked = None,
        grant_types: rules.Picked = None,
        require_mfa: bool = False,
    ) -> dict:
        """Approve an app under review: the sensitive scopes in `grant_scopes` (default: every one
        it asks for) and exactly the extra grant types in `grant_types` (default: none; the device
        grant is given only by name, whether or not the app asked for it). `require_mfa`: every
        sign-in to the app uses a second factor (docs/mfa.md)."""
        app = await self._for_review(client_id, by)
        approved_sensitive = self._approved_sensitive(app.scopes, grant_scopes)
        granted = release.grantable(list(app.scopes), approved_sensitive)
        return await self._transition(
            client_id,
            (UNDER_REVIEW,),
            APPROVED,
            "approve",
            by,
            feedback=None,
            granted_scopes=granted,
            granted_grant_types=self.registrations.of(app.type).check_grant_types(grant_types),
            require_mfa=bool(require_mfa),
        )

    async def reject(self, client_id: str, by: str, feedback: str) -> dict:
        await self._for_review(client_id, by)
        feedback = rules.check_feedback(feedback)
        return await self._transition(client_id, (UNDER_REVIEW,), REJECTED, "reject", by, feedback=feedback)

    async def activate(self, client_id: str, actor: str | None = None) -> dict:
        return await self._transition(client_id, (APPROVED,), ACTIVE, "activate", actor)

    async def suspend(self, client_id: str, by: str, reason: str | None = None) -> dict:
        await self._for_review(client_id, by)
        # Its tokens are revoked and its sessions' back-channel logouts queued with the change.
        return await self._transition(client_id, (ACTIVE,), SUSPENDED, "suspend", by, feedback=reason, suspend=True)

    async def reinstate(self, client_id: str, by: str) -> dict:
        await self._for_review(client_id, by)
        return await self._transition(client_id, (SUSPENDED,), ACTIVE, "reinstate", by)

    async def rotate_secret(self, client_id: str, actor: str | None = None) -> str:
        app = await self.get(client_id)
        if app.type != "web":
            raise InvalidTransition(N_("native applications are public clients and have no secret"))
        secret = new_token(32)
        await self._transition(
            client_id, (app.state,), app.state, "rotate_secret", actor, secret_hash=token_hash(secret)
        )
        return secret
