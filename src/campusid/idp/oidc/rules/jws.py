"""JWS Compact Serialization (RFC 7515 7.1) with our own keys: signing, and reading back the
ES256 tokens only we verify (our access tokens).

A `CompactSigner` belongs to one key and one header: the header never changes, so it is checked,
serialized and base64url-encoded once, and each token costs the claims' encoding and one call of
the private key's `sign` in `cryptography` (OpenSSL), the same call joserfc's algorithms make:
RS256 is RSASSA-PKCS1-v1_5 with SHA-256 (RFC 7518 3.3), ES256 ECDSA P-256 with SHA-256 whose DER
signature becomes the 64 octets R || S (3.4). joserfc's generic `serialize_compact`, which redoes
the header, registry and key-operation checks per token, cost ~80 µs of a ~740 µs token exchange
under load, and its algorithm objects alone another ~20 µs; tests check every token against
joserfc's verification.

`split_compact` takes a token apart strictly (three base64url segments without padding, a JSON
object header) and `es256_valid` checks an ES256 signature with joserfc's algorithm; which header
values to accept is the caller's rule (access_tokens.py). Relying parties verify our ID tokens
with their own JOSE library (ours: joserfc's full path, in oidc_client).
"""

from __future__ import annotations

import base64
import binascii
import json
import re

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from joserfc.errors import JoseError
from joserfc.jwk import ECKey, RSAKey
from joserfc.jws import JWSRegistry

_ALGS = ("RS256", "ES256")
_REGISTRY = JWSRegistry(algorithms=list(_ALGS))
_json = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
_SEGMENT = re.compile(r"[A-Za-z0-9_-]+")  # base64url without padding (RFC 7515 2)


def _b64(data: bytes) -> bytes:
    return base64.urlsafe_b64encode(data).rstrip(b"=")


def _unb64(segment: str) -> bytes:
    if not _SEGMENT.fullmatch(segment):
        raise ValueError("not a base64url segment")
    try:
        return base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
    except binascii.Error:
        raise ValueError("not a base64url segment") from None


def split_compact(token: str) -> tuple[dict, bytes, bytes, bytes]:
    """(protected header, signing input, payload, signature) of a JWS Compact Serialization;
    ValueError when it is not one."""
    parts = token.split(".")
    if len(parts) != 3:
        raise ValueError("a JWS has three parts")
    header_seg, payload_seg, signature_seg = parts
    try:
        header = json.loads(_unb64(header_seg))
    except (UnicodeDecodeError, RecursionError):
        raise ValueError("the header is not UTF-8 JSON of a sane depth") from None
    if not isinstance(header, dict):
        raise ValueError("the header is not a JSON object")
    signing_input = f"{header_seg}.{payload_seg}".encode("ascii")
    return header, signing_input, _unb64(payload_seg), _unb64(signature_seg)


def es256_valid(key: ECKey, signing_input: bytes, signature: bytes) -> bool:
    """Whether `signature` (R || S, RFC 7518 3.4) is `key`'s ES256 signature of the input."""
    model = _REGISTRY.get_alg("ES256")
    try:
        model.check_key(key)
        return model.verify(signing_input, signature, key)
    except (JoseError, ValueError, TypeError):
        return False


class CompactSigner:
    """Signs claims under one fixed protected header with one private key (a joserfc key)."""

    __slots__ = ("header", "_prefix", "_sign")

    def __init__(self, alg: str, key: RSAKey | ECKey, header: dict) -> None:
        if header.get("alg") != alg:
            raise ValueError("the header names another algorithm")
        if alg not in _ALGS:
            raise ValueError(f"unsupported algorithm {alg}")
        expected = RSAKey if alg == "RS256" else ECKey
        if not isinstance(key, expected) or key.private_key is None:
            raise ValueError(f"{alg} needs an {expected.key_type} private key")
        try:
            _REGISTRY.get_alg(alg).check_key(key)  # ES256: the key is on P-256
        except JoseError as exc:
            raise ValueError(f"{alg} cannot sign with this key: {exc.description or exc.error}") from None
        _REGISTRY.check_header(header)
        native = key.private_key
        if alg == "RS256":
            if native.key_size < 2048:
                raise ValueError("RS256 needs an RSA private key of at least 2048 bits")
            pad, digest = padding.PKCS1v15(), hashes.SHA256()

            def sign(data: bytes) -> bytes:
                return native.sign(data, pad, digest)

        else:
            ecdsa = ec.ECDSA(hashes.SHA256())

            def sign(data: bytes) -> bytes:
                r, s = decode_dss_signature(native.sign(data, ecdsa))
                return r.to_bytes(32, "big") + s.to_bytes(32, "big")

        self.header = dict(header)
        self._prefix = _b64(_json(self.header).encode("utf-8")) + b"."
        self._sign = sign

    def sign(self, claims: dict) -> str:
        signing_input = self._prefix + _b64(_json(claims).encode("utf-8"))
        return (signing_input + b"." + _b64(self._sign(signing_input))).decode("ascii")
