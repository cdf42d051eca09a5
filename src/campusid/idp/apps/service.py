"""The review workflow: draft → under_review → approved → active; under_review → rejected
(feedback required) → edit → under_review; active ⇄ suspended. Every transition is one atomic
conditional UPDATE plus an audit event."""

from __future__ import annotations

import re
import secrets
import time

from campusid.idp.crypto import new_token, token_hash
from campusid.idp.protocol import scopes as scope_rules
from campusid.idp.protocol.pairwise import web_hosts
from campusid.idp.protocol.redirect_uri import registration_problem
from campusid.idp.store import Store
from campusid.idp.store.repos import Conflict

DRAFT, UNDER_REVIEW, APPROVED, ACTIVE, REJECTED, SUSPENDED = (
    "draft",
    "under_review",
    "approved",
    "active",
    "rejected",
    "suspended",
)
STATES = (DRAFT, UNDER_REVIEW, APPROVED, ACTIVE, REJECTED, SUSPENDED)
EDITABLE = (DRAFT, REJECTED)
TYPES = ("web", "native")
_CLIENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-]{2,63}$")
_SUB_SHAPE = re.compile(r"^[A-Za-z0-9_\-]{43}$")


class AppError(Exception):
    status = 400

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotFound(AppError):
    status = 404


class Forbidden(AppError):
    status = 403


class InvalidTransition(AppError):
    status = 409


class ValidationFailed(AppError):
    status = 422


def _now() -> int:
    return int(time.time())


class AppService:
    def __init__(self, store: Store) -> None:
        self._store = store

    # -- reading --------------------------------------------------------------------------
    def get(self, client_id: str) -> dict:
        app = self._store.clients.get(client_id)
        if app is None:
            raise NotFound(f"no application with client_id {client_id!r}")
        return app

    def show(self, client_id: str) -> dict:
        """The app as `apps show --json` prints it (DESIGN 3.6)."""
        app = self.get(client_id)
        owner = self._store.users.by_id(app["owner_id"])
        return {
            "client_id": app["client_id"],
            "name": app["name"],
            "description": app["description"],
            "type": app["type"],
            "state": app["state"],
            "redirect_uris": list(app["redirect_uris"]),
            "scopes": list(app["scopes"]),
            "granted_scopes": list(app["granted_scopes"]),
            "sector_identifier_uri": app["sector_identifier_uri"],
            "justifications": dict(app["justifications"] or {}),
            "revision": _revision_view(app),
            "token_endpoint_auth_method": "client_secret_basic" if app["type"] == "web" else "none",
            "owner": owner["username"] if owner else None,
            "created_at": app["created_at"],
            "updated_at": app["updated_at"],
            "history": [
                {k: v for k, v in _event_view(e).items() if k != "client_id"}
                for e in self._store.clients.events(client_id)
            ],
        }

    # -- validation -----------------------------------------------------------------------
    def _user(self, username: str, what: str) -> dict:
        user = self._store.users.by_username(username)
        if user is None:
            raise ValidationFailed(f"{what} {username!r} is not a known user")
        return user

    @staticmethod
    def _check_config(
        app_type: str, name: str, redirect_uris: list[str], requested: list[str], sector_identifier_uri: str | None
    ) -> None:
        if app_type not in TYPES:
            raise ValidationFailed("type must be web or native")
        if not name or not name.strip() or len(name) > 200:
            raise ValidationFailed("name must be 1 to 200 characters")
        if not redirect_uris:
            raise ValidationFailed("at least one redirect URI is required")
        if len(redirect_uris) > 20:
            raise ValidationFailed("at most 20 redirect URIs")
        for uri in redirect_uris:
            problem = registration_problem(uri, app_type)
            if problem:
                raise ValidationFailed(f"redirect URI {uri!r} {problem}")
        bad = scope_rules.unknown(requested)
        if bad:
            raise ValidationFailed(f"unknown scope(s): {', '.join(bad)}; known: {', '.join(scope_rules.ALL)}")
        if sector_identifier_uri is not None and (
            not sector_identifier_uri.startswith("https://") or registration_problem(sector_identifier_uri, "web")
        ):
            raise ValidationFailed("sector_identifier_uri must be an https URL (OIDC Core 8.1)")
        if app_type == "web" and sector_identifier_uri is None and len(web_hosts(redirect_uris)) > 1:
            raise ValidationFailed("redirect URIs span several hosts: register a sector_identifier_uri (OIDC Core 8.1)")

    # -- transitions ----------------------------------------------------------------------
    def create(
        self,
        *,
        name: str,
        app_type: str,
        redirect_uris: list[str],
        scopes: list[str] | None,
        owner: str,
        description: str = "",
        sector_identifier_uri: str | None = None,
        client_id: str | None = None,
        justifications: dict[str, str] | None = None,
    ) -> tuple[dict, str | None]:
        """Register an app in `draft`. Returns (app, client_secret) — the secret only for web apps, once.

        `justifications` ({sensitive scope: why}) is required for every requested sensitive scope
        when given (the portal and the API always give it; the operator's CLI may omit it)."""
        requested = scope_rules.parse(" ".join(scopes or ["openid"]))
        if "openid" not in requested:
            requested.insert(0, "openid")
        redirect_uris = list(dict.fromkeys(redirect_uris))
        self._check_config(app_type, name, redirect_uris, requested, sector_identifier_uri)
        reasons = _check_justifications(requested, justifications) if justifications is not None else {}
        owner_row = self._user(owner, "owner")
        if client_id is None:
            client_id = f"app-{secrets.token_hex(10)}"
        elif not _CLIENT_ID.match(client_id) or _SUB_SHAPE.match(client_id):
            raise ValidationFailed("client_id must be 3-64 letters, digits, '.', '_' or '-'")
        secret = new_token(32) if app_type == "web" else None
        now = _now()
        row = {
            "client_id": client_id,
            "name": name.strip(),
            "description": description or "",
            "type": app_type,
            "state": DRAFT,
            "secret_hash": token_hash(secret) if secret else None,
            "redirect_uris": redirect_uris,
            "scopes": requested,
            "granted_scopes": [],
            "justifications": reasons,
            "sector_identifier_uri": sector_identifier_uri,
            "revision": None,
            "owner_id": owner_row["id"],
            "created_at": now,
            "updated_at": now,
        }
        event = {
            "client_id": client_id,
            "actor": owner,
            "action": "create",
            "from_state": None,
            "to_state": DRAFT,
            "feedback": None,
            "at": now,
        }
        try:
            self._store.clients.create(row, event)
        except Conflict:
            raise InvalidTransition(f"an application with client_id {client_id!r} exists") from None
        return self.show(client_id), secret

    def _transition(
        self,
        client_id: str,
        from_states: tuple[str, ...],
        to_state: str,
        action: str,
        actor: str | None,
        feedback: str | None = None,
        **values,
    ) -> dict:
        app = self.get(client_id)
        if app["state"] not in from_states:
            raise InvalidTransition(
                f"cannot {action} an application that is {app['state']} (only from {' or '.join(from_states)})"
            )
        now = _now()
        ok = self._store.clients.transition(
            client_id,
            from_states,
            {"state": to_state, "updated_at": now, **values},
            {
                "client_id": client_id,
                "actor": actor,
                "action": action,
                "from_state": app["state"],
                "to_state": to_state,
                "feedback": feedback,
                "at": now,
            },
        )
        if not ok:
            raise InvalidTransition(
                f"the application changed state while you were working; it is no longer {app['state']}"
            )
        return self.show(client_id)

    def edit(
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
    ) -> dict:
        app = self.get(client_id)
        if app["state"] not in EDITABLE:
            raise InvalidTransition(f"cannot edit an application that is {app['state']} (only draft or rejected)")
        new_name = name if name is not None else app["name"]
        new_uris = list(dict.fromkeys(redirect_uris)) if redirect_uris is not None else list(app["redirect_uris"])
        new_scopes = scope_rules.parse(" ".join(scopes)) if scopes is not None else list(app["scopes"])
        if "openid" not in new_scopes:
            new_scopes.insert(0, "openid")
        sector = sector_identifier_uri if sector_identifier_uri is not None else app["sector_identifier_uri"]
        self._check_config(app["type"], new_name, new_uris, new_scopes, sector)
        values = {
            "name": new_name.strip(),
            "redirect_uris": new_uris,
            "scopes": new_scopes,
            "sector_identifier_uri": sector,
        }
        if description is not None:
            values["description"] = description
        if justifications is not None:
            values["justifications"] = _check_justifications(new_scopes, justifications)
        return self._transition(client_id, (app["state"],), app["state"], "edit", actor, **values)

    def submit(self, client_id: str, actor: str | None = None) -> dict:
        return self._transition(client_id, EDITABLE, UNDER_REVIEW, "submit", actor)

    def _reviewer(self, client_id: str, by: str) -> dict:
        reviewer = self._user(by, "reviewer")
        if reviewer["role"] != "admin":
            raise Forbidden(f"{by!r} is not an admin; only admins review applications")
        if reviewer["id"] == self.get(client_id)["owner_id"]:
            raise Forbidden("nobody reviews their own application")
        return reviewer

    def approve(self, client_id: str, by: str, grant_scopes: list[str] | None = None) -> dict:
        self._reviewer(client_id, by)
        app = self.get(client_id)
        approved_sensitive = self._approved_sensitive(app, grant_scopes)
        granted = scope_rules.grantable(list(app["scopes"]), approved_sensitive)
        return self._transition(
            client_id, (UNDER_REVIEW,), APPROVED, "approve", by, feedback=None, granted_scopes=granted
        )

    def reject(self, client_id: str, by: str, feedback: str) -> dict:
        self._reviewer(client_id, by)
        feedback = _check_feedback(feedback)
        return self._transition(client_id, (UNDER_REVIEW,), REJECTED, "reject", by, feedback=feedback)

    def activate(self, client_id: str, actor: str | None = None) -> dict:
        return self._transition(client_id, (APPROVED,), ACTIVE, "activate", actor)

    def suspend(self, client_id: str, by: str, reason: str | None = None) -> dict:
        self._reviewer(client_id, by)
        return self._transition(client_id, (ACTIVE,), SUSPENDED, "suspend", by, feedback=reason)

    def reinstate(self, client_id: str, by: str) -> dict:
        self._reviewer(client_id, by)
        return self._transition(client_id, (SUSPENDED,), ACTIVE, "reinstate", by)

    def rotate_secret(self, client_id: str, actor: str | None = None) -> str:
        app = self.get(client_id)
        if app["type"] != "web":
            raise InvalidTransition("native applications are public clients and have no secret")
        secret = new_token(32)
        self._transition(
            client_id, (app["state"],), app["state"], "rotate_secret", actor, secret_hash=token_hash(secret)
        )
        return secret

    # -- revisions of active apps (the portal issue) ------------------------------------------
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

    # -- who may do what, and lists for the portal, the console and the API --------------------
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


def _check_justifications(scopes: list[str], justifications: dict[str, str]) -> dict[str, str]:
    """Every requested sensitive scope needs a reason a reviewer can weigh (DESIGN 3.4)."""
    out = {}
    for scope in scopes:
        if scope in scope_rules.SENSITIVE:
            reason = (justifications.get(scope) or "").strip()
            if not reason:
                raise ValidationFailed(f"explain why the app needs the sensitive scope {scope}")
            if len(reason) > 2000:
                raise ValidationFailed(f"the reason for {scope} is at most 2000 characters")
            out[scope] = reason
    return out


def _check_feedback(feedback: str | None) -> str:
    if not feedback or not feedback.strip():
        raise ValidationFailed("feedback is required when rejecting an application")
    if len(feedback) > 5000:
        raise ValidationFailed("feedback is at most 5000 characters")
    return feedback.strip()


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
