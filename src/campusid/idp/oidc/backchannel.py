"""Back-channel logout notices (OpenID Connect Back-Channel Logout 1.0 2.5 and 2.8): what the OIDC
face POSTs for each notice, on the delivery mechanism every face shares (idp/logout_delivery.py:
the queue, the claims, the retries after 10 s, 30 s, 2 min, 10 min and 1 h, and the event
`logout_delivery_failed`).

A notice says that the session `sid` of a user ended; the app it names gets a freshly signed
logout token (`logout_token`) at its backchannel_logout_uri. An app that no longer has one (or no
longer exists) has nobody to tell. A 2xx ends the notice (2.8: "If the logout succeeded, the RP
MUST respond with HTTP 200 OK", and 204 is common).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from campusid.idp.events import Events
from campusid.idp.logout_delivery import ATTEMPTS, LEASE, RETRY_DELAYS, Message, NoticeSender, next_attempt_at
from campusid.idp.oidc.rules.logout import LogoutTokens
from campusid.idp.oidc.rules.sector import subject
from campusid.idp.release import PairwiseSubjects
from campusid.idp.store import Store
from campusid.idp.store.notices import LogoutNotice

__all__ = ["ATTEMPTS", "LEASE", "RETRY_DELAYS", "BackchannelSender", "next_attempt_at"]


class BackchannelSender(NoticeSender):
    face = "oidc"

    def __init__(
        self,
        store: Store,
        tokens: LogoutTokens,
        pairwise: PairwiseSubjects,
        events: Events,
        *,
        clock: Callable[[], float] = time.time,
        poll_interval: float = 1.0,
        timeout: float = 5.0,
    ) -> None:
        super().__init__(store, events, clock=clock, poll_interval=poll_interval, timeout=timeout)
        self._tokens = tokens
        self._pairwise = pairwise

    async def compose(self, notice: LogoutNotice, now: int) -> Message | None:
        client = await self._store.apps.get(notice.client_id)
        if client is None or not client.backchannel_logout_uri:
            return None
        token = self._tokens.sign(
            sub=subject(self._pairwise, client, notice.user_id), client_id=client.client_id, sid=notice.sid, now=now
        )
        return Message(client.backchannel_logout_uri, {"logout_token": token}, {"Accept": "application/json"})
