"""Request and response bodies of the management API (they make the OpenAPI document)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


GrantType = Literal["device_code", "cas_proxy"]
# What the review workflow refuses with 422 whatever the app, stated in the schema too: a name or
# feedback must hold a character other than white space, and an app needs a redirect URI.
_TEXT = r"\S"
_NAME = {"min_length": 1, "max_length": 200, "pattern": _TEXT}
_GRANT_TYPES_ASKED = (
    "Grant types asked for beyond the default flow: `device_code` (RFC 8628 device authorization; web and native "
    "apps), `cas_proxy` (CAS proxy-granting tickets; CAS apps)."
)
_SERVICES = (
    "A CAS app's service URLs: each the address its service URLs begin with (at a path segment boundary); "
    "https, or http on loopback; no query, fragment, user information or dot segments."
)
_POST_LOGOUT = "Where RP-initiated logout may return the browser (OpenID Connect RP-Initiated Logout 1.0); exact match."
_BACKCHANNEL = "Where logout tokens are POSTed (OpenID Connect Back-Channel Logout 1.0); https, or http on loopback."


class AppCreate(_Strict):
    name: str = Field(**_NAME)
    type: Literal["web", "native", "cas"]
    description: str = Field("", max_length=2000)
    redirect_uris: list[str] = Field(
        default_factory=list, max_length=20, description="Web and native apps: at least one."
    )
    services: list[str] = Field(default_factory=list, max_length=20, description=_SERVICES)
    scopes: list[str] = Field(default_factory=lambda: ["openid"], max_length=20)
    justifications: dict[str, str] = Field(
        default_factory=dict, description="A reason for each requested sensitive scope (student_number, grades.read)."
    )
    sector_identifier_uri: str | None = None
    grant_types: list[GrantType] = Field(default_factory=list, max_length=4, description=_GRANT_TYPES_ASKED)
    post_logout_redirect_uris: list[str] = Field(default_factory=list, max_length=20, description=_POST_LOGOUT)
    backchannel_logout_uri: str | None = Field(None, max_length=2000, description=_BACKCHANNEL)


class AppEdit(_Strict):
    """Fields given replace the old values; the app stays in its state (submit separately)."""

    name: str | None = Field(None, **_NAME)
    description: str | None = Field(None, max_length=2000)
    redirect_uris: list[str] | None = Field(None, min_length=1, max_length=20)
    services: list[str] | None = Field(None, min_length=1, max_length=20, description=_SERVICES)
    scopes: list[str] | None = Field(None, max_length=20)
    justifications: dict[str, str] | None = None
    sector_identifier_uri: str | None = None
    grant_types: list[GrantType] | None = Field(None, max_length=4, description=_GRANT_TYPES_ASKED)
    post_logout_redirect_uris: list[str] | None = Field(None, max_length=20, description=_POST_LOGOUT)
    backchannel_logout_uri: str | None = Field(None, max_length=2000, description=_BACKCHANNEL + " Empty removes it.")


class Revision(_Strict):
    """The complete new configuration of an active app, reviewed before it replaces the current one."""

    name: str = Field(**_NAME)
    description: str = Field("", max_length=2000)
    redirect_uris: list[str] = Field(default_factory=list, max_length=20, description="Web and native apps.")
    services: list[str] = Field(default_factory=list, max_length=20, description=_SERVICES)
    scopes: list[str] = Field(max_length=20)
    justifications: dict[str, str] = Field(default_factory=dict)
    sector_identifier_uri: str | None = None
    grant_types: list[GrantType] = Field(default_factory=list, max_length=4, description=_GRANT_TYPES_ASKED)
    post_logout_redirect_uris: list[str] = Field(default_factory=list, max_length=20, description=_POST_LOGOUT)
    backchannel_logout_uri: str | None = Field(None, max_length=2000, description=_BACKCHANNEL)


class Approve(_Strict):
    grant_scopes: list[str] | None = Field(
        None, description="Sensitive scopes granted; omitted: every requested one. Ordinary scopes are always granted."
    )
    grant_types: list[GrantType] | None = Field(
        None,
        max_length=4,
        description="Grant types granted beyond the code flow (`device_code`); omitted: none for a new app, "
        "unchanged for a revision.",
    )
    require_mfa: bool = Field(False, description="Every sign-in to the app uses a second factor (new apps).")
    subject: Literal["app", "revision"] = "app"


class Reject(_Strict):
    feedback: str = Field(min_length=1, max_length=5000, pattern=_TEXT)
    subject: Literal["app", "revision"] = "app"


class Suspend(_Strict):
    reason: str | None = Field(None, max_length=5000)


class RoleChange(_Strict):
    role: Literal["student", "developer", "admin"]


class Event(BaseModel):
    at: int
    actor: str | None
    action: str
    from_: str | None = Field(alias="from")
    to: str | None
    feedback: str | None
    client_id: str | None = None

    model_config = ConfigDict(populate_by_name=True)


class App(BaseModel):
    client_id: str
    name: str
    description: str
    type: str
    state: str
    redirect_uris: list[str]
    scopes: list[str]
    granted_scopes: list[str]
    justifications: dict[str, str]
    sector_identifier_uri: str | None
    grant_types: list[str] = Field(description="Grant types the app asks for beyond the code flow.")
    granted_grant_types: list[str] = Field(description="Grant types its review granted beyond the code flow.")
    require_mfa: bool = Field(False, description="Whether every sign-in to the app uses a second factor.")
    post_logout_redirect_uris: list[str] = Field(default_factory=list, description=_POST_LOGOUT)
    backchannel_logout_uri: str | None = Field(None, description=_BACKCHANNEL)
    services: list[str] | None = Field(None, description="A CAS app's service URLs (CAS apps only).")
    revision: dict | None
    token_endpoint_auth_method: str | None
    owner: str | None
    created_at: int
    updated_at: int
    history: list[Event]
    client_secret: str | None = Field(None, description="Only in the answer that created or rotated it.")


class AppSummary(BaseModel):
    client_id: str
    name: str
    type: str
    state: str
    revision_state: str | None
    owner: str | None
    updated_at: int


class QueueItem(BaseModel):
    kind: Literal["app", "revision"]
    since: int
    app: AppSummary


class User(BaseModel):
    username: str
    name: str
    role: str
    student_number: str | None


class Me(BaseModel):
    user: User
    csrf_token: str = Field(description="Send it as the X-CSRF-Token header on every POST, PATCH, PUT and DELETE.")


class Error(BaseModel):
    error: str
    error_description: str
