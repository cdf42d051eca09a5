"""The sector of an OIDC client (OIDC Core 8.1), which its pairwise `sub` is computed for: the
host of its sector_identifier_uri, else the single host of its https redirect URIs, else its
client_id. The subject itself is the release map's (idp/release.py PairwiseSubjects)."""

from __future__ import annotations

from functools import lru_cache
from urllib.parse import urlsplit

from campusid.idp.release import PairwiseSubjects
from campusid.idp.store.rows import Client


def sector_of(client: Client) -> str:
    """The host of the sector_identifier_uri, else the single host of the https redirect URIs,
    else the client_id (native clients on loopback or private-use schemes)."""
    return _sector(client.client_id, client.sector_identifier_uri, tuple(client.redirect_uris))


@lru_cache(maxsize=1024)
def _sector(client_id: str, sector_identifier_uri: str | None, redirect_uris: tuple[str, ...]) -> str:
    # keyed by everything the answer depends on, so an edited client gets its new sector at once
    if sector_identifier_uri:
        return (urlsplit(sector_identifier_uri).hostname or "").lower()
    hosts = {(urlsplit(u).hostname or "").lower() for u in redirect_uris if u.lower().startswith("https://")}
    if len(hosts) == 1:
        return hosts.pop()
    return client_id


def web_hosts(redirect_uris: list[str]) -> set[str]:
    return {(urlsplit(u).hostname or "").lower() for u in redirect_uris if "://" in u}


def subject(pairwise: PairwiseSubjects, client: Client, user_id: str) -> str:
    """The `sub` a client sees of a person: pairwise for its sector."""
    return pairwise.sub(sector_of(client), user_id)
