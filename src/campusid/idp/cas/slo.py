"""CAS single logout (Apereo CAS Protocol 3.0.3 2.3.3, Appendix C): when a session ends, each
ticket validated in it is a notice (queued by the store in the same transaction), and each notice
a `logoutRequest` POSTed to that ticket's service, delivered, retried and reported like OIDC's
back-channel notices (idp/logout_delivery.py). The ticket, kept sealed in the notice, is opened
only to be named as the SessionIndex."""

from __future__ import annotations

from cryptography.exceptions import InvalidTag

from campusid.idp.cas.rules.logout_request import FIELD, logout_request
from campusid.idp.crypto import Sealer, b64url
from campusid.idp.logout_delivery import Message, NoticeSender
from campusid.idp.store.notices import LogoutNotice

SEAL_PURPOSE = "campusid/cas-slo-tickets/v1"


def seal_ticket(sealer: Sealer, ticket: str) -> str:
    """A validated ticket as the store keeps it for single logout (AES-256-GCM, base64url)."""
    return b64url(sealer.seal(ticket.encode("ascii")))


def open_ticket(sealer: Sealer, sealed: str) -> str | None:
    import base64

    try:
        return sealer.open(base64.urlsafe_b64decode(sealed + "=" * (-len(sealed) % 4))).decode("ascii")
    except (InvalidTag, ValueError):
        return None  # sealed under another secret key: nobody can be told which session


class SingleLogoutSender(NoticeSender):
    face = "cas"

    def __init__(self, store, events, sealer: Sealer, **options) -> None:
        super().__init__(store, events, **options)
        self._sealer = sealer

    def trust(self, verify) -> None:
        """The TLS trust of its POSTs (a function that makes the SSL context at the first one)."""
        self._verify = verify

    async def compose(self, notice: LogoutNotice, now: int) -> Message | None:
        ticket = open_ticket(self._sealer, notice.session_index or "")
        user = await self._store.users.get(notice.user_id)
        if ticket is None or user is None or not notice.target:
            return None
        return Message(notice.target, {FIELD: logout_request(user.username, ticket, now)})
