"""Revisions of active apps (the portal issue): a change to an active app is reviewed like a new
app while the active configuration keeps serving logins; approving replaces the configuration."""

from __future__ import annotations

import time

from campusid.i18n import N_
from campusid.idp import release
from campusid.idp.apps import rules
from campusid.idp.apps.errors import InvalidTransition, ValidationFailed
from campusid.idp.apps.registrations import given_registration, registration_args
from campusid.idp.apps.states import ACTIVE, REJECTED, UNDER_REVIEW
from campusid.idp.store.rows import ClientConfig, ClientEvent

CHANGED_MEANWHILE = N_("the application changed while you were working; reload and try again")


def _now() -> int:
    return int(time.time())


class RevisionsMixin:
    """Methods of AppService that handle revisions; they rely on its get/show/_for_review."""

    async def propose_revision(
        self,
        client_id: str,
        *,
        actor: str | None,
        name: str,
        description: str,
        redirect_uris: list[str] | None = None,
        scopes: list[str],
        justifications: dict[str, str],
        sector_identifier_uri: str | None = None,
        grant_types: list[str] | None = None,
        post_logout_redirect_uris: list[str] | None = None,
        backchannel_logout_uri: str | None = None,
        services: list[str] | None = None,
    ) -> dict:
        """File a change to an active app for review. The active configuration keeps serving
        logins until an admin approves the revision; a rejected revision may be filed again."""
        app = await self.get(client_id)
        if app.state != ACTIVE:
            raise InvalidTransition(
                N_(
                    "only an active application takes a revision; this one is %(state)s (edit it instead)",
                    state=app.state,
                )
            )
        if app.revision_state == UNDER_REVIEW:
            raise InvalidTransition(N_("a revision of this application is already under review"))
        face = self.registrations.of(app.type)
        new_scopes = face.bundles(scopes)
        rules.check_app(name, new_scopes)
        given = given_registration(
            redirect_uris=redirect_uris,
            sector_identifier_uri=sector_identifier_uri,
            post_logout_redirect_uris=post_logout_redirect_uris,
            backchannel_logout_uri=backchannel_logout_uri,
            grant_types=grant_types,
            services=services,
        )
        registered = face.check(app.type, **registration_args(face, app.type, given))
        now = _now()
        revision = {
            "name": name.strip(),
            "description": description or "",
            "scopes": new_scopes,
            "justifications": rules.check_justifications(new_scopes, justifications),
            **registered,
            "submitted_at": now,
            "submitted_by": actor,
        }
        await self._revision_step(app, (None, REJECTED), revision, UNDER_REVIEW, "revision_submit", actor)
        return await self.show(client_id)

    async def approve_revision(
        self, client_id: str, by: str, grant_scopes: rules.Picked = None, grant_types: rules.Picked = None
    ) -> dict:
        """Replace the active configuration with the revision (sensitive scopes as granted; the
        extra grant types in `grant_types`, or, without it, those the app has now)."""
        app = await self._for_review(client_id, by)
        revision = app.revision or {}
        if app.state != ACTIVE or app.revision_state != UNDER_REVIEW:
            raise InvalidTransition(N_("this application has no revision under review"))
        granted = release.grantable(
            list(revision["scopes"]), self._approved_sensitive(revision["scopes"], grant_scopes)
        )
        config = ClientConfig(
            name=revision["name"],
            description=revision["description"],
            redirect_uris=list(revision.get("redirect_uris") or ()),
            scopes=revision["scopes"],
            justifications=revision["justifications"],
            sector_identifier_uri=revision.get("sector_identifier_uri"),
            grant_types=list(revision.get("grant_types") or ()),
            post_logout_redirect_uris=list(revision.get("post_logout_redirect_uris") or ()),
            backchannel_logout_uri=revision.get("backchannel_logout_uri"),
            services=list(revision.get("services") or ()),
        )
        granted_types = (
            self.registrations.of(app.type).check_grant_types(grant_types)
            if grant_types is not None
            else list(app.granted_grant_types)
        )
        event = ClientEvent(None, client_id, by, "revision_approve", ACTIVE, ACTIVE, None, _now())
        if not await self._store.apps.apply_revision(
            UNDER_REVIEW, config, granted, event, granted_types, app_type=app.type
        ):
            raise InvalidTransition(CHANGED_MEANWHILE)
        await self._audited(event, "approved")
        return await self.show(client_id)

    async def reject_revision(self, client_id: str, by: str, feedback: str) -> dict:
        app = await self._for_review(client_id, by)
        if app.state != ACTIVE or app.revision_state != UNDER_REVIEW:
            raise InvalidTransition(N_("this application has no revision under review"))
        feedback = rules.check_feedback(feedback)
        await self._revision_step(app, (UNDER_REVIEW,), app.revision, REJECTED, "revision_reject", by, feedback)
        return await self.show(client_id)

    @staticmethod
    def _approved_sensitive(requested: list[str] | tuple[str, ...], grant_scopes: list[str] | None) -> list[str] | None:
        if grant_scopes is None:
            return None
        approved = [s for s in grant_scopes if s in release.SENSITIVE]
        not_requested = [s for s in approved if s not in requested]
        if not_requested:
            raise ValidationFailed(
                N_("cannot grant scopes the app did not request: %(scopes)s", scopes=", ".join(not_requested))
            )
        return approved

    async def _revision_step(
        self,
        app,
        from_states: tuple,
        revision,
        revision_state: str,
        action: str,
        actor: str | None,
        feedback: str | None = None,
    ) -> None:
        """Set the pending revision and its state, if the app's revision is still in the state it
        was read in (one of `from_states`); audited."""
        if app.revision_state not in from_states:
            raise InvalidTransition(CHANGED_MEANWHILE)
        event = ClientEvent(None, app.client_id, actor, action, ACTIVE, ACTIVE, feedback, _now())
        if not await self._store.apps.set_revision(app.revision_state, revision, revision_state, event):
            raise InvalidTransition(CHANGED_MEANWHILE)
        await self._audited(event, revision_state)
