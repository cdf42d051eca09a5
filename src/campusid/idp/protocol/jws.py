"""JWS Compact Serialization (RFC 7515 7.1) with our own keys: signing, and reading back
the ES256 tokens only we verify (our access tokens).

A `CompactSigner` belongs to one key and one header: the header never changes, so it is
serialized and base64url-encoded once, and each token costs the claims' encoding and the
signature alone. RS256 is RSASSA-PKCS1-v1_5 with SHA-256 (RFC 7518 3.3); ES256 is ECDSA on
P-256 with SHA-256, its signature the 64 octets R || S (RFC 7518 3.4), not DER.

`split_compact` takes a token apart strictly (three base64url segments without padding, a JSON
object header) and `es256_valid` checks an ES256 signature; which header values to accept is
the caller's rule (access_tokens.py). Relying parties verify our ID tokens with their own JOSE
library (ours: joserfc, in oidc_client).
"""

from __future__ import annotations

import base64
import binascii
import json
import re

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature

_json = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


_SEGMENT = re.compile(r"[A-Za-z0-9_-]+")  # base64url without padding (RFC 7515 2)
_ES256 = ec.ECDSA(hashes.SHA256())


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


def es256_valid(public_key: ec.EllipticCurvePublicKey, signing_input: bytes, signature: bytes) -> bool:
    """Whether `signature` (R || S, RFC 7518 3.4) is `public_key`'s ES256 signature of the input."""
    if len(signature) != 64 or public_key.curve.name != "secp256r1":
        return False
    der = encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
    try:
        public_key.verify(der, signing_input, _ES256)
    except InvalidSignature:
        return False
    return True


class CompactSigner:
    """Signs claims under one fixed protected header with one private key."""

    __slots__ = ("header", "_prefix", "_sign")

    def __init__(self, alg: str, private_key, header: dict) -> None:
        if header.get("alg") != alg:
            raise ValueError("the header names another algorithm")
        if alg == "RS256":
            if not isinstance(private_key, rsa.RSAPrivateKey) or private_key.key_size < 2048:
                raise ValueError("RS256 needs an RSA private key of at least 2048 bits")
            pad, digest = padding.PKCS1v15(), hashes.SHA256()

            def sign(data: bytes) -> bytes:
                return private_key.sign(data, pad, digest)

        elif alg == "ES256":
            if not isinstance(private_key, ec.EllipticCurvePrivateKey) or private_key.curve.name != "secp256r1":
                raise ValueError("ES256 needs a P-256 private key")
            def sign(data: bytes) -> bytes:
                r, s = decode_dss_signature(private_key.sign(data, _ES256))
                return r.to_bytes(32, "big") + s.to_bytes(32, "big")

        else:
            raise ValueError(f"unsupported algorithm {alg}")
        self.header = dict(header)
        self._prefix = _b64(_json(self.header).encode("utf-8")) + b"."
        self._sign = sign

    def sign(self, claims: dict) -> str:
        signing_input = self._prefix + _b64(_json(claims).encode("utf-8"))
        return (signing_input + b"." + _b64(self._sign(signing_input))).decode("ascii")
