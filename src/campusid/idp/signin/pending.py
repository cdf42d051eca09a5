"""A pending sign-in: what a browser began (an app's authorization request, a device's user code,
a page of this server) and has not finished, typed.

Each pending sign-in is one stored interaction, continued by one face: `kind` names the
continuation that knows what to do once the person is signed in (signin/continuations.py).
It moves through three stages:

    LOGIN          nobody signed in for it yet: the login page (password or passkey)
    SECOND_FACTOR  the password was right; a second factor is to be given (`step` VERIFY) or set
                   up first (`step` ENROL; `done` once the new factor was confirmed)
    CONSENT        signed in; the person is to allow or deny the app

A browser may have several at once, one per tab (an app's sign-in, and the admin console opened
beside it): each is reached by its own `handle`, which its pages carry (signin/binding.py binds
the handle to the browser). Each change of stage stores a new interaction under a new handle and
deletes the old one in the same write, so a handle is good for one step only.

The stored form is JSON (`params`): the kind's own request under "request", the app's client_id
and name at the top (the login's one statement joins the app by it), the stage and its step, and
the language its pages speak when the app asked for one (OIDC `ui_locales`) or the person chose one
on a page of this sign-in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from campusid.idp.store.rows import Interaction, LoginContext, SignIn

LOGIN, SECOND_FACTOR, CONSENT = "login", "second_factor", "consent"
STAGES = (LOGIN, SECOND_FACTOR, CONSENT)
# What a sign-in at the SECOND_FACTOR stage needs (signin/policy.py decides).
VERIFY, ENROL = "verify", "enrol"


class NotASignIn(ValueError):
    """A stored interaction that is not a pending sign-in of this release (another kind of
    interaction, or one written by an older release: it is treated as expired)."""


@dataclass(frozen=True)
class PendingSignIn:
    """One pending sign-in, as read from the store (or about to be stored)."""

    handle: str
    row: Interaction
    login: LoginContext | None = None  # what the login POST reads with it, in one statement

    @property
    def id_hash(self) -> str:
        return self.row.id_hash

    @property
    def kind(self) -> str:
        return self.row.kind

    @property
    def stage(self) -> str:
        return self.row.params["stage"]

    @property
    def request(self) -> Mapping:
        """The face's own parameters (an authorization request, a device code's id, a page to return to)."""
        return self.row.params["request"]

    @property
    def client_id(self) -> str | None:
        return self.row.params.get("client_id")

    @property
    def client_name(self) -> str | None:
        return self.row.params.get("client_name")

    @property
    def locale(self) -> str | None:
        """The catalogue its pages speak (campusid.i18n), when the app or the person chose one."""
        return self.row.params.get("locale")

    @property
    def step(self) -> str | None:
        return self.row.params.get("step")

    @property
    def done(self) -> bool:
        """The second factor was set up and confirmed in this sign-in: it may go on."""
        return bool(self.row.params.get("done"))

    @property
    def sign_in(self) -> SignIn | None:
        """Who signed in for it, and how (None at the LOGIN stage)."""
        return self.row.sign_in

    @property
    def user_id(self) -> str | None:
        return self.row.user_id


def params(
    request: Mapping,
    stage: str,
    *,
    client_id: str | None = None,
    client_name: str | None = None,
    step: str | None = None,
    done: bool = False,
    locale: str | None = None,
) -> dict:
    """The stored form of a pending sign-in's parameters."""
    if stage not in STAGES:
        raise ValueError(f"unknown sign-in stage {stage!r}")
    out: dict = {"stage": stage, "request": dict(request)}
    if client_id is not None:
        out["client_id"] = client_id
        out["client_name"] = client_name
    if step is not None:
        out["step"] = step
    if done:
        out["done"] = True
    if locale is not None:
        out["locale"] = locale
    return out


def read(handle: str, row: Interaction, login: LoginContext | None = None) -> PendingSignIn:
    """The pending sign-in a stored interaction holds; NotASignIn when it holds none."""
    stored = row.params
    if (
        not isinstance(stored, Mapping)
        or stored.get("stage") not in STAGES
        or not isinstance(stored.get("request"), Mapping)
    ):
        raise NotASignIn(row.kind)
    if stored["stage"] != LOGIN and row.sign_in is None:
        raise NotASignIn(row.kind)
    return PendingSignIn(handle, row, login)
