"""Signing keys: RS256 for ID tokens, ES256 for access tokens, with rotation.

Private keys are sealed (AES-256-GCM under a key derived from CAMPUSID_SECRET_KEY) before they
reach the database. `rotate()` publishes the next key at once but lets it sign only after
`jwks_max_age` seconds, so every relying party's cached JWKS has it before the first token it
signs; the old key stays in the JWKS until the last token it signed has expired.

The keys are read through the async store. In memory they are read again by a background task of
the app's lifespan (`refresh_forever`, every `refresh_seconds`: another process may have rotated
them) while requests go on with the keys they have; a token whose `kid` is unknown makes them be
read at once (at most once a second). The JWKS endpoint reads the table on every request.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

from cryptography.exceptions import InvalidTag
from joserfc.jwk import ECKey, KeySet, RSAKey

from campusid.idp.crypto import Sealer, new_token
from campusid.idp.store import Store
from campusid.idp.store.errors import StoreError
from campusid.idp.store.rows import SigningKey

ID_TOKEN_ALG = "RS256"
ACCESS_TOKEN_ALG = "ES256"
ALGS = (ID_TOKEN_ALG, ACCESS_TOKEN_ALG)
REFRESH_SECONDS = 10

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
        self.refresh_seconds: float = REFRESH_SECONDS
        self._keys: list[_Key] = []
        self._signing_order: dict[str, list[_Key]] = {}  # per alg, the latest activation first
        self._loaded_at = 0.0
        self._verify_set: KeySet | None = None

    # -- administration -------------------------------------------------------------------
    async def _add(self, alg: str, activates_at: int) -> str:
        kid = f"{alg.lower()}-{time.strftime('%Y%m%d', time.gmtime())}-{new_token(6)}"
        key = _generate(alg, kid)
        await self._store.keys.add(
            SigningKey(
                kid=kid,
                alg=alg,
                public_jwk=key.as_dict(private=False),
                private_enc=self._sealer.seal(key.as_pem(private=True)),
                created_at=int(time.time()),
                activates_at=activates_at,
            )
        )
        return kid

    async def load(self) -> None:
        """Create the first key of each algorithm, active at once (first start only), and read them."""
        have = {row.alg for row in await self._store.keys.list()}
        for alg in ALGS:
            if alg not in have:
                await self._add(alg, int(time.time()))
        await self.reload()

    async def ready(self) -> None:
        """The keys are in memory (read now if this is their first use)."""
        if not self._loaded_at:
            await self.load()

    async def rotate(self, algs: tuple[str, ...] = ALGS) -> list[dict]:
        """Publish a next key per algorithm, signing from now + jwks_max_age; drop expired ones."""
        now = int(time.time())
        added = [
            {
                "kid": await self._add(alg, now + self._publish_delay),
                "alg": alg,
                "signs_from": now + self._publish_delay,
            }
            for alg in algs
        ]
        await self.reload()
        published = {k.kid for k in self._published(now)}
        await self._store.keys.delete(k.kid for k in self._keys if k.kid not in published)
        await self.reload()
        return added

    async def due_for_rotation(self, max_age: int) -> bool:
        """Whether the newest key in the database (another worker's included) is `max_age` seconds
        old or older (never before `load` has made the first keys)."""
        rows = await self._store.keys.list()
        return bool(rows) and int(time.time()) - max(row.created_at for row in rows) >= max_age

    # -- cache ----------------------------------------------------------------------------
    async def reload(self) -> None:
        rows = await self._store.keys.list()
        known = {k.kid: k.private for k in self._keys}
        keys: list[_Key] = []
        for row in rows:
            later = [r.activates_at for r in rows if r.alg == row.alg and r.activates_at > row.activates_at]
            # Unsealing and parsing a private key is slow: do it once per key, not per reload.
            private = known.get(row.kid) or _import(row.alg, self._unseal(row), row.public_jwk)
            keys.append(
                _Key(row.kid, row.alg, row.activates_at, min(later) if later else None, row.public_jwk, private)
            )
        # Swapped in whole: a request running meanwhile sees the old keys or the new, never a mix.
        self._signing_order = {
            alg: sorted((k for k in keys if k.alg == alg), key=lambda k: -k.activates_at) for alg in ALGS
        }
        self._keys = keys
        self._loaded_at = time.monotonic()
        self._verify_set = None

    def _unseal(self, row: SigningKey) -> bytes:
        try:
            return self._sealer.open(row.private_enc)
        except InvalidTag:
            raise WrongSecretKey(
                f"CAMPUSID_SECRET_KEY does not open the signing key {row.kid} stored in the database: it is "
                "not the secret key the keys were created with. Start campusid with that key (the stored keys "
                "cannot be opened without it)."
            ) from None

    async def refresh(self) -> bool:
        """Read the keys again; on failure keep the ones in hand (logged). True if it worked."""
        try:
            await self.reload()
        except Exception:  # noqa: BLE001 - the keys in hand stay in use until the next attempt
            log.exception("reloading the signing keys failed; the keys loaded before stay in use")
            return False
        return True

    async def refresh_forever(self) -> None:
        """The lifespan's background task: read the keys again every `refresh_seconds`, after a
        failure as after a success (a database that is down is not asked in a tight loop)."""
        while True:
            await asyncio.sleep(self.refresh_seconds)
            await self.refresh()

    def _published(self, now: int) -> list[_Key]:
        return [k for k in self._keys if k.retires_at is None or now < k.retires_at + self._keep_after_retire]

    # -- use ------------------------------------------------------------------------------
    def signing_key(self, alg: str, now: int | None = None) -> RSAKey | ECKey:
        """The key that signs `alg` tokens now (the keys must be loaded: `ready()`)."""
        now = int(time.time()) if now is None else now
        for key in self._signing_order.get(alg, ()):  # the most recently activated key signs
            if key.activates_at <= now:
                return key.private
        raise RuntimeError(f"no active {alg} signing key; run `campusid keys rotate`")

    def jwks(self) -> dict:
        return {"keys": [dict(k.public) for k in self._published(int(time.time()))]}

    async def _know(self, kid: str | None) -> None:
        """Keys loaded, and read again at once for an unknown `kid` (a key another worker just
        created), at most once a second."""
        await self.ready()
        if kid is not None and all(k.kid != kid for k in self._keys) and time.monotonic() - self._loaded_at > 1:
            await self.reload()

    async def verification_key(self, kid: str, alg: str) -> RSAKey | ECKey | None:
        """The published public key `kid` if it is an `alg` key, else None."""
        expected = RSAKey if alg == ID_TOKEN_ALG else ECKey
        for key in (await self.verification_keys(kid)).keys:
            if key.kid == kid:
                return key if isinstance(key, expected) else None
        return None

    def published_key(self, kid: str, alg: str) -> bool:
        """Whether `kid` is a published `alg` key among the keys in memory (no database read)."""
        return any(k.kid == kid and k.alg == alg for k in self._published(int(time.time())))

    async def verification_keys(self, kid: str | None = None) -> KeySet:
        """Public keys for verifying our own tokens; read again once when `kid` is unknown."""
        await self._know(kid)
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
        for k in self._keys:
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
