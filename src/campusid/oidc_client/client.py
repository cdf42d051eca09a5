"""The two faces of the relying party: :class:`OIDCClient` (sync) and :class:`AsyncOIDCClient`.

Both drive the same flows of :mod:`._core`; only the line that sends a request differs.
Nothing is ever retried: a code is single use (SPEC 3, RFC 6749 section 4.1.2).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import TracebackType
from typing import Any, TypeVar

import httpx

from ._core import ClientCore, Flow
from .authorization import AuthorizationRequest
from .discovery import ProviderMetadata
from .tokens import TokenSet

T = TypeVar("T")


def _prepare(request: httpx.Request, timeout: httpx.Timeout) -> httpx.Request:
    # A request built outside a client carries no timeout; give it ours.
    request.extensions.setdefault("timeout", timeout.as_dict())
    return request


class _Base:
    def __init__(
        self,
        issuer: str,
        client_id: str,
        client_secret: str | None = None,
        redirect_uri: str | None = None,
        *,
        timeout: float = 10.0,
        leeway: float = 60,
        discovery_ttl: float = 3600,
    ) -> None:
        self._core = ClientCore(
            issuer=issuer,
            client_id=client_id,
            client_secret=client_secret,
            redirect_uri=redirect_uri,
            leeway=leeway,
            discovery_ttl=discovery_ttl,
        )
        self._timeout = httpx.Timeout(timeout)

    @property
    def issuer(self) -> str:
        """The canonical ASCII issuer every protocol check uses (SPEC 2.1)."""
        return self._core.issuer

    @property
    def client_id(self) -> str:
        return self._core.client_id

    def __repr__(self) -> str:  # never shows the secret
        return f"{type(self).__name__}({self._core!r})"


class OIDCClient(_Base):
    """Synchronous relying party on ``httpx.Client``. Pass ``http`` to share a client (and its transport)."""

    def __init__(
        self,
        issuer: str,
        client_id: str,
        client_secret: str | None = None,
        redirect_uri: str | None = None,
        http: httpx.Client | None = None,
        timeout: float = 10.0,
        leeway: float = 60,
        discovery_ttl: float = 3600,
    ) -> None:
        super().__init__(
            issuer,
            client_id,
            client_secret,
            redirect_uri,
            timeout=timeout,
            leeway=leeway,
            discovery_ttl=discovery_ttl,
        )
        self._owns_http = http is None
        self._http = http if http is not None else httpx.Client(timeout=timeout)

    def _run(self, flow: Flow[T]) -> T:
        try:
            request = next(flow)
            while True:
                try:
                    response = self._http.send(_prepare(request, self._timeout), follow_redirects=False)
                    response.read()
                except httpx.HTTPError as exc:
                    request = flow.throw(exc)
                else:
                    request = flow.send(response)
        except StopIteration as stop:
            return stop.value

    def discover(self) -> ProviderMetadata:
        return self._run(self._core.discover())

    def authorization_request(
        self, scope: str = "openid profile", redirect_uri: str | None = None, **extra_params: str
    ) -> AuthorizationRequest:
        return self._run(self._core.authorization_request(scope, redirect_uri, extra_params))

    def handle_callback(self, req: AuthorizationRequest, callback: str | Mapping[str, Any]) -> TokenSet:
        return self._run(self._core.handle_callback(req, callback))

    def exchange_code(self, req: AuthorizationRequest, code: str) -> TokenSet:
        return self._run(self._core.exchange_code(req, code))

    def validate_id_token(self, id_token: str, nonce: str | None = None, max_age: int | None = None) -> dict[str, Any]:
        return self._run(self._core.validate_id_token(id_token, nonce, max_age))

    def userinfo(self, access_token: str, *, expected_sub: str | None = None) -> dict[str, Any]:
        return self._run(self._core.userinfo(access_token, expected_sub))

    def refresh(self, refresh_token: str, scope: str | None = None) -> TokenSet:
        return self._run(self._core.refresh(refresh_token, scope))

    def revoke(self, token: str, token_type_hint: str | None = None) -> None:
        self._run(self._core.revoke(token, token_type_hint))

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> OIDCClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class AsyncOIDCClient(_Base):
    """Asynchronous relying party on ``httpx.AsyncClient``; the same methods, as coroutines."""

    def __init__(
        self,
        issuer: str,
        client_id: str,
        client_secret: str | None = None,
        redirect_uri: str | None = None,
        http: httpx.AsyncClient | None = None,
        timeout: float = 10.0,
        leeway: float = 60,
        discovery_ttl: float = 3600,
    ) -> None:
        super().__init__(
            issuer,
            client_id,
            client_secret,
            redirect_uri,
            timeout=timeout,
            leeway=leeway,
            discovery_ttl=discovery_ttl,
        )
        self._owns_http = http is None
        self._http = http if http is not None else httpx.AsyncClient(timeout=timeout)

    async def _run(self, flow: Flow[T]) -> T:
        try:
            request = next(flow)
            while True:
                try:
                    response = await self._http.send(_prepare(request, self._timeout), follow_redirects=False)
                    await response.aread()
                except httpx.HTTPError as exc:
                    request = flow.throw(exc)
                else:
                    request = flow.send(response)
        except StopIteration as stop:
            return stop.value

    async def discover(self) -> ProviderMetadata:
        return await self._run(self._core.discover())

    async def authorization_request(
        self, scope: str = "openid profile", redirect_uri: str | None = None, **extra_params: str
    ) -> AuthorizationRequest:
        return await self._run(self._core.authorization_request(scope, redirect_uri, extra_params))

    async def handle_callback(self, req: AuthorizationRequest, callback: str | Mapping[str, Any]) -> TokenSet:
        return await self._run(self._core.handle_callback(req, callback))

    async def exchange_code(self, req: AuthorizationRequest, code: str) -> TokenSet:
        return await self._run(self._core.exchange_code(req, code))

    async def validate_id_token(
        self, id_token: str, nonce: str | None = None, max_age: int | None = None
    ) -> dict[str, Any]:
        return await self._run(self._core.validate_id_token(id_token, nonce, max_age))

    async def userinfo(self, access_token: str, *, expected_sub: str | None = None) -> dict[str, Any]:
        return await self._run(self._core.userinfo(access_token, expected_sub))

    async def refresh(self, refresh_token: str, scope: str | None = None) -> TokenSet:
        return await self._run(self._core.refresh(refresh_token, scope))

    async def revoke(self, token: str, token_type_hint: str | None = None) -> None:
        await self._run(self._core.revoke(token, token_type_hint))

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> AsyncOIDCClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
