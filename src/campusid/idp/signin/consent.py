"""The one consent decision every face asks (OIDC Core 3.1.2.4, and SAML SPs' the same way):
asked the first time a person lets an app have a set of release bundles (scopes), remembered
after, asked again when the app asks for more or the request forces it (`prompt=consent`).

What the consent page shows is a `ConsentAsk`, which each face builds for its apps; what the
person allowed is remembered here, and recorded as the `consent_granted` event.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from campusid.idp import events as ev
from campusid.idp.events import Events


def remembered(consent_scope: str | None) -> set[str]:
    """The bundles of a stored consent (space-separated), as a set."""
    return set(consent_scope.split()) if consent_scope else set()


def needed(already: set[str], asked: Iterable[str], forced: bool = False) -> bool:
    """Consent is asked when the request forces it or asks for a bundle not yet allowed."""
    return forced or not set(asked) <= already


@dataclass(frozen=True)
class ConsentAsk:
    """What the one consent page asks: may `app_name` have `bundles` of the person, who is
    `recipient` (the host that will receive them); `device` for an app on another device, which
    the page warns about (RFC 8628 5.4: remote phishing)."""

    app_name: str
    bundles: tuple[str, ...]
    recipient: str | None = None
    device: bool = False


class Consents(Protocol):
    """Where consents are kept (the store's grants repository)."""

    async def remember_consent(self, user_id: str, client_id: str, scopes: Iterable[str], now: int) -> None: ...


async def remember(
    grants: Consents,
    events: Events,
    *,
    user_id: str,
    username: str | None,
    client_id: str,
    bundles: Iterable[str],
    now: int,
    ip: str | None,
) -> None:
    """The person allowed the app these bundles: kept, so the next sign-in does not ask, and
    audited as `consent_granted` (the bundles in its detail)."""
    bundles = list(bundles)
    await grants.remember_consent(user_id, client_id, bundles, now)
    await events.record(
        ev.CONSENT_GRANTED, username=username, client_id=client_id, ip=ip, detail="scopes: " + " ".join(bundles)
    )
