"""Passkeys (Web Authentication Level 2, W3C): where they are offered, the relying party this
server is, and the ceremonies' checks, done by py_webauthn (challenge, origin, RP ID hash, user
presence and verification flags, signature, and the signature counter of 6.1.1).

Browsers refuse WebAuthn on an IP-address origin (the RP ID must be a registrable domain or
`localhost`, Web Authentication 5.1.4.1 / 13.4.9), so passkeys are offered only where the issuer's
host is a name.

py_webauthn (with its cbor2, pyOpenSSL and pyasn1) is imported at the first ceremony, not when a
worker starts: ~7.8 MB of every worker's memory that only the passkey pages need.
"""

from __future__ import annotations

import base64
import ipaddress
import json
from dataclasses import dataclass

from campusid.i18n import N_
from campusid.issuer import Issuer

MAX_CREDENTIAL_JSON = 16 * 1024
HWK, SWK = "hwk", "swk"


class PasskeyRefused(ValueError):
    """A WebAuthn response that is refused; the message is for the person."""


def offered(issuer: Issuer) -> bool:
    """Passkeys need a host name (localhost included), never an IP address."""
    try:
        ipaddress.ip_address(issuer.host.strip("[]"))
    except ValueError:
        return True
    return False


@dataclass(frozen=True)
class RelyingParty:
    """This server as a WebAuthn relying party: its RP ID (the issuer's host) and origin."""

    rp_id: str
    origin: str
    name: str = "campusid"

    @classmethod
    def of(cls, issuer: Issuer) -> RelyingParty:
        port = f":{issuer.port}" if issuer.port else ""
        return cls(rp_id=issuer.host, origin=f"{issuer.scheme}://{issuer.host}{port}")

    def registration_options(self, user_id: str, username: str, display: str, existing: list[str]) -> tuple[str, dict]:
        """(challenge, options for navigator.credentials.create) for a discoverable credential
        with user verification, excluding the user's existing ones."""
        from webauthn import generate_registration_options, options_to_json
        from webauthn.helpers.structs import (
            AuthenticatorSelectionCriteria,
            PublicKeyCredentialDescriptor,
            ResidentKeyRequirement,
            UserVerificationRequirement,
        )

        options = generate_registration_options(
            rp_id=self.rp_id,
            rp_name=self.name,
            user_name=username,
            user_id=user_id.encode(),
            user_display_name=display,
            authenticator_selection=AuthenticatorSelectionCriteria(
                resident_key=ResidentKeyRequirement.REQUIRED,
                user_verification=UserVerificationRequirement.REQUIRED,
            ),
            exclude_credentials=[PublicKeyCredentialDescriptor(id=base64url_to_bytes(c)) for c in existing],
        )
        return bytes_to_base64url(options.challenge), json.loads(options_to_json(options))

    def authentication_options(self, allowed: list[str] | None) -> tuple[str, dict]:
        """(challenge, options for navigator.credentials.get): any discoverable credential
        (`allowed` None: sign-in without a password) or one of the user's (second factor)."""
        from webauthn import generate_authentication_options, options_to_json
        from webauthn.helpers.structs import PublicKeyCredentialDescriptor, UserVerificationRequirement

        options = generate_authentication_options(
            rp_id=self.rp_id,
            allow_credentials=[PublicKeyCredentialDescriptor(id=base64url_to_bytes(c)) for c in allowed or []],
            user_verification=UserVerificationRequirement.REQUIRED,
        )
        return bytes_to_base64url(options.challenge), json.loads(options_to_json(options))

    def _verified(self, verify, refused: str, credential: str, challenge: str, **more):
        """`verify` (the library's registration or assertion check) with what every ceremony
        checks: our challenge, RP ID and origin, and user verification (Web Authentication
        7.1 and 7.2); any failure is PasskeyRefused, `refused` and the reason."""
        from webauthn.helpers.exceptions import WebAuthnException

        try:
            return verify(
                credential=_json(credential),
                expected_challenge=base64url_to_bytes(challenge),
                expected_rp_id=self.rp_id,
                expected_origin=self.origin,
                require_user_verification=True,
                **more,
            )
        except (WebAuthnException, ValueError, TypeError, KeyError) as exc:
            raise PasskeyRefused(N_("%(refused)s: %(reason)s", refused=refused, reason=_reason(exc))) from None

    def verify_registration(self, credential: str, challenge: str) -> tuple[str, bytes, int]:
        """(credential id, COSE public key, sign count) of a verified registration."""
        from webauthn import verify_registration_response

        verified = self._verified(
            verify_registration_response, N_("The passkey could not be registered"), credential, challenge
        )
        return bytes_to_base64url(verified.credential_id), verified.credential_public_key, verified.sign_count

    def verify_authentication(
        self, credential: str, challenge: str, public_key: bytes, sign_count: int
    ) -> tuple[int, str]:
        """(new sign count, RFC 8176 method) of a verified assertion. A counter that did not grow
        past the stored one (when either is non-zero) means a cloned authenticator and is refused
        (Web Authentication 6.1.1)."""
        from webauthn import verify_authentication_response

        verified = self._verified(
            verify_authentication_response,
            N_("The passkey was not accepted"),
            credential,
            challenge,
            credential_public_key=public_key,
            credential_current_sign_count=sign_count,
        )
        # A passkey that cannot leave its device is a hardware key; a synced one, a software key.
        method = SWK if verified.credential_backed_up else HWK
        return verified.new_sign_count, method


def credential_id_of(credential: str) -> str:
    """The credential's id (base64url) as the response names it, before any check."""
    data = _json(credential)
    raw = data.get("rawId") or data.get("id")
    if not isinstance(raw, str) or not raw or len(raw) > 1400:
        raise PasskeyRefused(N_("The passkey response does not name a credential."))
    try:
        return bytes_to_base64url(base64url_to_bytes(raw))
    except (ValueError, TypeError):
        raise PasskeyRefused(N_("The passkey response does not name a credential.")) from None


def base64url_to_bytes(value: str) -> bytes:
    """Base64url, padding optional (Web Authentication 3's encoding), decoded as py_webauthn's
    helper of the same name does (surplus padding is ignored); a bad value is a ValueError."""
    return base64.urlsafe_b64decode(f"{value}===")


def bytes_to_base64url(value: bytes) -> str:
    return base64.urlsafe_b64encode(value).decode("ascii").rstrip("=")


def _json(credential: str) -> dict:
    if not credential or len(credential) > MAX_CREDENTIAL_JSON:
        raise PasskeyRefused(N_("The passkey response is missing or too large."))
    try:
        data = json.loads(credential)
    except ValueError:
        raise PasskeyRefused(N_("The passkey response is not valid.")) from None
    if not isinstance(data, dict):
        raise PasskeyRefused(N_("The passkey response is not valid."))
    return data


def _reason(exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    return text[:200]
