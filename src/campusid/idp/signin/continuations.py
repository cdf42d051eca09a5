"""What happens after a person is signed in, by the kind of sign-in: a registry each face fills.

A face that needs a person signed in (OIDC's authorization endpoint, its device page; CAS's and
SAML's later) begins a pending sign-in of its own `kind` (signin/pending.py) and registers one
`Continuation` for that kind. The login, second-factor, passkey and consent pages know no face:
once the password (and the factor) are right they look up the continuation of the pending
sign-in's kind and hand over to it; the consent page asks it what to show and tells it what the
person decided.

The continuations are given the app's context and the request as the faces' own types (this
package speaks no HTTP: `Answer` is whatever the face answers the browser with).
"""

from __future__ import annotations

from typing import Any, Protocol

from campusid.idp.signin.consent import ConsentAsk
from campusid.idp.signin.pending import PendingSignIn
from campusid.idp.signin.policy import AppPolicy
from campusid.idp.store.rows import SignIn

Answer = Any  # the face's answer to the browser (a Starlette Response in every face today)


class Continuation(Protocol):
    kind: str

    async def policy(self, ctx: Any, pending: PendingSignIn) -> AppPolicy:
        """What the app and the request ask of this sign-in (a second factor?)."""

    async def signed_in(self, ctx: Any, request: Any, pending: PendingSignIn, sign_in: SignIn) -> Answer:
        """The person is signed in for `pending` (password, and the factor where one was needed):
        finish it (the session starts in the same write) and answer the browser."""

    async def consent(self, ctx: Any, request: Any, pending: PendingSignIn, subject: SignIn) -> ConsentAsk | Answer:
        """What the consent page asks for `pending`, or the answer that ends the visit instead
        (the app is gone, or nothing is left to ask)."""

    async def decided(self, ctx: Any, request: Any, pending: PendingSignIn, subject: SignIn, allow: bool) -> Answer:
        """The person allowed or denied on the consent page; `pending` is finished already."""


class UnknownKind(LookupError):
    """A pending sign-in of a kind no face registered (a face removed, an older release's row)."""


class Continuations:
    """The continuations of one app, by kind."""

    def __init__(self) -> None:
        self._by_kind: dict[str, Continuation] = {}

    def register(self, continuation: Continuation) -> None:
        if continuation.kind in self._by_kind:
            raise ValueError(f"a continuation of kind {continuation.kind!r} is registered already")
        self._by_kind[continuation.kind] = continuation

    def __getitem__(self, kind: str) -> Continuation:
        try:
            return self._by_kind[kind]
        except KeyError:
            raise UnknownKind(kind) from None

    def __contains__(self, kind: str) -> bool:
        return kind in self._by_kind

    def kinds(self) -> tuple[str, ...]:
        return tuple(self._by_kind)
