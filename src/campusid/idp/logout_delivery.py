"""Delivering logout notices, for every face (OpenID Connect Back-Channel Logout 1.0 2.5 and 2.8;
Apereo CAS Protocol 3.0.3 2.3.3 single logout): the queue, the retries and the failure events are
one mechanism; each face only says what one notice's POST is (`NoticeSender.compose`).

The store queues a notice in the transaction that ends a session (store/notices.py); every worker
runs one sender per face, which drains that face's notices: it claims the notices that are due
(one conditional UPDATE, so each is sent by one worker) and POSTs each as a form, all notices of a
batch at once. A 2xx ends a notice; anything else is a failed attempt, recorded as the event
`logout_delivery_failed`, and tried again after 10 s, 30 s, 2 min, 10 min and 1 h: 6 attempts in
all. Redirects are not followed (the address passed review; its redirect target did not).

The user's logout page only wakes the senders of its own worker (`wake`) and never waits for them;
the other workers find the notice at their next poll (every second). A worker that dies mid-send
leaves the notice claimed until its lease ends, then another worker sends it: nothing is lost,
and a notice may at worst arrive twice.

httpx is imported by the first POST, not when a worker starts (~6.8 MB of each worker's memory
that a deployment without logout receivers never uses).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from campusid.idp import events as ev
from campusid.idp.crypto import new_token
from campusid.idp.events import Events
from campusid.idp.store import Store
from campusid.idp.store.errors import StoreError
from campusid.idp.store.notices import LogoutNotice

if TYPE_CHECKING:
    import httpx

log = logging.getLogger("campusid.idp.logout_delivery")

# Seconds to wait after each failed attempt: the 2nd attempt 10 s after the 1st, … the 6th 1 h
# after the 5th. After the 6th failure the notice is given up (kept, marked failed).
RETRY_DELAYS = (10, 30, 120, 600, 3600)
ATTEMPTS = len(RETRY_DELAYS) + 1
LEASE = 60  # a claimed notice is hidden from other workers this long (longer than one POST)
POLL_INTERVAL = 1.0
TIMEOUT = 5.0  # seconds for the whole POST
CONNECT_TIMEOUT = 3.0


def next_attempt_at(attempts: int, now: int) -> int | None:
    """When to try again after `attempts` failed attempts, or None when that was the last."""
    return now + RETRY_DELAYS[attempts - 1] if attempts < ATTEMPTS else None


@dataclass(frozen=True)
class Message:
    """One notice's POST: where, the form, and headers of the face's protocol."""

    url: str
    form: dict[str, str]
    headers: dict[str, str] = field(default_factory=dict)


class NoticeSender:
    """Drains the notices of one face (`face`, as store/notices.py names them); a face's subclass
    says what each one's POST is (`compose`)."""

    face = "oidc"

    def __init__(
        self,
        store: Store,
        events: Events,
        *,
        clock: Callable[[], float] = time.time,
        poll_interval: float = POLL_INTERVAL,
        timeout: float = TIMEOUT,
        verify: Any = True,
    ) -> None:
        self._store = store
        self._events = events
        self._clock = clock
        self.poll_interval = poll_interval
        self._timeout = timeout
        # httpx's `verify`: True (the system's CAs), an SSL context, or a function that makes one at
        # the first POST (loading a CA bundle costs memory a worker that never posts would not spend)
        self._verify = verify
        # One event per running drain loop: an asyncio.Event belongs to the event loop that first
        # waits on it, and an app served twice at once (two test clients, two loops) runs two.
        self._wakes: set[asyncio.Event] = set()
        self._http: httpx.AsyncClient | None = None

    async def compose(self, notice: LogoutNotice, now: int) -> Message | None:
        """The POST that delivers `notice`, or None when there is nobody to tell any more."""
        raise NotImplementedError

    def wake(self) -> None:
        """A session ended in this worker: look at the queue now rather than at the next poll."""
        for event in self._wakes:
            event.set()

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            import httpx

            timeout = httpx.Timeout(self._timeout, connect=min(self._timeout, CONNECT_TIMEOUT))
            verify = self._verify() if callable(self._verify) else self._verify
            self._http = httpx.AsyncClient(timeout=timeout, follow_redirects=False, trust_env=False, verify=verify)
        return self._http

    async def close(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    async def run_forever(self) -> None:
        """Drain the queue whenever woken, and at least every `poll_interval` seconds."""
        wake = asyncio.Event()  # bound to the loop that runs it
        self._wakes.add(wake)
        try:
            while True:
                wake.clear()
                try:
                    while await self.drain_once():
                        pass
                except StoreError as exc:  # the database is down: the notices wait in it
                    log.warning("%s logout: the queue cannot be read now (%s)", self.face, type(exc).__name__)
                except Exception:  # a bug must not stop every later notice of this worker
                    log.exception("%s logout: draining the queue failed", self.face)
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(wake.wait(), self.poll_interval)
        finally:
            self._wakes.discard(wake)
            await self.close()

    async def drain_once(self, now: int | None = None) -> int:
        """Send every notice due at `now` (default: the clock) that this call could claim, at
        once; how many it handled."""
        now = int(self._clock()) if now is None else now
        if not await self._store.notices.due(now, self.face):
            return 0
        notices = await self._store.notices.claim(new_token(16), now, now + LEASE, face=self.face)
        if notices:
            await asyncio.gather(*(self._deliver(n, now) for n in notices))
        return len(notices)

    async def _deliver(self, notice: LogoutNotice, now: int) -> None:
        message = await self.compose(notice, now)
        if message is None:
            await self._store.notices.delivered(notice)  # nothing to tell any more
            return
        problem = await self._post(message)
        if problem is None:
            await self._store.notices.delivered(notice)
            return
        retry_at = next_attempt_at(notice.attempts, now)
        if retry_at is None:
            await self._store.notices.failed(notice, now)
        else:
            await self._store.notices.retry(notice, retry_at)
        user = await self._store.users.get(notice.user_id)
        after = f"next in {retry_at - now} s" if retry_at is not None else "given up"
        await self._events.record(
            ev.LOGOUT_DELIVERY_FAILED,
            username=user.username if user else None,
            client_id=notice.client_id,
            detail=f"attempt {notice.attempts} of {ATTEMPTS}: {problem}; {after}",
        )

    async def _post(self, message: Message) -> str | None:
        """POST the notice; None on a 2xx, else what went wrong (never the message's secrets)."""
        import httpx

        try:
            response = await self._client().post(
                message.url, data=message.form, headers={"Cache-Control": "no-store", **message.headers}
            )
        except httpx.TimeoutException:
            return "timed out"
        except httpx.HTTPError as exc:
            return f"not reachable ({type(exc).__name__})"
        if 200 <= response.status_code < 300:
            return None
        return f"HTTP {response.status_code}"
