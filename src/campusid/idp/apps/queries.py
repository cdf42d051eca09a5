"""Read-side of the review workflow: ownership, lists, the review queue and the audit log."""

from __future__ import annotations

from campusid.i18n import N_
from campusid.idp.apps.errors import Forbidden, ValidationFailed
from campusid.idp.apps.states import ACTIVE, STATES, UNDER_REVIEW
from campusid.idp.store.rows import Client, ClientEvent


class QueriesMixin:
    """Methods of AppService for the portal, the console and the API."""

    async def owned(self, client_id: str, username: str) -> Client:
        """The app if `username` owns it; Forbidden otherwise (developers touch only their own apps)."""
        app = await self.get(client_id)
        user = await self._store.users.by_username(username)
        if user is None or app.owner_id != user.id:
            raise Forbidden(N_("this application belongs to another developer"))
        return app

    async def list_owned(self, username: str) -> list[dict]:
        user = await self._store.users.by_username(username)
        if user is None:
            return []
        return [await self.summary(a) for a in await self._store.apps.list(owner_id=user.id)]

    async def list_all(self, state: str | None = None) -> list[dict]:
        if state is not None and state not in STATES:
            raise ValidationFailed(N_("state must be one of %(states)s", states=", ".join(STATES)))
        return [await self.summary(a) for a in await self._store.apps.list(state=state)]

    async def review_queue(self) -> list[dict]:
        """New apps and revisions waiting for a reviewer, oldest submission first."""
        items = [
            {"kind": "app", "since": a.updated_at, "app": await self.summary(a)}
            for a in await self._store.apps.list(state=UNDER_REVIEW)
        ]
        items += [
            {
                "kind": "revision",
                "since": (a.revision or {}).get("submitted_at", a.updated_at),
                "app": await self.summary(a),
            }
            for a in await self._store.apps.with_revision(UNDER_REVIEW)
            if a.state == ACTIVE
        ]
        return sorted(items, key=lambda i: (i["since"], i["app"]["client_id"]))

    async def audit_log(self, limit: int = 200) -> list[dict]:
        return [_event_view(e) for e in await self._store.apps.recent_events(limit)]

    async def owner_name(self, app: Client) -> str | None:
        """The username of the app's owner (None once that account is gone)."""
        owner = await self._store.users.get(app.owner_id)
        return owner.username if owner else None

    async def summary(self, app: Client) -> dict:
        return {
            "client_id": app.client_id,
            "name": app.name,
            "type": app.type,
            "state": app.state,
            "revision_state": app.revision_state,
            "owner": await self.owner_name(app),
            "updated_at": app.updated_at,
        }


def _revision_view(app: Client) -> dict | None:
    if not app.revision_state or not app.revision:
        return None
    return {**_plain(app.revision), "state": app.revision_state}


def _plain(value):
    """A stored (read-only) JSON value as plain dicts and lists, for views and JSON answers."""
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if hasattr(value, "items"):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _event_view(e: ClientEvent) -> dict:
    return {
        "client_id": e.client_id,
        "at": e.at,
        "actor": e.actor,
        "action": e.action,
        "from": e.from_state,
        "to": e.to_state,
        "feedback": e.feedback,
    }
