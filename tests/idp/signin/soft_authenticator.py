"""A software WebAuthn authenticator for the tests (Web Authentication Level 2, 6.1 and 6.5): it
makes "none" attestations and ES256 assertions, and can be told to lie (another origin, another
RP ID, a counter that does not grow) so the server's refusals can be shown."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import struct

import cbor2
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec

UP, UV, AT = 0x01, 0x04, 0x40


def b64u(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class SoftAuthenticator:
    def __init__(self, rp_id: str, origin: str) -> None:
        self.rp_id, self.origin = rp_id, origin
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.credential_id = os.urandom(16)
        self.count = 0
        self.user_handle = b""

    def _cose(self) -> bytes:
        numbers = self.key.public_key().public_numbers()
        return cbor2.dumps({1: 2, 3: -7, -1: 1, -2: numbers.x.to_bytes(32, "big"), -3: numbers.y.to_bytes(32, "big")})

    def _auth_data(self, rp_id: str, flags: int, attested: bool) -> bytes:
        data = hashlib.sha256(rp_id.encode()).digest() + bytes([flags]) + struct.pack(">I", self.count)
        if attested:
            data += bytes(16) + struct.pack(">H", len(self.credential_id)) + self.credential_id + self._cose()
        return data

    def _client_data(self, kind: str, challenge: str, origin: str | None) -> bytes:
        return json.dumps(
            {"type": kind, "challenge": challenge, "origin": origin or self.origin, "crossOrigin": False}
        ).encode()

    def create(self, options: dict, *, origin: str | None = None, rp_id: str | None = None) -> str:
        self.user_handle = base64.urlsafe_b64decode(options["user"]["id"] + "==")
        client_data = self._client_data("webauthn.create", options["challenge"], origin)
        auth_data = self._auth_data(rp_id or self.rp_id, UP | UV | AT, attested=True)
        attestation = cbor2.dumps({"fmt": "none", "attStmt": {}, "authData": auth_data})
        return json.dumps(
            {
                "id": b64u(self.credential_id),
                "rawId": b64u(self.credential_id),
                "type": "public-key",
                "response": {"clientDataJSON": b64u(client_data), "attestationObject": b64u(attestation)},
                "clientExtensionResults": {},
            }
        )

    def get(
        self,
        options: dict,
        *,
        origin: str | None = None,
        rp_id: str | None = None,
        challenge: str | None = None,
        count_step: int = 1,
    ) -> str:
        self.count += count_step
        client_data = self._client_data("webauthn.get", challenge or options["challenge"], origin)
        auth_data = self._auth_data(rp_id or self.rp_id, UP | UV, attested=False)
        signature = self.key.sign(auth_data + hashlib.sha256(client_data).digest(), ec.ECDSA(hashes.SHA256()))
        return json.dumps(
            {
                "id": b64u(self.credential_id),
                "rawId": b64u(self.credential_id),
                "type": "public-key",
                "response": {
                    "clientDataJSON": b64u(client_data),
                    "authenticatorData": b64u(auth_data),
                    "signature": b64u(signature),
                    "userHandle": b64u(self.user_handle),
                },
                "clientExtensionResults": {},
            }
        )
