"""Read-side of the review workflow: ownership, lists, the review queue and the audit log."""

from __future__ import annotations

from campusid.idp.apps.errors import Forbidden, ValidationFailed
from campusid.idp.apps.states import ACTIVE, STATES, UNDER_REVIEW


class QueriesMixin:
    """Methods of AppService for the portal, the console and the API."""

    def owned(self, client_id: str, username: str) -> dict:
        """The app if `username` owns it; Forbidden otherwise (developers touch only their own apps)."""
        app = self.get(client_id)
        user = self._store.users.by_username(username)
        if user is None or app["owner_id"] != user["id"]:
            raise Forbidden("this application belongs to another developer")
        return app

    def list_owned(self, username: str) -> list[dict]:
        user = self._store.users.by_username(username)
        if user is None:
            return []
        return [self.summary(a) for a in self._store.clients.list(owner_id=user["id"])]

    def list_all(self, state: str | None = None) -> list[dict]:
        if state is not None and state not in STATES:
            raise ValidationFailed(f"state must be one of {', '.join(STATES)}")
        return [self.summary(a) for a in self._store.clients.list(states=[state] if state else None)]

    def review_queue(self) -> list[dict]:
        """New apps and revisions waiting for a reviewer, oldest submission first."""
        items = [
            {"kind": "app", "since": a["updated_at"], "app": self.summary(a)}
            for a in self._store.clients.list(states=[UNDER_REVIEW])
        ]
        items += [
            {
                "kind": "revision",
                "since": (a["revision"] or {}).get("submitted_at", a["updated_at"]),
                "app": self.summary(a),
            }
            for a in self._store.clients.with_revision([UNDER_REVIEW])
            if a["state"] == ACTIVE
        ]
        return sorted(items, key=lambda i: (i["since"], i["app"]["client_id"]))

    def audit_log(self, limit: int = 200) -> list[dict]:
        return [_event_view(e) for e in self._store.clients.all_events(limit)]

    def summary(self, app: dict) -> dict:
        owner = self._store.users.by_id(app["owner_id"])
        return {
            "client_id": app["client_id"],
            "name": app["name"],
            "type": app["type"],
            "state": app["state"],
            "revision_state": app["revision_state"],
            "owner": owner["username"] if owner else None,
            "updated_at": app["updated_at"],
        }


def _revision_view(app: dict) -> dict | None:
    if not app.get("revision_state") or not app.get("revision"):
        return None
    return {**app["revision"], "state": app["revision_state"]}


def _event_view(e: dict) -> dict:
    return {
        "client_id": e["client_id"],
        "at": e["at"],
        "actor": e["actor"],
        "action": e["action"],
        "from": e["from_state"],
        "to": e["to_state"],
        "feedback": e["feedback"],
    }
