"""Revisions of active apps (the portal issue): a change to an active app is reviewed like a new
app while the active configuration keeps serving logins; approving replaces the configuration."""

from __future__ import annotations

import time

from campusid.idp.apps.errors import InvalidTransition, ValidationFailed
from campusid.idp.apps.rules import _check_feedback, _check_justifications
from campusid.idp.apps.states import ACTIVE, REJECTED, UNDER_REVIEW
from campusid.idp.protocol import scopes as scope_rules


def _now() -> int:
    return int(time.time())


class RevisionsMixin:
    """Methods of AppService that handle revisions; they rely on its get/show/_check_config/_reviewer."""

    def propose_revision(
        self,
        client_id: str,
        *,
        actor: str | None,
        name: str,
        description: str,
        redirect_uris: list[str],
        scopes: list[str],
        justifications: dict[str, str],
        sector_identifier_uri: str | None = None,
    ) -> dict:
        """File a change to an active app for review. The active configuration keeps serving
        logins until an admin approves the revision; a rejected revision may be filed again."""
        app = self.get(client_id)
        if app["state"] != ACTIVE:
            raise InvalidTransition(
                f"only an active application takes a revision; this one is {app['state']} (edit it instead)"
            )
        if app["revision_state"] == UNDER_REVIEW:
            raise InvalidTransition("a revision of this application is already under review")
        new_uris = list(dict.fromkeys(redirect_uris))
        new_scopes = scope_rules.parse(" ".join(scopes))
        if "openid" not in new_scopes:
            new_scopes.insert(0, "openid")
        self._check_config(app["type"], name, new_uris, new_scopes, sector_identifier_uri)
        now = _now()
        revision = {
            "name": name.strip(),
            "description": description or "",
            "redirect_uris": new_uris,
            "scopes": new_scopes,
            "justifications": _check_justifications(new_scopes, justifications),
            "sector_identifier_uri": sector_identifier_uri,
            "submitted_at": now,
            "submitted_by": actor,
        }
        self._revision_step(
            app, (None, REJECTED), {"revision": revision, "revision_state": UNDER_REVIEW}, "revision_submit", actor
        )
        return self.show(client_id)

    def approve_revision(self, client_id: str, by: str, grant_scopes: list[str] | None = None) -> dict:
        """Replace the active configuration with the revision (sensitive scopes as granted)."""
        self._reviewer(client_id, by)
        app = self.get(client_id)
        revision = app["revision"] or {}
        if app["state"] != ACTIVE or app["revision_state"] != UNDER_REVIEW:
            raise InvalidTransition("this application has no revision under review")
        granted = scope_rules.grantable(list(revision["scopes"]), self._approved_sensitive(revision, grant_scopes))
        values = {k: revision[k] for k in ("name", "description", "redirect_uris", "scopes", "justifications")}
        values.update(
            sector_identifier_uri=revision["sector_identifier_uri"],
            granted_scopes=granted,
            revision=None,
            revision_state=None,
        )
        self._revision_step(app, (UNDER_REVIEW,), values, "revision_approve", by)
        return self.show(client_id)

    def reject_revision(self, client_id: str, by: str, feedback: str) -> dict:
        self._reviewer(client_id, by)
        app = self.get(client_id)
        if app["state"] != ACTIVE or app["revision_state"] != UNDER_REVIEW:
            raise InvalidTransition("this application has no revision under review")
        feedback = _check_feedback(feedback)
        self._revision_step(app, (UNDER_REVIEW,), {"revision_state": REJECTED}, "revision_reject", by, feedback)
        return self.show(client_id)

    @staticmethod
    def _approved_sensitive(config: dict, grant_scopes: list[str] | None) -> list[str] | None:
        if grant_scopes is None:
            return None
        approved = [s for s in grant_scopes if s in scope_rules.SENSITIVE]
        not_requested = [s for s in approved if s not in config["scopes"]]
        if not_requested:
            raise ValidationFailed(f"cannot grant scopes the app did not request: {', '.join(not_requested)}")
        return approved

    def _revision_step(
        self, app: dict, from_states: tuple, values: dict, action: str, actor: str | None, feedback: str | None = None
    ) -> None:
        now = _now()
        event = {
            "client_id": app["client_id"],
            "actor": actor,
            "action": action,
            "from_state": ACTIVE,
            "to_state": ACTIVE,
            "feedback": feedback,
            "at": now,
        }
        if not self._store.clients.update_revision(app["client_id"], from_states, {**values, "updated_at": now}, event):
            raise InvalidTransition("the application changed while you were working; reload and try again")
