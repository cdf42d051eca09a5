"""The two faces of the relying party: :class:`OIDCClient` (sync) and :class:`AsyncOIDCClient`.

Both drive the same flows of :mod:`._core`; only the lines that send a request, wait and show a
device code differ. Nothing is ever retried: a code is single use (RFC 6749 section
4.1.2); the device flow's polling (RFC 8628 3.5) is the flow's own, not a retry.
"""

from __future__ import annotations

import asyncio
import inspect
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType
from typing import Any, TypeVar

import httpx

from ._core import ClientCore, Flow
from .authorization import AuthorizationRequest
from .device import DeviceAuthorization, ShowCode, Wait
from .discovery import ProviderMetadata
from .tokens import TokenSet

T = TypeVar("T")
DEFAULT_DEVICE_SCOPE = "openid profile"


def print_device_code(authorization: DeviceAuthorization) -> None:
    """The default way to show a device code: one line on standard error."""
    print(authorization.message(), file=sys.stderr, flush=True)


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
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._core = ClientCore(
            issuer=issuer,
            client_id=client_id,
            client_secret=client_secret,
            redirect_uri=redirect_uri,
            leeway=leeway,
            discovery_ttl=discovery_ttl,
            clock=clock,
        )
        self._timeout = httpx.Timeout(timeout)

    @property
    def issuer(self) -> str:
        """The canonical ASCII issuer every protocol check uses (campusid.issuer)."""
        return self._core.issuer

    @property
    def client_id(self) -> str:
        return self._core.client_id

    def __repr__(self) -> str:  # never shows the secret
        return f"{type(self).__name__}({self._core!r})"


class OIDCClient(_Base):
    """Synchronous relying party on ``httpx.Client``. Pass ``http`` to share a client (and its transport).

    ``clock`` and ``sleep`` are what the device flow counts and waits with (tests pass fakes)."""

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
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Any] = time.sleep,
    ) -> None:
        super().__init__(
            issuer,
            client_id,
            client_secret,
            redirect_uri,
            timeout=timeout,
            leeway=leeway,
            discovery_ttl=discovery_ttl,
            clock=clock,
        )
        self._owns_http = http is None
        self._http = http if http is not None else httpx.Client(timeout=timeout)
        self._sleep = sleep

    def _run(self, flow: Flow[T], on_code: Callable[[DeviceAuthorization], Any] = print_device_code) -> T:
        try:
            request = next(flow)
            while True:
                if isinstance(request, Wait):
                    self._sleep(request.seconds)
                    request = flow.send(None)
                    continue
                if isinstance(request, ShowCode):
                    on_code(request.authorization)
                    request = flow.send(None)
                    continue
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

    def logout_url(
        self,
        *,
        id_token_hint: str | None = None,
        post_logout_redirect_uri: str | None = None,
        state: str | None = None,
        ui_locales: str | None = None,
    ) -> str:
        """Where to send the browser to sign out at the provider (RP-Initiated Logout 1.0)."""
        return self._run(self._core.logout_url(id_token_hint, post_logout_redirect_uri, state, ui_locales))

    def validate_logout_token(self, logout_token: str) -> dict[str, Any]:
        """The claims of a back-channel logout token (Back-Channel Logout 1.0 2.6), or LogoutTokenError."""
        return self._run(self._core.validate_logout_token(logout_token))

    def refresh(self, refresh_token: str, scope: str | None = None) -> TokenSet:
        return self._run(self._core.refresh(refresh_token, scope))

    def revoke(self, token: str, token_type_hint: str | None = None) -> None:
        self._run(self._core.revoke(token, token_type_hint))

    def start_device_login(self, scope: str = DEFAULT_DEVICE_SCOPE) -> DeviceAuthorization:
        """RFC 8628: ask for a device code; show the person what the answer says, then call
        :meth:`wait_for_device_login` with it."""
        return self._run(self._core.start_device_login(scope))

    def wait_for_device_login(self, authorization: DeviceAuthorization) -> TokenSet:
        """Poll until the person allows (the tokens) or denies (:class:`DeviceAccessDeniedError`),
        or the code expires (:class:`DeviceCodeExpiredError`)."""
        return self._run(self._core.wait_for_device_login(authorization))

    def device_login(
        self,
        scope: str = DEFAULT_DEVICE_SCOPE,
        on_code: Callable[[DeviceAuthorization], Any] = print_device_code,
    ) -> TokenSet:
        """Sign in without a browser on this machine (RFC 8628): ``on_code`` is called once with
        the verification URI and user code to show the person (by default they are printed on
        standard error); returns the tokens once the person has allowed it on another device."""
        return self._run(self._core.device_login(scope), on_code)

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
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    ) -> None:
        super().__init__(
            issuer,
            client_id,
            client_secret,
            redirect_uri,
            timeout=timeout,
            leeway=leeway,
            discovery_ttl=discovery_ttl,
            clock=clock,
        )
        self._owns_http = http is None
        self._http = http if http is not None else httpx.AsyncClient(timeout=timeout)
        self._sleep = sleep

    async def _run(self, flow: Flow[T], on_code: Callable[[DeviceAuthorization], Any] = print_device_code) -> T:
        try:
            request = next(flow)
            while True:
                if isinstance(request, Wait):
                    await self._sleep(request.seconds)
                    request = flow.send(None)
                    continue
                if isinstance(request, ShowCode):
                    shown = on_code(request.authorization)
                    if inspect.isawaitable(shown):  # an async callback (a bot sending a message)
                        await shown
                    request = flow.send(None)
                    continue
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

    async def logout_url(
        self,
        *,
        id_token_hint: str | None = None,
        post_logout_redirect_uri: str | None = None,
        state: str | None = None,
        ui_locales: str | None = None,
    ) -> str:
        """Where to send the browser to sign out at the provider (RP-Initiated Logout 1.0)."""
        return await self._run(self._core.logout_url(id_token_hint, post_logout_redirect_uri, state, ui_locales))

    async def validate_logout_token(self, logout_token: str) -> dict[str, Any]:
        """The claims of a back-channel logout token (Back-Channel Logout 1.0 2.6), or LogoutTokenError."""
        return await self._run(self._core.validate_logout_token(logout_token))

    async def refresh(self, refresh_token: str, scope: str | None = None) -> TokenSet:
        return await self._run(self._core.refresh(refresh_token, scope))

    async def revoke(self, token: str, token_type_hint: str | None = None) -> None:
        await self._run(self._core.revoke(token, token_type_hint))

    async def start_device_login(self, scope: str = DEFAULT_DEVICE_SCOPE) -> DeviceAuthorization:
        return await self._run(self._core.start_device_login(scope))

    async def wait_for_device_login(self, authorization: DeviceAuthorization) -> TokenSet:
        return await self._run(self._core.wait_for_device_login(authorization))

    async def device_login(
        self,
        scope: str = DEFAULT_DEVICE_SCOPE,
        on_code: Callable[[DeviceAuthorization], Any] = print_device_code,
    ) -> TokenSet:
        """As :meth:`OIDCClient.device_login`; ``on_code`` may be a coroutine function."""
        return await self._run(self._core.device_login(scope), on_code)

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> AsyncOIDCClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
