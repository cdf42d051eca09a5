"""ID token validation (OpenID Connect Core 1.0 section 3.1.3.7), with joserfc for all JOSE work.

The signature check and the claim checks are pure functions; fetching the JWKS (and the one
refresh on an unknown ``kid``, OpenID Connect Core 1.0 section 10.1.1) is driven by the client.
"""

from __future__ import annotations

import hmac
import time
from collections.abc import Iterable
from typing import Any

import httpx
from joserfc import jws, jwt
from joserfc.errors import JoseError
from joserfc.jwk import ECKey, KeySet, OKPKey, RSAKey

from .errors import IDTokenError

# Asymmetric JWS algorithms (RFC 7518 section 3.1, RFC 8037). 'none' and HS* are never accepted:
# a client must not verify ID tokens with a shared secret it did not agree on, and an attacker
# could otherwise sign with the public key as an HMAC secret (OpenID Connect Core 1.0 section 10.1).
ASYMMETRIC_ALGS = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA", "Ed25519"}
)
DEFAULT_ALG = "RS256"  # OpenID Connect Core 1.0 section 15.1: RS256 is mandatory to implement.

_KEY_TYPE = {"RS": "RSA", "PS": "RSA", "ES": "EC", "Ed": "OKP"}
_EC_CURVE = {"ES256": "P-256", "ES384": "P-384", "ES512": "P-521"}
_KEY_CLASSES = {"RSA": RSAKey, "EC": ECKey, "OKP": OKPKey}


class JWKS:
    """The provider's public signing keys, imported once per fetch."""

    def __init__(self, keys: list[Any], fetched_at: float) -> None:
        self.keys = keys
        self.fetched_at = fetched_at

    @property
    def advertised_algs(self) -> set[str]:
        return {k.get("alg") for k in self.keys if k.get("alg") in ASYMMETRIC_ALGS}

    def find(self, kid: str | None, alg: str) -> Any | None:
        """Select the key for a JWS header (RFC 7515 section 4.1.4; RFC 7517 section 4.2-4.4)."""
        candidates = [k for k in self.keys if _key_fits(k, alg)]
        if kid is not None:
            matches = [k for k in candidates if k.kid == kid]
            return matches[0] if len(matches) == 1 else None
        # No kid: acceptable only when a single key could have made the signature.
        return candidates[0] if len(candidates) == 1 else None


def _key_fits(key: Any, alg: str) -> bool:
    """RFC 7518 section 3.1 / RFC 8037 section 3.1: the key type (and curve) the algorithm needs."""
    if key.key_type != _KEY_TYPE[alg[:2]]:
        return False
    if key.get("use") not in (None, "sig") or key.get("alg") not in (None, alg):
        return False
    if alg in _EC_CURVE:
        return key.get("crv") == _EC_CURVE[alg]
    if key.key_type == "OKP":
        return key.get("crv") == "Ed25519"
    return True


def parse_jwks(response: httpx.Response) -> JWKS:
    """RFC 7517 section 5: a JSON object with ``keys``; non-signature keys are skipped."""
    if response.status_code != 200:
        raise IDTokenError(f"JWKS answered HTTP {response.status_code}")
    try:
        doc = response.json()
    except ValueError:
        raise IDTokenError("JWKS is not JSON") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("keys"), list):
        raise IDTokenError("JWKS has no keys list")
    keys = []
    for raw in doc["keys"]:
        if not isinstance(raw, dict) or raw.get("kty") not in _KEY_CLASSES:
            continue  # symmetric ('oct') or unknown key types are never used for ID tokens
        public = {k: v for k, v in raw.items() if k not in ("d", "p", "q", "dp", "dq", "qi", "oth")}
        try:
            keys.append(KeySet.import_key_set({"keys": [public]}).keys[0])
        except (JoseError, ValueError, TypeError):
            continue
    return JWKS(keys, time.monotonic())


def read_header(id_token: str) -> tuple[str, str | None]:
    """Return (alg, kid) of a compact JWS without trusting it yet. A JWE or anything else is refused."""
    if not isinstance(id_token, str) or id_token.count(".") != 2:
        raise IDTokenError("ID token is not a compact JWS")
    try:
        header = jws.extract_compact(id_token.encode("ascii")).protected
    except (JoseError, ValueError, UnicodeError):
        raise IDTokenError("ID token header cannot be read") from None
    alg, kid = header.get("alg"), header.get("kid")
    if not isinstance(alg, str):
        raise IDTokenError("ID token header has no alg")
    if kid is not None and not isinstance(kid, str):
        raise IDTokenError("ID token kid is not a string")
    return alg, kid


def allowed_algs(advertised: Iterable[str], jwks: JWKS | None) -> set[str]:
    """RS256 plus the asymmetric algorithms the provider metadata or the JWKS advertise."""
    allowed = {DEFAULT_ALG} | (set(advertised) & ASYMMETRIC_ALGS)
    if jwks is not None:
        allowed |= jwks.advertised_algs
    return allowed


def check_alg(alg: str, allowed: set[str]) -> None:
    if alg not in allowed:
        raise IDTokenError(f"ID token algorithm {alg!r} is not accepted")


def verify_signature(id_token: str, key: Any, alg: str) -> dict[str, Any]:
    """Verify the JWS signature with joserfc, pinned to one asymmetric algorithm."""
    if alg not in ASYMMETRIC_ALGS:
        raise IDTokenError(f"ID token algorithm {alg!r} is not accepted")
    try:
        token = jwt.decode(id_token, key, algorithms=[alg])
    except (JoseError, ValueError) as exc:
        raise IDTokenError(f"ID token signature is invalid ({type(exc).__name__})") from None
    if not isinstance(token.claims, dict):
        raise IDTokenError("ID token payload is not a JSON object")
    return token.claims


def _number(claims: dict[str, Any], name: str) -> float:
    value = claims.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise IDTokenError(f"ID token {name} is missing or not a number")
    return float(value)


def check_claims(
    claims: dict[str, Any],
    *,
    issuer: str,
    client_id: str,
    leeway: float,
    nonce: str | None = None,
    max_age: int | None = None,
    now: float | None = None,
) -> None:
    """OpenID Connect Core 1.0 section 3.1.3.7 steps 2-11 (and 2 for ``sub``)."""
    now = time.time() if now is None else now
    # Step 2: iss exactly equals the canonical issuer (campusid.issuer: never a Unicode form).
    if claims.get("iss") != issuer:
        raise IDTokenError("ID token iss is not the configured issuer")
    # Section 2: sub is required.
    if not isinstance(claims.get("sub"), str) or not claims["sub"]:
        raise IDTokenError("ID token has no sub")
    # Step 3: aud contains client_id; steps 4-5: with several audiences azp must be our client_id.
    aud = claims.get("aud")
    audiences = [aud] if isinstance(aud, str) else aud
    if not isinstance(audiences, list) or not all(isinstance(a, str) for a in audiences):
        raise IDTokenError("ID token aud is missing or malformed")
    if client_id not in audiences:
        raise IDTokenError("ID token aud does not contain this client_id")
    azp = claims.get("azp")
    if len(audiences) > 1 and azp is None:
        raise IDTokenError("ID token has several audiences and no azp")
    if azp is not None and azp != client_id:
        raise IDTokenError("ID token azp is not this client_id")
    # Step 9: exp is in the future (with leeway for clock skew).
    if now > _number(claims, "exp") + leeway:
        raise IDTokenError("ID token has expired")
    # Step 10: iat is present and not in the future.
    if _number(claims, "iat") > now + leeway:
        raise IDTokenError("ID token iat is in the future")
    if "nbf" in claims and _number(claims, "nbf") > now + leeway:
        raise IDTokenError("ID token is not valid yet (nbf)")
    # Step 11: nonce equals the one sent in the authentication request.
    if nonce is not None:
        received = claims.get("nonce")
        if not isinstance(received, str) or not hmac.compare_digest(received.encode(), nonce.encode()):
            raise IDTokenError("ID token nonce does not match this login")
    # Step 13: with max_age, auth_time is required and recent enough.
    if max_age is not None and now > _number(claims, "auth_time") + max_age + leeway:
        raise IDTokenError("ID token auth_time is older than max_age")
