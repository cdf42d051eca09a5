"""A small async load loop against a running campusid, for the fault tests.

Each SSO loop signs in once through the pages and then, again and again: an authorization with the
existing session (a code); every other code is redeemed by two clients at once (at most one may
win; the other's attempt is a replay that revokes the grant), the rest by one client, followed by a
refresh of the token it got and userinfo with the access token. One more loop makes a password login
through the pages every second. Every answer is recorded (endpoint, status or the transport error,
time), so a test can say what was answered during a fault and when the service had recovered.

`Load.grants` keeps each chain's newest refresh token: after the fault every one of them must still
refresh (a grant lost would be one that does not), except a chain whose last refresh was in flight
when its worker died (its answer never came, so the client cannot know which token is current).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import ssl
import time
from dataclasses import dataclass, field
from urllib.parse import urlencode, urlsplit

import httpx

from tests.idp.helpers import PASSWORD, auth_params, callback_params, code_exchange, form_fields

REDIRECT = "http://127.0.0.1:41999/callback"
CLEAN = {200, 302, 303, 400, 401, 403, 404, 429, 503}  # protocol answers; 503 needs Retry-After


@dataclass
class Answer:
    kind: str
    status: int | str  # the HTTP status, or the transport error's class name
    at: float
    retry_after: str | None = None


@dataclass
class Load:
    issuer: str
    client_id: str
    username: str = "alice"
    verify: ssl.SSLContext | bool = True
    answers: list[Answer] = field(default_factory=list)
    grants: dict[int, str] = field(default_factory=dict)  # chain -> newest refresh token
    in_flight: set[int] = field(default_factory=set)  # chains whose last refresh got no answer
    id_tokens: list[str] = field(default_factory=list)
    codes_redeemed_twice: int = 0
    codes_issued: int = 0
    # a relying party's check of each ID token as it arrives (async, True when it verifies)
    verify_id_token: object = None
    unverifiable: int = 0
    _stop: asyncio.Event = field(default_factory=asyncio.Event)
    _chains: int = 0
    _rounds: int = 0
    codes_raced: int = 0

    # -- recording ------------------------------------------------------------------------------
    async def _call(self, kind: str, coro) -> httpx.Response | None:
        try:
            r = await coro
        except httpx.HTTPError as exc:
            self.answers.append(Answer(kind, type(exc).__name__, time.monotonic()))
            return None
        self.answers.append(Answer(kind, r.status_code, time.monotonic(), r.headers.get("retry-after")))
        return r

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(verify=self.verify, timeout=30)

    # -- the loops ------------------------------------------------------------------------------
    async def _session(self, browser: httpx.AsyncClient) -> bool:
        """Sign in through the pages (login, consent) so the browser has a session."""
        flow = auth_params(self.client_id, REDIRECT, scope="openid profile")
        origin = f"{urlsplit(self.issuer).scheme}://{urlsplit(self.issuer).netloc}"
        r = await self._call("login", browser.get(f"{self.issuer}/oauth/authorize?{urlencode(flow.params)}"))
        if r is None or r.status_code != 200 or 'id="login-form"' not in r.text:
            return False
        action, fields = form_fields(r.text, "login-form")
        data = {**fields, "username": self.username, "password": PASSWORD}
        r = await self._call("login", browser.post(origin + action, data=data))
        if r is None or r.status_code != 303:
            return False
        location = r.headers["location"]
        if location.startswith("/"):
            r = await self._call("login", browser.get(origin + location))
            if r is None or r.status_code != 200 or 'id="consent-form"' not in r.text:
                return False
            action, fields = form_fields(r.text, "consent-form")
            r = await self._call("login", browser.post(origin + action, data={**fields, "decision": "allow"}))
            if r is None or r.status_code != 303:
                return False
        return True

    async def sso_loop(self) -> None:
        async with self.client() as browser, self.client() as app_a, self.client() as app_b:
            while not self._stop.is_set() and not await self._session(browser):
                await asyncio.sleep(0.2)
            while not self._stop.is_set():
                await self._sso_round(browser, app_a, app_b)

    async def _sso_round(self, browser, app_a, app_b) -> None:
        flow = auth_params(self.client_id, REDIRECT, scope="openid profile")
        r = await self._call("sso", browser.get(f"{self.issuer}/oauth/authorize?{urlencode(flow.params)}"))
        if r is None or r.status_code not in (302, 303) or not r.headers["location"].startswith(REDIRECT):
            await asyncio.sleep(0.05)  # an outage: do not spin
            return
        code = callback_params(r.headers["location"]).get("code")
        if not code:
            return
        self.codes_issued += 1
        exchange = code_exchange(flow, code, REDIRECT, self.client_id)
        self._rounds += 1
        if self._rounds % 2:
            # Every other code is redeemed by two clients at once: at most one may get tokens, and
            # the other's attempt is a replay, which revokes what the code gave (RFC 6749 4.1.2),
            # so that grant is not followed further.
            first, second = await asyncio.gather(
                self._call("token", app_a.post(f"{self.issuer}/oauth/token", data=exchange)),
                self._call("token", app_b.post(f"{self.issuer}/oauth/token", data=exchange)),
            )
            won = [r for r in (first, second) if r is not None and r.status_code == 200]
            self.codes_raced += 1
            if len(won) > 1:
                self.codes_redeemed_twice += 1
            if won:
                await self._received(won[0].json()["id_token"])
            return
        r = await self._call("token", app_a.post(f"{self.issuer}/oauth/token", data=exchange))
        won = [r] if r is not None and r.status_code == 200 else []
        if not won:
            return
        tokens = won[0].json()
        await self._received(tokens["id_token"])
        chain = self._chains = self._chains + 1
        self.grants[chain] = tokens["refresh_token"]
        refresh = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], "client_id": self.client_id}
        r = await self._call("refresh", app_a.post(f"{self.issuer}/oauth/token", data=refresh))
        if r is None:
            self.in_flight.add(chain)
        elif r.status_code == 200:
            self.grants[chain] = r.json()["refresh_token"]
            if r.json().get("id_token"):
                await self._received(r.json()["id_token"])
        bearer = {"Authorization": f"Bearer {tokens['access_token']}"}
        await self._call("userinfo", app_a.get(f"{self.issuer}/oauth/userinfo", headers=bearer))

    async def _received(self, id_token: str) -> None:
        self.id_tokens.append(id_token)
        if self.verify_id_token is not None and not await self.verify_id_token(id_token):
            self.unverifiable += 1

    async def login_loop(self) -> None:
        """A password login through the pages each second, each in a new browser."""
        while not self._stop.is_set():
            started = time.monotonic()
            async with self.client() as browser:
                await self._session(browser)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), max(0.0, 1.0 - (time.monotonic() - started)))

    async def run(self, during, sso_loops: int = 3) -> None:
        """Run the loops, await `during()` (the fault and its recovery), then stop the loops."""
        tasks = [asyncio.create_task(self.sso_loop()) for _ in range(sso_loops)]
        tasks.append(asyncio.create_task(self.login_loop()))
        try:
            await during()
        finally:
            self._stop.set()
            await asyncio.gather(*tasks, return_exceptions=False)

    # -- after the run --------------------------------------------------------------------------
    async def grants_lost(self) -> int:
        """Refresh each chain's newest token once more: one that no longer works is a grant lost."""
        lost = 0
        async with self.client() as app:
            for chain, token in self.grants.items():
                if chain in self.in_flight:
                    continue
                data = {"grant_type": "refresh_token", "refresh_token": token, "client_id": self.client_id}
                r = await app.post(f"{self.issuer}/oauth/token", data=data)
                lost += r.status_code != 200
        return lost

    def statuses(self, since: float = 0.0, until: float = float("inf")) -> collections.Counter:
        return collections.Counter(a.status for a in self.answers if since <= a.at <= until)

    def unclean(self) -> list[Answer]:
        """Answers that are not a protocol answer (a 5xx other than 503, a 503 without Retry-After)."""
        return [
            a
            for a in self.answers
            if isinstance(a.status, int) and (a.status not in CLEAN or (a.status == 503 and not a.retry_after))
        ]

    def transport_errors(self, since: float = 0.0, until: float = float("inf")) -> list[Answer]:
        return [a for a in self.answers if isinstance(a.status, str) and since <= a.at <= until]

    def recovered_at(self, kinds: tuple[str, ...], since: float) -> float | None:
        """The moment after `since` from which every kind in `kinds` has had a successful answer
        (200, or 302/303 for the SSO step and the login pages), or None."""
        firsts = []
        for kind in kinds:
            ok = [a.at for a in self.answers if a.kind == kind and a.at >= since and a.status in (200, 302, 303)]
            if not ok:
                return None
            firsts.append(min(ok))
        return max(firsts)

    def report(self, name: str, fault_start: float, fault_end: float, recovered: float | None) -> str:
        took = "never" if recovered is None else f"{max(0.0, recovered - fault_end):.2f} s"
        line = (
            f"[{name}] requests sent: {len(self.answers)}; answered per status: "
            f"{dict(sorted(self.statuses().items(), key=str))}; during the fault: "
            f"{dict(sorted(self.statuses(fault_start, fault_end).items(), key=str))}; "
            f"fault lasted {fault_end - fault_start:.2f} s; longest time to recovery: {took}; "
            f"codes issued: {self.codes_issued}; redeemed by two clients at once: {self.codes_raced}; "
            f"codes redeemed twice: {self.codes_redeemed_twice}; "
            f"grants checked: {len(self.grants) - len(self.in_flight)}"
        )
        print(line)
        return line
