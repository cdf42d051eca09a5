"""What the CAS face adds to the app's context: the sealer of validated tickets (single logout),
the single logout sender, and the TLS trust and HTTP client of proxy callbacks (PKIX with the
system's CAs plus CAMPUSID_CAS_PROXY_CA_FILE; single logout POSTs trust the same). Installed by
`campusid.idp.cas.face.install`."""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from campusid.idp.cas.slo import SEAL_PURPOSE, SingleLogoutSender
from campusid.idp.context import Context
from campusid.idp.crypto import Sealer

if TYPE_CHECKING:
    import httpx

NAME = "cas"
CALLBACK_TIMEOUT = 5.0  # seconds for a whole proxy callback (DESIGN: 5 s)


def trust(ca_file: str | None) -> ssl.SSLContext:
    """PKIX verification against the system's CAs, and the operator's CAs when a file is named."""
    context = ssl.create_default_context()
    if ca_file:
        context.load_verify_locations(cafile=ca_file)
    return context


@dataclass
class CASServices:
    sealer: Sealer
    slo: SingleLogoutSender
    tls: ssl.SSLContext
    ticket_ttl: int
    _callbacks: dict = field(default_factory=dict)

    def callbacks(self) -> httpx.AsyncClient:
        """The client of proxy callbacks (one per event loop; no redirects, no proxy from the
        environment, 5 s in all)."""
        import asyncio

        import httpx

        loop = asyncio.get_running_loop()
        client = self._callbacks.get(loop)
        if client is None:
            client = self._callbacks[loop] = httpx.AsyncClient(
                timeout=httpx.Timeout(CALLBACK_TIMEOUT),
                follow_redirects=False,
                trust_env=False,
                verify=self.tls,
            )
        return client

    async def close(self) -> None:
        for client in list(self._callbacks.values()):
            await client.aclose()
        self._callbacks.clear()


def build(ctx: Context) -> CASServices:
    settings = ctx.settings
    sealer = Sealer(settings.secret_key, SEAL_PURPOSE)
    tls = trust(settings.cas_proxy_ca_file)
    return CASServices(
        sealer=sealer,
        slo=SingleLogoutSender(ctx.store, ctx.events, sealer, verify=tls),
        tls=tls,
        ticket_ttl=settings.cas_ticket_ttl,
    )


def cas(ctx: Context) -> CASServices:
    """The CAS face's services in this app."""
    return ctx.faces[NAME]
