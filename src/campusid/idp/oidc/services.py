"""What the OIDC face adds to the app's context: its token minter and validator, the device grant's
user-code digests and the back-channel logout sender. Installed by `campusid.idp.oidc.install`."""

from __future__ import annotations

from dataclasses import dataclass

from campusid.idp.context import Context
from campusid.idp.oidc.backchannel import BackchannelSender
from campusid.idp.oidc.rules.access_tokens import AccessTokenValidator
from campusid.idp.oidc.rules.device_grant import UserCodeDigests
from campusid.idp.oidc.rules.logout import LogoutTokens
from campusid.idp.oidc.rules.tokens import TokenMinter

NAME = "oidc"


@dataclass
class OIDCServices:
    minter: TokenMinter
    validator: AccessTokenValidator
    user_codes: UserCodeDigests
    backchannel: BackchannelSender


def build(ctx: Context) -> OIDCServices:
    settings, issuer = ctx.settings, ctx.settings.issuer.canonical
    return OIDCServices(
        minter=TokenMinter(ctx.keys, issuer, settings.id_token_ttl, settings.access_token_ttl),
        validator=AccessTokenValidator(ctx.keys, ctx.store, issuer),
        user_codes=UserCodeDigests(settings.secret_key),
        backchannel=BackchannelSender(ctx.store, LogoutTokens(ctx.keys, issuer), ctx.pairwise, ctx.events),
    )


def oidc(ctx: Context) -> OIDCServices:
    """The OIDC face's services in this app."""
    return ctx.faces[NAME]
