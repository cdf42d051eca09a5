"""Signing JWTs as JWS Compact Serializations (RFC 7515 7.1) with our own keys.

A `CompactSigner` belongs to one key and one header: the header never changes, so it is
serialized and base64url-encoded once, and each token costs the claims' encoding and the
signature alone. RS256 is RSASSA-PKCS1-v1_5 with SHA-256 (RFC 7518 3.3); ES256 is ECDSA on
P-256 with SHA-256, its signature the 64 octets R || S (RFC 7518 3.4), not DER. Verification
(ours in access_tokens.py, relying parties' anywhere) is joserfc's or theirs.
"""

from __future__ import annotations

import base64
import json

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

_json = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def _b64(data: bytes) -> bytes:
    return base64.urlsafe_b64encode(data).rstrip(b"=")


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
            ecdsa = ec.ECDSA(hashes.SHA256())

            def sign(data: bytes) -> bytes:
                r, s = decode_dss_signature(private_key.sign(data, ecdsa))
                return r.to_bytes(32, "big") + s.to_bytes(32, "big")

        else:
            raise ValueError(f"unsupported algorithm {alg}")
        self.header = dict(header)
        self._prefix = _b64(_json(self.header).encode("utf-8")) + b"."
        self._sign = sign

    def sign(self, claims: dict) -> str:
        signing_input = self._prefix + _b64(_json(claims).encode("utf-8"))
        return (signing_input + b"." + _b64(self._sign(signing_input))).decode("ascii")
