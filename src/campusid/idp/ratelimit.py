"""The login frequency limit (SPEC 8, DESIGN 3.9) on the `limits` library, moving window.

Four counters, each a moving window (an event counts for exactly one window after it happened):

- failed passwords per account (`CAMPUSID_LIMIT_FAILED_PER_ACCOUNT`, 5/15 minutes): each failure
  that fits in the window is answered as an ordinary failed login; from the next submission on the
  account is locked until the oldest failure in the window is a window old, and while locked even
  the right password is refused, so the answer reveals nothing;
- password submissions per client IP (`CAMPUSID_LIMIT_ATTEMPTS_PER_IP`, 30/15 minutes);
- authorization codes issued per user and client (`CAMPUSID_LIMIT_LOGINS_PER_USER_CLIENT`, 30/hour);
- token endpoint requests per client (`CAMPUSID_LIMIT_TOKEN_PER_CLIENT`, 600/minute).

Counters live in memory (one process: `ratelimit_memory.WindowMemoryStorage`, a `limits` storage
with the library's moving-window answers, O(1) per hit and no threads) or in Redis
(`CAMPUSID_REDIS_URL`, shared by workers). A key never holds a username, user id or IP in clear:
identifiers are HMAC-SHA256 under a key derived from CAMPUSID_SECRET_KEY (the last few thousand
derived keys are kept in memory, since the same users and clients come back), and every key is
namespaced by a digest of the issuer.

The strategy is the library's moving window. `clock` is what this module reads for Retry-After and
what the memory storage reads (setting it sets both); `limits`' Redis storage reads `time.time()`
inside its module, and tests substitute one clock in all places.
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
from limits.errors import StorageError
from limits.storage import storage_from_string
from limits.strategies import MovingWindowRateLimiter
from starlette.requests import Request

from campusid.idp.crypto import derive_key
from campusid.idp.protocol.errors import SlowDown
from campusid.idp.ratelimit_memory import WindowMemoryStorage
from campusid.idp.settings import Settings

log = logging.getLogger("campusid.ratelimit")

# When the counter store cannot be reached: password checks fail closed for this long (a brute
# force must not get through a Redis outage), codes and tokens fail open (they only shed load).
STORAGE_DOWN_RETRY = 30
_REDIS_TIMEOUTS = {"socket_connect_timeout": 2, "socket_timeout": 2}
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
    """The hooks the login page, the authorization endpoint and the token endpoint call."""

    def __init__(
        self,
        limits: Limits,
        *,
        storage_uri: str,
        secret_key: str,
        issuer: str,
        trusted_proxies: tuple = (),
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.limits = limits
        self.trusted_proxies = trusted_proxies
        namespace = "campusid:" + hashlib.sha256(issuer.encode()).hexdigest()[:16]
        if storage_uri.split("://", 1)[0] == "memory":
            self.storage = WindowMemoryStorage(storage_uri, wrap_exceptions=True, clock=clock)
        else:
            options = dict(_REDIS_TIMEOUTS) if storage_uri.startswith(("redis", "rediss")) else {}
            if options:
                options["key_prefix"] = namespace
            self.storage = storage_from_string(storage_uri, wrap_exceptions=True, **options)
        self.clock = clock
        self.namespace = namespace
        self._window = MovingWindowRateLimiter(self.storage)
        self._key = derive_key(secret_key, "campusid/ratelimit/v1")
        self._ids: dict[tuple[str, str], tuple[str, str]] = {}

    @property
    def clock(self) -> Callable[[], float]:
        return self._clock

    @clock.setter
    def clock(self, clock: Callable[[], float]) -> None:
        """The time Retry-After is counted from; in memory mode also the time the windows read."""
        self._clock = clock
        if isinstance(self.storage, WindowMemoryStorage):
            self.storage.clock = clock

    @classmethod
    def from_settings(cls, settings: Settings) -> Limiter:
        return cls(
            Limits.from_settings(settings),
            storage_uri=settings.redis_url or "memory://",
            secret_key=settings.secret_key,
            issuer=settings.issuer.canonical,
            trusted_proxies=settings.trusted_proxies,
        )

    # -- the hooks ---------------------------------------------------------------------------
    def before_password(self, username: str, request: Request) -> int | None:
        """Before the password is verified: every submission counts for the client IP (one for
        a locked account too); seconds to wait when the IP is out of submissions or the account
        is locked, else None."""
        try:
            ip = self._id("ip", client_ip(request, self.trusted_proxies))
            if not self._window.hit(self.limits.attempts_per_ip, *ip):
                return self._retry_after(self.limits.attempts_per_ip, ip)
            account = self._account(username)
            if not self._window.test(self.limits.failed_per_account, *account):
                return self._retry_after(self.limits.failed_per_account, account)
        except StorageError:  # fail closed for passwords
            log.exception("rate-limit storage unavailable; refusing password submissions for now")
            return STORAGE_DOWN_RETRY
        return None

    def after_password(self, username: str, request: Request, ok: bool) -> int | None:
        """After verification: a failure is counted against the account and answered as an
        ordinary failed login; the submission after the one that filled the window is refused
        (before_password). A success counts nothing and resets nothing. Seconds to wait only when
        the counter store cannot be reached (fail closed)."""
        if ok:
            return None
        try:
            self._window.hit(self.limits.failed_per_account, *self._account(username))
        except StorageError:
            log.exception("rate-limit storage unavailable; refusing password submissions for now")
            return STORAGE_DOWN_RETRY
        return None

    def completed_login(self, user_id: str, client_id: str) -> int | None:
        """One authorization code for this user and client (silent SSO included)."""
        key = self._id("login", f"{user_id}\x00{client_id}")
        try:
            if not self._window.hit(self.limits.logins_per_user_client, *key):
                return self._retry_after(self.limits.logins_per_user_client, key)
        except StorageError:  # codes only shed load: fail open
            log.exception("rate-limit storage unavailable; issuing the code without counting it")
        return None

    def token_request(self, client_id: str) -> None:
        """One token endpoint request of an authenticated client; raises SlowDown when over."""
        key = self._id("token", client_id)
        try:
            allowed = self._window.hit(self.limits.token_per_client, *key)
            retry = None if allowed else self._retry_after(self.limits.token_per_client, key)
        except StorageError:  # tokens only shed load: fail open
            log.exception("rate-limit storage unavailable; serving the token request without counting it")
            return
        if retry is not None:
            raise SlowDown(f"too many token requests from this client; retry after {retry} seconds", retry_after=retry)

    @staticmethod
    def message(seconds: int) -> str:
        return f"Too many sign-in attempts. For your security, please wait {_human(seconds)} and try again."

    # -- keys and windows --------------------------------------------------------------------
    def _account(self, username: str) -> tuple[str, str]:
        return self._id("account", username.strip().casefold())

    def _id(self, kind: str, value: str) -> tuple[str, str]:
        cached = self._ids.get((kind, value))
        if cached is not None:
            return cached
        digest = hmac.new(self._key, f"{kind}\x00{value}".encode("utf-8", "surrogatepass"), hashlib.sha256)
        derived = (f"{self.namespace}:{kind}", digest.hexdigest()[:32])
        if len(value) <= _ID_CACHE_MAX_VALUE:
            if len(self._ids) >= _ID_CACHE_SIZE:
                self._ids.clear()
            self._ids[(kind, value)] = derived
        return derived

    def _retry_after(self, item: RateLimitItem, key: tuple[str, str]) -> int:
        """Seconds until the oldest event in the window leaves it, so one more is allowed."""
        stats = self._window.get_window_stats(item, *key)
        # Redis hands timestamps back through Lua's tostring (14 digits): drop the sub-ms noise
        return max(1, math.ceil(round(stats.reset_time - self.clock(), 3)))


def _human(seconds: int) -> str:
    if seconds < 60:
        return f"{seconds} second{'s' if seconds != 1 else ''}"
    minutes = math.ceil(seconds / 60)
    return f"{minutes} minute{'s' if minutes != 1 else ''}"
