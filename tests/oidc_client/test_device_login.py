"""`device_login()` (RFC 8628), sync and async, against campusid's own IdP in process. The client's
`sleep` moves the IdP's clock by what it was asked to wait, so the polling pace, slow_down and
expiry run on one controlled clock, never slept."""

from __future__ import annotations

import re

import httpx
import pytest
from starlette.testclient import TestClient

from campusid.oidc_client import (
    AsyncOIDCClient,
    DeviceAccessDeniedError,
    DeviceAuthorization,
    DeviceCodeExpiredError,
    OIDCClient,
    TokenEndpointError,
)
from tests.idp.conftest import ISSUER, IdP
from tests.idp.device_helpers import decide, device_app
from tests.idp.helpers import Clock


class World:
    """One IdP, its clock, a person's browser and a record of the device's waits."""

    def __init__(self, idp_env: dict) -> None:
        self.idp = IdP({**idp_env, "CAMPUSID_ISSUER": ISSUER})
        self.clock = self.idp.ctx.clock = Clock()
        device_app(self.idp, "bot")
        self.person = TestClient(self.idp.app, base_url=ISSUER, follow_redirects=False)
        self.waits: list[float] = []
        self.on_wait = None  # called with the wait's index before the clock moves

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        if self.on_wait is not None:
            self.on_wait(len(self.waits))
        self.clock.advance(seconds)

    async def async_sleep(self, seconds: float) -> None:
        self.sleep(seconds)

    def client(self, **kw) -> OIDCClient:
        http = TestClient(self.idp.app, base_url=ISSUER, follow_redirects=False)
        return OIDCClient(ISSUER, "bot", http=http, clock=self.clock, sleep=self.sleep, **kw)

    def approve(self, authorization: DeviceAuthorization, decision: str = "allow") -> None:
        outcome = decide(self.person, ISSUER, authorization.user_code, decision=decision)
        assert f'data-outcome="{"allowed" if decision == "allow" else "denied"}"' in outcome.text


@pytest.fixture
def world(idp_env):
    w = World(idp_env)
    yield w
    w.person.close()
    w.idp.store.close()


def test_device_login_shows_the_code_polls_at_the_interval_and_returns_verified_tokens(world):
    shown: list[DeviceAuthorization] = []
    world.on_wait = lambda n: world.approve(shown[0]) if n == 3 else None  # decided during the 3rd wait
    tokens = world.client().device_login(on_code=shown.append)
    assert len(shown) == 1 and shown[0].verification_uri == f"{ISSUER}/device"
    assert shown[0].user_code in shown[0].verification_uri_complete
    assert "enter the code " + shown[0].user_code in shown[0].message()
    assert "device_code" not in repr(shown[0]) and shown[0].device_code not in repr(shown[0])
    assert world.waits == [5, 5, 5]  # polled after each interval: pending, pending, tokens
    assert tokens.id_claims["iss"] == ISSUER and tokens.id_claims["aud"] == "bot" and tokens.id_claims["sub"]
    assert "nonce" not in tokens.id_claims and tokens.refresh_token and tokens.scope == "openid profile"


def test_device_login_prints_the_code_by_default(world, capsys):
    def person_reads_the_terminal(n: int) -> None:
        if n == 1:
            printed = capsys.readouterr().err
            code = re.search(r"enter the code ([A-Z]{4}-[A-Z]{4})", printed).group(1)
            assert f"open {ISSUER}/device " in printed
            world.approve(DeviceAuthorization(f"{ISSUER}/device", code, None, 5))

    world.on_wait = person_reads_the_terminal
    assert world.client().device_login().id_claims["aud"] == "bot"


def test_the_two_steps_apart_return_the_code_then_the_tokens(world):
    client = world.client()
    authorization = client.start_device_login("openid")
    assert authorization.interval == 5 and authorization.scope == "openid"
    assert (authorization.expires_at.timestamp() - world.clock()) == pytest.approx(600)
    world.on_wait = lambda n: world.approve(authorization)
    assert client.wait_for_device_login(authorization).scope == "openid"


def test_slow_down_makes_the_device_wait_5_seconds_longer_from_then_on(world):
    shown: list[DeviceAuthorization] = []

    def on_wait(n: int) -> None:
        if n == 2:
            world.clock.advance(-1)  # the second wait comes out a second short: the IdP says slow_down
        if n == 3:
            world.approve(shown[0])

    world.on_wait = on_wait
    tokens = world.client().device_login(on_code=shown.append)
    assert world.waits == [5, 5, 10] and tokens.access_token


def test_a_denial_is_a_typed_error(world):
    client = world.client()
    with pytest.raises(DeviceAccessDeniedError) as denied:
        client.device_login(on_code=lambda auth: world.approve(auth, "deny"))
    assert denied.value.error == "access_denied" and isinstance(denied.value, TokenEndpointError)


def test_the_device_stops_polling_when_the_code_expires(world):
    with pytest.raises(DeviceCodeExpiredError) as expired:
        world.client().device_login(on_code=lambda auth: None)
    assert expired.value.error == "expired_token" and expired.value.status is None  # stopped by itself
    assert sum(world.waits) == pytest.approx(600) and len(world.waits) == 120
    assert all(w == 5 for w in world.waits[:-1])


def test_the_providers_expired_token_is_a_typed_error_too(world):
    client = OIDCClient(
        ISSUER, "bot", http=TestClient(world.idp.app, base_url=ISSUER), sleep=lambda s: world.clock.advance(700)
    )  # the client's own clock says there is time; the provider's does not
    with pytest.raises(DeviceCodeExpiredError) as expired:
        client.device_login(on_code=lambda auth: None)
    assert expired.value.status == 400


def test_an_unreachable_provider_doubles_the_wait_until_it_answers(world):
    real = TestClient(world.idp.app, base_url=ISSUER, follow_redirects=False)
    failures = {"left": 3}
    shown: list[DeviceAuthorization] = []

    class Flaky(httpx.BaseTransport):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            if request.url.path == "/oauth/token" and failures["left"]:
                failures["left"] -= 1
                raise httpx.ConnectError("connection refused", request=request)
            return real._transport.handle_request(request)

    world.on_wait = lambda n: world.approve(shown[0]) if n == 5 else None
    client = OIDCClient(ISSUER, "bot", http=httpx.Client(transport=Flaky()), clock=world.clock, sleep=world.sleep)
    assert client.device_login(on_code=shown.append).access_token
    assert world.waits == [5, 10, 20, 40, 5]


def test_an_app_without_the_grant_gets_the_providers_error(world):
    device_app(world.idp, "plain", granted=False)
    client = OIDCClient(ISSUER, "plain", http=TestClient(world.idp.app, base_url=ISSUER))
    with pytest.raises(TokenEndpointError) as refused:
        client.device_login(on_code=lambda auth: None)
    assert refused.value.error == "unauthorized_client" and refused.value.status == 400


async def test_async_device_login_with_an_async_callback(world):
    shown: list[DeviceAuthorization] = []

    async def tell_the_owner(auth: DeviceAuthorization) -> None:  # a bot sends a chat message here
        shown.append(auth)

    world.on_wait = lambda n: world.approve(shown[0]) if n == 2 else None
    transport = httpx.ASGITransport(app=world.idp.app)
    async with AsyncOIDCClient(
        ISSUER, "bot", http=httpx.AsyncClient(transport=transport), clock=world.clock, sleep=world.async_sleep
    ) as client:
        tokens = await client.device_login(scope="openid", on_code=tell_the_owner)
    assert len(shown) == 1 and world.waits == [5, 5]
    assert tokens.id_claims["aud"] == "bot" and tokens.scope == "openid"
