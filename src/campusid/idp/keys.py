"""Signing keys: RS256 for ID tokens, ES256 for access tokens (DESIGN 3.4), with rotation.

Private keys are sealed (AES-256-GCM under a key derived from CAMPUSID_SECRET_KEY) before they
reach the database. `rotate()` publishes the next key at once but lets it sign only after
`jwks_max_age` seconds, so every relying party's cached JWKS has it before the first token it
signs; the old key stays in the JWKS until the last token it signed has expired.

Keys are cached and read again every _RELOAD_SECONDS (another process may have rotated them). That
read runs on a thread of its own while requests go on with the keys they have: the request path
never waits for the database for its keys, except on first use and for a `kid` it does not know.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from cryptography.exceptions import InvalidTag
from joserfc.jwk import ECKey, KeySet, RSAKey

from campusid.idp.crypto import Sealer, new_token
from campusid.idp.store import Store
from campusid.idp.store.db import StoreError

ID_TOKEN_ALG = "RS256"
ACCESS_TOKEN_ALG = "ES256"
ALGS = (ID_TOKEN_ALG, ACCESS_TOKEN_ALG)
_RELOAD_SECONDS = 10

log = logging.getLogger("campusid.idp.keys")


class WrongSecretKey(StoreError):
    """The stored private keys were sealed under another CAMPUSID_SECRET_KEY."""


@dataclass(frozen=True)
class _Key:
    kid: str
    alg: str
    activates_at: int
    retires_at: int | None  # when the next key of its alg takes over signing
    public: dict
    private: RSAKey | ECKey


def _generate(alg: str, kid: str) -> RSAKey | ECKey:
    params = {"kid": kid, "alg": alg, "use": "sig"}
    if alg == "RS256":
        return RSAKey.generate_key(2048, parameters=params, private=True)
    if alg == "ES256":
        return ECKey.generate_key("P-256", parameters=params, private=True)
    raise ValueError(f"unsupported algorithm {alg}")


def _import(alg: str, pem: bytes, public: dict) -> RSAKey | ECKey:
    params = {"kid": public["kid"], "alg": alg, "use": "sig"}
    cls = RSAKey if alg == "RS256" else ECKey
    return cls.import_key(pem, parameters=params)


class KeyManager:
    def __init__(self, store: Store, secret_key: str, jwks_max_age: int, max_token_lifetime: int) -> None:
        self._store = store
        self._sealer = Sealer(secret_key)
        self._publish_delay = jwks_max_age
        self._keep_after_retire = max_token_lifetime + 60
        self._lock = threading.Lock()
        self._keys: list[_Key] = []
        self._signing_order: dict[str, list[_Key]] = {}  # per alg, the latest activation first
        self._loaded_at = 0.0
        self._verify_set: KeySet | None = None
        self.refresher: threading.Thread | None = None  # the background reload under way, if any

    # -- administration -------------------------------------------------------------------
    def _add(self, alg: str, activates_at: int) -> str:
        kid = f"{alg.lower()}-{time.strftime('%Y%m%d', time.gmtime())}-{new_token(6)}"
        key = _generate(alg, kid)
        self._store.keys.add(
            kid=kid,
            alg=alg,
            public_jwk=key.as_dict(private=False),
            private_enc=self._sealer.seal(key.as_pem(private=True)),
            created_at=int(time.time()),
            activates_at=activates_at,
        )
        return kid

    def ensure(self) -> None:
        """Create the first key of each algorithm, active at once (first start only)."""
        have = {row["alg"] for row in self._store.keys.all()}
        for alg in ALGS:
            if alg not in have:
                self._add(alg, int(time.time()))
        self.reload()

    def rotate(self, algs: tuple[str, ...] = ALGS) -> list[dict]:
        """Publish a next key per algorithm, signing from now + jwks_max_age; drop expired ones."""
        now = int(time.time())
        added = [
            {"kid": self._add(alg, now + self._publish_delay), "alg": alg, "signs_from": now + self._publish_delay}
            for alg in algs
        ]
        self.reload()
        published = {k.kid for k in self._published(now)}
        self._store.keys.delete(k.kid for k in self._keys if k.kid not in published)
        self.reload()
        return added

    # -- cache ----------------------------------------------------------------------------
    def reload(self) -> None:
        rows = self._store.keys.all()
        known = {k.kid: k.private for k in self._keys}
        keys: list[_Key] = []
        for row in rows:
            later = [
                r["activates_at"] for r in rows if r["alg"] == row["alg"] and r["activates_at"] > row["activates_at"]
            ]
            # Unsealing and parsing a private key is slow: do it once per key, not per reload.
            private = known.get(row["kid"]) or _import(row["alg"], self._unseal(row), row["public_jwk"])
            keys.append(
                _Key(
                    row["kid"],
                    row["alg"],
                    row["activates_at"],
                    min(later) if later else None,
                    row["public_jwk"],
                    private,
                )
            )
        order = {alg: sorted((k for k in keys if k.alg == alg), key=lambda k: -k.activates_at) for alg in ALGS}
        with self._lock:
            self._keys = keys
            self._signing_order = order
            self._loaded_at = time.monotonic()
            self._verify_set = None

    def _unseal(self, row: dict) -> bytes:
        try:
            return self._sealer.open(row["private_enc"])
        except InvalidTag:
            raise WrongSecretKey(
                f"CAMPUSID_SECRET_KEY does not open the signing key {row['kid']} stored in the database: it is "
                "not the secret key the keys were created with. Start campusid with that key (the stored keys "
                "cannot be opened without it)."
            ) from None

    def _current(self) -> list[_Key]:
        if not self._loaded_at:
            self.reload()  # first use: nothing to go on with yet
        elif time.monotonic() - self._loaded_at > _RELOAD_SECONDS:
            self._refresh_in_background()
        return self._keys

    def _refresh_in_background(self) -> None:
        """Start one reload on its own thread, unless one is under way."""
        with self._lock:
            if self.refresher is not None and self.refresher.is_alive():
                return
            self.refresher = threading.Thread(target=self._refresh, name="campusid-key-reload", daemon=True)
            self.refresher.start()

    def _refresh(self) -> None:
        try:
            self.reload()
        except Exception:  # the keys in hand stay in use; the next attempt comes after _RELOAD_SECONDS
            log.exception("reloading the signing keys failed; the keys loaded before stay in use")
            with self._lock:
                self._loaded_at = time.monotonic()

    def _published(self, now: int) -> list[_Key]:
        return [k for k in self._keys if k.retires_at is None or now < k.retires_at + self._keep_after_retire]

    # -- use ------------------------------------------------------------------------------
    def signing_key(self, alg: str, now: int | None = None) -> RSAKey | ECKey:
        now = int(time.time()) if now is None else now
        self._current()
        for key in self._signing_order.get(alg, ()):  # the most recently activated key signs
            if key.activates_at <= now:
                return key.private
        raise RuntimeError(f"no active {alg} signing key; run `campusid keys rotate`")

    def jwks(self) -> dict:
        self._current()
        return {"keys": [dict(k.public) for k in self._published(int(time.time()))]}

    def _know(self, kid: str | None) -> None:
        """Keys as current as the cache allows; reloaded at once for an unknown `kid` (a key another
        worker just created), at most once a second."""
        self._current()
        if kid is not None and all(k.kid != kid for k in self._keys) and time.monotonic() - self._loaded_at > 1:
            self.reload()

    def verification_key(self, kid: str, alg: str) -> RSAKey | ECKey | None:
        """The published public key `kid` if it is an `alg` key, else None."""
        expected = RSAKey if alg == ID_TOKEN_ALG else ECKey
        for key in self.verification_keys(kid).keys:
            if key.kid == kid:
                return key if isinstance(key, expected) else None
        return None

    def verification_keys(self, kid: str | None = None) -> KeySet:
        """Public keys for verifying our own tokens; reloads once when `kid` is unknown."""
        self._know(kid)
        with self._lock:
            if self._verify_set is None:
                self._verify_set = KeySet(
                    [
                        (RSAKey if k.alg == "RS256" else ECKey).import_key(k.public)
                        for k in self._published(int(time.time()))
                    ]
                )
            return self._verify_set

    def describe(self) -> list[dict]:
        now = int(time.time())
        published = {k.kid for k in self._published(now)}
        out = []
        for k in self._current():
            signing = k.activates_at <= now and (k.retires_at is None or now < k.retires_at)
            out.append(
                {
                    "kid": k.kid,
                    "alg": k.alg,
                    "signs_from": k.activates_at,
                    "signs_until": k.retires_at,
                    "signing": signing,
                    "published": k.kid in published,
                }
            )
        return out
