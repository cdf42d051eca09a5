"""Sessions as the sign-in core sees them: the row a sign-in starts, and who is told when sessions end.

A session is started by a completed sign-in (`new_session`: a fresh 256-bit id, of which the
store keeps only the SHA-256, and the sign-in's public `sid`), and ended by the user, by the
account page, by an admin disabling the account or suspending an app. The store ends it in one
transaction that also queues each face's notices (the apps that received tokens or tickets in it);
`LogoutNotifiers` then tells each face's sender to look at its queue now. Every way a session
ends comes through `sessions_ended`, so a face registered here hears of all of them.
"""

from __future__ import annotations

from collections.abc import Callable

from campusid.idp.crypto import new_token, token_hash
from campusid.idp.store.rows import Ended, Session, SignIn

# A face's reaction to ended sessions; never awaited by the page that ended them.
Notifier = Callable[[Ended | None], None]


class LogoutNotifiers:
    """The faces' notifiers, in registration order (OIDC: wake the back-channel logout sender)."""

    def __init__(self) -> None:
        self._notifiers: list[Notifier] = []

    def register(self, notifier: Notifier) -> None:
        self._notifiers.append(notifier)

    def sessions_ended(self, ended: Ended | None = None) -> None:
        """Sessions ended (`ended` when the caller knows which): each face delivers its notices."""
        for notifier in self._notifiers:
            notifier(ended)


def new_session(sign_in: SignIn, ttl: int, ip: str | None = None, user_agent: str | None = None) -> tuple[str, Session]:
    """A fresh session for `sign_in`: its id (the cookie value) and the row the store keeps (the
    id's hash and the sign-in; the browser's address and user agent, which /account shows)."""
    raw = new_token(32)
    row = Session(
        id_hash=token_hash(raw),
        user_id=sign_in.user_id,
        auth_time=sign_in.auth_time,
        created_at=sign_in.auth_time,
        expires_at=sign_in.auth_time + ttl,
        sid=sign_in.sid,
        amr=sign_in.amr,
        acr=sign_in.acr,
        ip=ip[:64] if ip else None,
        user_agent=user_agent[:200] if user_agent else None,
        last_seen_at=sign_in.auth_time,
    )
    return raw, row
