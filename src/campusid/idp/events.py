"""Security events: what happened, when, to whom, through which app, from where.

Every part of the IdP records its events through `Events.record` (one INSERT, no secrets: a
detail names what happened, never a password, code, token or secret). `campusid events list` and
the admin console read them back; the housekeeping purge drops them after
CAMPUSID_EVENTS_RETENTION_DAYS.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from campusid.idp import metrics
from campusid.idp.store import Store
from campusid.idp.store.rows import Event

LOGIN_SUCCESS = "login_success"
LOGIN_FAILURE = "login_failure"
LOGIN_LIMITED = "login_limited"
LOGOUT = "logout"
CODE_REPLAY = "code_replay"
REFRESH_REUSE = "refresh_reuse"
CONSENT_GRANTED = "consent_granted"
CONSENT_REVOKED = "consent_revoked"
MFA_ENROLLED = "mfa_enrolled"
MFA_REMOVED = "mfa_removed"
MFA_FAILURE = "mfa_failure"
KEY_ROTATED = "key_rotated"
APP_STATE_CHANGED = "app_state_changed"
USER_DISABLED = "user_disabled"
USER_ENABLED = "user_enabled"
LOGOUT_DELIVERY_FAILED = "logout_delivery_failed"
DEVICE_CODE_ISSUED = "device_code_issued"
DEVICE_CODE_REDEEMED = "device_code_redeemed"
CAS_TICKET_VALIDATED = "cas_ticket_validated"
CAS_TICKET_REJECTED = "cas_ticket_rejected"
CAS_TICKET_REPLAY = "cas_ticket_replay"
CAS_PROXY_GRANTED = "cas_proxy_granted"

TYPES = frozenset(
    {
        LOGIN_SUCCESS,
        LOGIN_FAILURE,
        LOGIN_LIMITED,
        LOGOUT,
        CODE_REPLAY,
        REFRESH_REUSE,
        CONSENT_GRANTED,
        CONSENT_REVOKED,
        MFA_ENROLLED,
        MFA_REMOVED,
        MFA_FAILURE,
        KEY_ROTATED,
        APP_STATE_CHANGED,
        USER_DISABLED,
        USER_ENABLED,
        LOGOUT_DELIVERY_FAILED,
        DEVICE_CODE_ISSUED,
        DEVICE_CODE_REDEEMED,
        CAS_TICKET_VALIDATED,
        CAS_TICKET_REJECTED,
        CAS_TICKET_REPLAY,
        CAS_PROXY_GRANTED,
    }
)
MAX_DETAIL = 500
_MAX_NAME = 64


def _clip(value: str | None, size: int) -> str | None:
    return value[:size] if value is not None else None


def as_filter(value: str | None) -> str | None:
    """A typed filter (username, client_id) as `record` stored it: clipped to the column's size;
    empty means no filter. ValueError for a character no stored value can hold (NUL)."""
    if value is None or value.strip() == "":
        return None
    if "\x00" in value:
        raise ValueError("a filter cannot contain a NUL character")
    return _clip(value.strip(), _MAX_NAME)


class Events:
    """Records events in the store, and their figures in `figures` (the app's; none by default,
    as in the CLI); `clock` is what tests control."""

    def __init__(
        self, store: Store, clock: Callable[[], float] = time.time, figures: metrics.Figures = metrics.OFF
    ) -> None:
        self._store = store
        self.clock = clock
        self.figures = figures

    def event(
        self,
        type: str,  # noqa: A002 - the event's type, as stored and listed
        *,
        username: str | None = None,
        client_id: str | None = None,
        ip: str | None = None,
        detail: str = "",
    ) -> Event:
        """The event `record` would store, for a repository that stores it in a write of its own
        (a CAS validation's record and its event: one statement); `counted` then counts it."""
        if type not in TYPES:
            raise ValueError(f"unknown event type {type!r}")
        return Event(
            None,
            int(self.clock()),
            type,
            _clip(username, _MAX_NAME),
            _clip(client_id, _MAX_NAME),
            _clip(ip, _MAX_NAME),
            detail[:MAX_DETAIL],
        )

    def counted(self, event: Event) -> None:
        """The figure of an event stored by another write (see `event`)."""
        self.figures.count_event(event.type)

    async def record(
        self,
        type: str,  # noqa: A002 - the event's type, as stored and listed
        *,
        username: str | None = None,
        client_id: str | None = None,
        ip: str | None = None,
        detail: str = "",
    ) -> Event:
        """Store one event. The values a request supplied (a typed username, a client_id) are
        clipped to their columns' sizes, so hostile input is recorded, not refused."""
        event = self.event(type, username=username, client_id=client_id, ip=ip, detail=detail)
        await self._store.events.record(event)
        self.figures.count_event(type)  # the event's figure, counted where the event is (idp/metrics.py)
        return event
