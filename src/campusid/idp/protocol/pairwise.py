"""Pairwise subject identifiers (OIDC Core 8.1).

sub = base64url(HMAC-SHA256(key, sector_identifier || "|" || user_id)), with the key derived
from CAMPUSID_SECRET_KEY. The student number is never an input, so it never appears in `sub`.
"""

from __future__ import annotations

import hashlib
import hmac
from functools import lru_cache
from urllib.parse import urlsplit

from campusid.idp.crypto import b64url, derive_key
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


class PairwiseSubjects:
    def __init__(self, secret_key: str) -> None:
        self._key = derive_key(secret_key, "campusid/pairwise-sub/v1")

    def sub(self, sector: str, user_id: str) -> str:
        mac = hmac.new(self._key, f"{sector}|{user_id}".encode(), hashlib.sha256).digest()
        return b64url(mac)

    def for_client(self, client: Client, user_id: str) -> str:
        return self.sub(sector_of(client), user_id)
