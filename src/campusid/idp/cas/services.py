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
CALLBACK_TIMEOUT = 5.0  # seconds for a whole proxy callback (docs/cas.md)


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
    ca_file: str | None
    ticket_ttl: int
    _callbacks: dict = field(default_factory=dict)
    _tls: ssl.SSLContext | None = None

    def tls(self) -> ssl.SSLContext:
        """The TLS trust of proxy callbacks and single logout, made at its first use (loading the
        system's CA bundle costs each worker memory that a campus without proxies never needs)."""
        if self._tls is None:
            self._tls = trust(self.ca_file)
        return self._tls

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
                verify=self.tls(),
            )
        return client

    async def close(self) -> None:
        for client in list(self._callbacks.values()):
            await client.aclose()
        self._callbacks.clear()


def build(ctx: Context) -> CASServices:
    settings = ctx.settings
    sealer = Sealer(settings.secret_key, SEAL_PURPOSE)
    services = CASServices(
        sealer=sealer,
        slo=SingleLogoutSender(ctx.store, ctx.events, sealer),
        ca_file=settings.cas_proxy_ca_file,
        ticket_ttl=settings.cas_ticket_ttl,
    )
    services.slo.trust(services.tls)  # made at the first single logout POST
    return services


def cas(ctx: Context) -> CASServices:
    """The CAS face's services in this app."""
    return ctx.faces[NAME]
