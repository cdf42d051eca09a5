"""The login frequency limit (docs/configuration.md) on moving windows (idp/moving_window.py).

Four counters, each a moving window (an event counts for exactly one window after it happened):

- failed passwords per account (`CAMPUSID_LIMIT_FAILED_PER_ACCOUNT`, 5/15 minutes): each failure
  that fits in the window is answered as an ordinary failed login; from the next submission on the
  account is locked until the oldest failure in the window is a window old, and while locked even
  the right password is refused, so the answer reveals nothing;
- password submissions per client IP (`CAMPUSID_LIMIT_ATTEMPTS_PER_IP`, 30/15 minutes), which
  wrong user codes on the device page count against as well;
- authorization codes issued per user and client (`CAMPUSID_LIMIT_LOGINS_PER_USER_CLIENT`, 30/hour);
- token endpoint requests per client (`CAMPUSID_LIMIT_TOKEN_PER_CLIENT`, 600/minute).

Limits are written in the `limits` library's notation. Counters live in this process's memory, or
in Redis (`CAMPUSID_REDIS_URL`, shared by workers). A key never holds a username, user id or IP in
clear: identifiers are HMAC-SHA256 under a key derived from CAMPUSID_SECRET_KEY (the last few
thousand derived keys are kept in memory, since the same users and clients come back), and every
key is namespaced by a digest of the issuer. `clock` is the one time every window and Retry-After
is counted in (tests substitute it).

When the counters cannot be reached, password submissions fail closed (503 and a human message:
a brute force must not get through a Redis outage) while codes and tokens fail open (their limits
only shed load). The log says so in one line when the outage begins and one when it ends, never
a line per request. While a Redis that does not answer makes attempts time out, the counters are
tried again at most once every PROBE_EVERY seconds, so requests do not each wait for it; while
it refuses at once (stopped, restarting), every request tries, since that costs nothing, and so
the first one after Redis is back is counted and served instead of answered 503 from memory.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from limits import RateLimitItem, parse
from starlette.requests import Request

from campusid.i18n import N_, N_plural
from campusid.idp import metrics
from campusid.idp.crypto import derive_key
from campusid.idp.errors import TooManyRequests
from campusid.idp.moving_window import CountersUnavailable, MemoryWindows, MovingWindows, RedisWindows
from campusid.idp.settings import Settings

log = logging.getLogger("campusid.ratelimit")

UNAVAILABLE_RETRY = 10  # Retry-After of a password submission refused while the counters are down
PROBE_EVERY = 1.0  # seconds between two attempts to reach counters whose last attempt timed out
# derived keys kept per (kind, identifier); the dict is emptied when full. Longer identifiers are
# not kept, so the cache stays small whatever a caller passes in.
_ID_CACHE_SIZE = 4096
_ID_CACHE_MAX_VALUE = 512


@dataclass(frozen=True)
class Limits:
    failed_per_account: RateLimitItem
    attempts_per_ip: RateLimitItem
    logins_per_user_client: RateLimitItem
    token_per_client: RateLimitItem

    @classmethod
    def from_settings(cls, settings: Settings) -> Limits:
        return cls(
            failed_per_account=parse(settings.limit_failed_per_account),
            attempts_per_ip=parse(settings.limit_attempts_per_ip),
            logins_per_user_client=parse(settings.limit_logins_per_user_client),
            token_per_client=parse(settings.limit_token_per_client),
        )


@dataclass(frozen=True)
class Refusal:
    """A password submission that is not checked: over a limit (429) or the counters cannot be
    reached (503). `message` is for the person at the login page."""

    status: int
    retry_after: int
    message: str
    limit: str | None = None  # over which limit (a name of metrics.LIMITS); None when unavailable


def client_ip(request: Request, trusted_proxies: tuple = ()) -> str:
    """The address to count: the socket peer, unless that peer is a trusted proxy; then the
    right-most X-Forwarded-For entry that is not itself a trusted proxy. Anyone else's
    X-Forwarded-For is ignored, so forging one changes nothing."""
    peer = _ip(request.client.host if request.client else None)
    if peer is None:
        return request.client.host if request.client else "unknown"
    if not _trusted(peer, trusted_proxies):
        return _bucket(peer)
    hops = [h.strip() for h in ",".join(request.headers.getlist("x-forwarded-for")).split(",") if h.strip()]
    nearest = peer
    for hop in reversed(hops):
        address = _ip(hop)
        if address is None:
            break  # a malformed hop: count under the last address we could trust
        if not _trusted(address, trusted_proxies):
            return _bucket(address)
        nearest = address
    return _bucket(nearest)


def trusted_peer(request_or_scope, trusted_proxies: tuple) -> bool:
    """Whether the socket peer is one of CAMPUSID_TRUSTED_PROXIES (whose headers are believed)."""
    client = request_or_scope.get("client") if isinstance(request_or_scope, dict) else request_or_scope.client
    address = _ip(client[0] if client else None)
    return address is not None and _trusted(address, trusted_proxies)


def _ip(value: str | None) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    if not value:
        return None
    try:
        address = ipaddress.ip_address(value.strip("[]"))
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _trusted(address, trusted_proxies: tuple) -> bool:
    return any(address in net for net in trusted_proxies)


def _bucket(address) -> str:
    """IPv6 clients are counted per /64: one host usually owns the whole /64, so counting single
    addresses would let it change address at every attempt."""
    if isinstance(address, ipaddress.IPv6Address):
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


class Limiter:
    """The hooks the login page, the authorization endpoint and the token endpoint await."""

    def __init__(
        self,
        limits: Limits,
        *,
        windows: MovingWindows,
        secret_key: str,
        issuer: str,
        trusted_proxies: tuple = (),
        clock: Callable[[], float] = time.time,
        figures: metrics.Figures = metrics.OFF,
    ) -> None:
        self.limits = limits
        self.figures = figures
        self.windows = windows
        self.trusted_proxies = trusted_proxies
        self.clock = clock
        self.namespace = "campusid:" + hashlib.sha256(issuer.encode()).hexdigest()[:16]
        self._key = derive_key(secret_key, "campusid/ratelimit/v1")
        self._ids: dict[tuple[str, str], str] = {}
        self.probe_every = PROBE_EVERY
        self._down_since: float | None = None  # time.monotonic() when the counters became unreachable
        self._failed_at = 0.0  # time.monotonic() of the last failure to reach them
        self._timed_out = False  # whether that failure, during this outage, was a wait in vain

    @classmethod
    def from_settings(cls, settings: Settings) -> Limiter:
        return cls(
            Limits.from_settings(settings),
            windows=RedisWindows(settings.redis_url) if settings.redis_url else MemoryWindows(),
            secret_key=settings.secret_key,
            issuer=settings.issuer.canonical,
            trusted_proxies=settings.trusted_proxies,
            figures=metrics.Figures.for_token(settings.metrics_token),
        )

    async def close(self) -> None:
        await self.windows.close()

    # -- the hooks ---------------------------------------------------------------------------
    async def before_password(self, username: str, request: Request) -> Refusal | None:
        """Before the password is verified: every submission counts for the client IP (one for
        a locked account too). A Refusal when the IP is out of submissions or the account is
        locked (429), or when the counters cannot be reached (503); else None."""
        try:
            ip = self._id("ip", client_ip(request, self.trusted_proxies))
            limit, until = "attempts_per_ip", await self._count(self.windows.hit, ip, self.limits.attempts_per_ip)
            if until is None:
                limit = "failed_per_account"
                until = await self._count(self.windows.blocked, self._account(username), self.limits.failed_per_account)
        except CountersUnavailable:
            return self._closed()
        return None if until is None else self._limited(until, limit)

    async def after_password(self, username: str, request: Request, ok: bool) -> Refusal | None:
        """After verification: a failure is counted against the account and answered as an
        ordinary failed login; the submission after the one that filled the window is refused
        (before_password). A success counts nothing and resets nothing. A Refusal (503) only
        when the counters cannot be reached: a failure that cannot be counted is not answered."""
        if ok:
            return None
        try:
            # refused only by a concurrent failure that took the last place: it is locked already
            await self._count(self.windows.hit, self._account(username), self.limits.failed_per_account)
        except CountersUnavailable:
            return self._closed()
        return None

    async def before_user_code(self, request: Request) -> Refusal | None:
        """Before a user code typed on /device is looked up: a Refusal when the client IP has no
        submissions left (its wrong codes and password submissions filled the window: 429) or the
        counters cannot be reached (503: a brute force must not get through an outage), else None.
        User codes are short, so guessing them is what this stops (RFC 8628 5.1)."""
        try:
            ip = self._id("ip", client_ip(request, self.trusted_proxies))
            until = await self._count(self.windows.blocked, ip, self.limits.attempts_per_ip)
        except CountersUnavailable:
            return self._closed()
        return None if until is None else self._limited(until, "attempts_per_ip")

    async def wrong_user_code(self, request: Request) -> Refusal | None:
        """A user code that names no pending request counts against the client IP, like a
        password submission; the submission after the one that filled the window is refused
        (before_user_code). A Refusal only when the counters cannot be reached."""
        try:
            ip = self._id("ip", client_ip(request, self.trusted_proxies))
            await self._count(self.windows.hit, ip, self.limits.attempts_per_ip)
        except CountersUnavailable:
            return self._closed()
        return None

    async def before_second_factor(self, user_id: str) -> Refusal | None:
        """Before a second-factor code is checked: a Refusal (429) while the account's wrong
        codes fill the window (the same limit as failed passwords, counted apart), or 503 when the
        counters cannot be reached; else None."""
        try:
            until = await self._count(self.windows.blocked, self._id("mfa", user_id), self.limits.failed_per_account)
        except CountersUnavailable:
            return self._closed()
        return None if until is None else self._limited(until, "second_factor_per_account")

    async def wrong_second_factor(self, user_id: str) -> Refusal | None:
        """A wrong code counts against the account and is answered as an ordinary failure; the
        submission after the one that filled the window is refused (before_second_factor)."""
        try:
            await self._count(self.windows.hit, self._id("mfa", user_id), self.limits.failed_per_account)
        except CountersUnavailable:
            return self._closed()
        return None

    async def completed_login(self, user_id: str, client_id: str) -> int | None:
        """One authorization code for this user and client (silent SSO included): seconds to
        wait when over the limit, else None. Fails open: codes only shed load."""
        try:
            until = await self._count(
                self.windows.hit, self._id("login", f"{user_id}\x00{client_id}"), self.limits.logins_per_user_client
            )
        except CountersUnavailable:
            return None
        if until is None:
            return None
        self.figures.rate_limited("logins_per_user_client")
        return self._seconds(until)

    async def token_request(self, client_id: str) -> None:
        """One token endpoint request of an authenticated client; raises TooManyRequests when over.
        Fails open: tokens only shed load."""
        try:
            until = await self._count(self.windows.hit, self._id("token", client_id), self.limits.token_per_client)
        except CountersUnavailable:
            return
        if until is not None:
            self.figures.rate_limited("token_per_client")
            retry = self._seconds(until)
            raise TooManyRequests(
                f"too many token requests from this client; retry after {retry} seconds", retry_after=retry
            )

    @staticmethod
    def message(seconds: int) -> str:
        return N_(
            "Too many sign-in attempts. For your security, please wait %(wait)s and try again.", wait=_human(seconds)
        )

    # -- counting ----------------------------------------------------------------------------
    async def _count(self, op, key: str, item: RateLimitItem) -> float | None:
        # Only a timeout is worth not repeating: a refusal is answered at once, and holding the
        # outage for probe_every after one would refuse sign-ins after Redis is back.
        if self._timed_out and time.monotonic() < self._failed_at + self.probe_every:
            raise CountersUnavailable("not tried again yet", timed_out=True)
        try:
            until = await op(key, item.amount, item.get_expiry(), self.clock())
        except CountersUnavailable as exc:
            self._unreachable(exc)
            raise
        if self._down_since is not None:
            log.warning(
                "rate-limit counters reachable again after %.0f s; password sign-in resumes",
                time.monotonic() - self._down_since,
            )
            self._down_since = None
            self._timed_out = False
        return until

    def _unreachable(self, exc: CountersUnavailable) -> None:
        now = time.monotonic()
        if self._down_since is None:
            self._down_since = now
            log.warning(
                "rate-limit counters unreachable (%s): password sign-in answers 503 and codes and "
                "tokens are served uncounted until they are back",
                exc,
            )
        self._failed_at = now
        self._timed_out = exc.timed_out

    def _closed(self) -> Refusal:
        return Refusal(
            503,
            UNAVAILABLE_RETRY,
            N_("Sign-in is temporarily unavailable. Please try again in %(wait)s.", wait=_human(UNAVAILABLE_RETRY)),
        )

    def _limited(self, until: float, limit: str) -> Refusal:
        self.figures.rate_limited(limit)
        seconds = self._seconds(until)
        return Refusal(429, seconds, self.message(seconds), limit)

    def _seconds(self, until: float) -> int:
        """Whole seconds from now until `until` (at least 1), for Retry-After."""
        return max(1, math.ceil(round(until - self.clock(), 3)))

    # -- keys --------------------------------------------------------------------------------
    def _account(self, username: str) -> str:
        return self._id("account", username.strip().casefold())

    def _id(self, kind: str, value: str) -> str:
        cached = self._ids.get((kind, value))
        if cached is not None:
            return cached
        digest = hmac.new(self._key, f"{kind}\x00{value}".encode("utf-8", "surrogatepass"), hashlib.sha256)
        derived = f"{self.namespace}:{kind}:{digest.hexdigest()[:32]}"
        if len(value) <= _ID_CACHE_MAX_VALUE:
            if len(self._ids) >= _ID_CACHE_SIZE:
                self._ids.clear()
            self._ids[(kind, value)] = derived
        return derived


def _human(seconds: int) -> str:
    """How long to wait, as a person says it (translated where it is shown)."""
    if seconds < 60:
        return N_plural("%(count)s second", "%(count)s seconds", seconds, count=seconds)
    minutes = math.ceil(seconds / 60)
    return N_plural("%(count)s minute", "%(count)s minutes", minutes, count=minutes)
