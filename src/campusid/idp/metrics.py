"""The figures `/metrics` shows (Prometheus text format), counted in one place.

Every counter here is bumped by the code that decides what happened: `count_event` by
`Events.record` (so a sign-in's event and its figure never disagree), `token_issued` by the token
endpoint, `rate_limited` by the rate limiter, `observe_request` by the request layer. Labels come
from fixed sets only — an event type, a grant type the token endpoint serves, a limit's name, a
route *template*, a method from METHODS — never a raw path or a value a client sent, so the set
of series is bounded whatever the traffic.

Figures are collected only where `/metrics` is on (CAMPUSID_METRICS_TOKEN set): each app holds a
`Figures` built from its settings, and the code above calls the module's counters through it, so an
app with `/metrics` off (404) spends nothing on figures no one can read, and the CLI's processes
(whose `Events` have no figures) count nothing either.

One worker (`campusid serve`, `campusid demo`) counts in its own memory. Several worker processes
(`campusid serve --workers N`) each count in files of their own under PROMETHEUS_MULTIPROC_DIR,
which `serve` creates fresh for each such run; `render()` then sums them all. That mode is chosen
when this module is first imported (as prometheus-client chooses it), so the variable must be set
before the workers import the app.
"""

from __future__ import annotations

import os
from pathlib import Path

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client import multiprocess as _mp
from prometheus_client import values as _values

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
CONTENT_TYPE = CONTENT_TYPE_LATEST
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
OTHER_METHOD = "other"
UNMATCHED = "unmatched"

# Where the workers' files are: only in the mode prometheus-client chose when it was imported.
_DIR = None if _values.ValueClass is _values.MutexValue else os.environ.get(MULTIPROC_ENV) or None
REGISTRY = CollectorRegistry(auto_describe=True)

LOGINS = Counter("campusid_logins", "Password sign-ins by outcome.", ["outcome"], registry=REGISTRY)
TOKENS = Counter("campusid_tokens_issued", "Token responses issued, by grant type.", ["grant_type"], registry=REGISTRY)
CODE_REPLAYS = Counter(
    "campusid_code_replays", "Authorization codes presented again after their use.", registry=REGISTRY
)
REFRESH_REUSE = Counter(
    "campusid_refresh_reuse", "Refresh tokens presented again after their rotation.", registry=REGISTRY
)
RATE_LIMITED = Counter(
    "campusid_rate_limited", "Requests refused by a rate limit, by limit.", ["limit"], registry=REGISTRY
)
REQUESTS = Histogram(
    "campusid_http_request_duration_seconds",
    "HTTP request duration by route template, method and status.",
    ["route", "method", "status"],
    registry=REGISTRY,
)

# CAS (docs/cas.md): validations by endpoint and outcome (`success` or the CAS error code), tickets
# issued by kind. Both label sets are fixed (idp/cas/rules: the endpoints, the codes, the kinds).
CAS_VALIDATIONS = Counter(
    "campusid_cas_validations",
    "CAS ticket validations, by endpoint and outcome (success or the CAS error code).",
    ["endpoint", "outcome"],
    registry=REGISTRY,
)
CAS_TICKETS = Counter("campusid_cas_tickets_issued", "CAS tickets issued, by kind.", ["kind"], registry=REGISTRY)

# The limits of the rate limiter (named like their settings), the only `limit` label values.
LIMITS = (
    "attempts_per_ip",
    "failed_per_account",
    "logins_per_user_client",
    "token_per_client",
    "second_factor_per_account",
)

# Event types that are figures too (the other events are only stored).
_EVENT_COUNTERS = {
    "login_success": LOGINS.labels(outcome="success"),
    "login_failure": LOGINS.labels(outcome="failure"),
    "login_limited": LOGINS.labels(outcome="limited"),
    "code_replay": CODE_REPLAYS,
    "refresh_reuse": REFRESH_REUSE,
}
_LIMITED = {name: RATE_LIMITED.labels(limit=name) for name in LIMITS}
_TOKENS: dict[str, Counter] = {}
_REQUEST_SERIES: dict[tuple[str, str, int], Histogram] = {}


def count_event(event_type: str) -> None:
    """The figure of a security event (called by `Events.record` for each event it stores)."""
    counter = _EVENT_COUNTERS.get(event_type)
    if counter is not None:
        counter.inc()


def token_issued(grant_type: str) -> None:
    """A token response of `grant_type`: one of the grant types the token endpoint serves (the
    caller passes only those), so the label set stays the endpoint's."""
    counter = _TOKENS.get(grant_type)
    if counter is None:
        counter = _TOKENS[grant_type] = TOKENS.labels(grant_type=grant_type)
    counter.inc()


def cas_validation(endpoint: str, outcome: str) -> None:
    """A CAS validation at `endpoint` (one of the face's endpoint names) with `outcome` (`success` or a
    CAS error code: the face passes only those)."""
    CAS_VALIDATIONS.labels(endpoint=endpoint, outcome=outcome).inc()


def cas_ticket_issued(kind: str) -> None:
    """A CAS ticket of `kind` (ST, PT, PGT) issued."""
    CAS_TICKETS.labels(kind=kind).inc()


def rate_limited(limit: str) -> None:
    """A request refused by the limit named `limit` (one of LIMITS)."""
    _LIMITED[limit].inc()


def method_label(method: str) -> str:
    return method if method in METHODS else OTHER_METHOD


def observe_request(route: str, method: str, status: int, seconds: float) -> None:
    """One answered request: `route` is the matched route's template (or UNMATCHED). The series
    of each (route, method, status) is looked up once and kept (their set is bounded: see the
    module's docstring), so a request costs one dictionary lookup and the observation."""
    key = (route, method_label(method), status)
    child = _REQUEST_SERIES.get(key)
    if child is None:
        child = _REQUEST_SERIES[key] = REQUESTS.labels(key[0], key[1], str(status))
    child.observe(seconds)


class Figures:
    """One app's way to the counters above: all of them when `on` (its /metrics is on), none when not."""

    __slots__ = ("on",)

    def __init__(self, on: bool) -> None:
        self.on = on

    @classmethod
    def for_token(cls, metrics_token: str | None) -> Figures:
        """On exactly when /metrics can be read (CAMPUSID_METRICS_TOKEN is set)."""
        return cls(metrics_token is not None)

    def count_event(self, event_type: str) -> None:
        if self.on:
            count_event(event_type)

    def token_issued(self, grant_type: str) -> None:
        if self.on:
            token_issued(grant_type)

    def rate_limited(self, limit: str) -> None:
        if self.on:
            rate_limited(limit)

    def cas_validation(self, endpoint: str, outcome: str) -> None:
        if self.on:
            cas_validation(endpoint, outcome)

    def cas_ticket_issued(self, kind: str) -> None:
        if self.on:
            cas_ticket_issued(kind)

    def observe_request(self, route: str, method: str, status: int, seconds: float) -> None:
        if self.on:
            observe_request(route, method, status, seconds)


OFF = Figures(False)


def render() -> bytes:
    """The text exposition of every figure: this process's, or with several workers the sum
    over all of them (their files under PROMETHEUS_MULTIPROC_DIR)."""
    if _DIR is None:
        return generate_latest(REGISTRY)
    registry = CollectorRegistry()
    _mp.MultiProcessCollector(registry, path=_DIR)
    return generate_latest(registry)


def _pid_of(name: str) -> int | None:
    """The worker pid in a multiprocess file's name (`counter_1234.db`, `gauge_live_1234.db`)."""
    stem = name.rsplit(".", 1)[0]
    tail = stem.rsplit("_", 1)[-1]
    return int(tail) if tail.isdigit() else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def worker_started() -> None:
    """At a worker's start: mark the workers that died without saying so (killed, crashed) as
    dead, as prometheus-client asks of a multiprocess deployment. Their counts stay in the sum."""
    if _DIR is None:
        return
    me = os.getpid()
    pids = {_pid_of(p.name) for p in Path(_DIR).glob("*.db")}
    for pid in pids - {None, me}:
        if not _alive(pid):
            _mp.mark_process_dead(pid, _DIR)


def worker_stopped() -> None:
    """At a worker's graceful stop."""
    if _DIR is not None:
        _mp.mark_process_dead(os.getpid(), _DIR)
