"""LoopbackReceiver over real HTTP on 127.0.0.1 (RFC 8252 sections 7.3 and 8.3)."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from campusid.oidc_client import LoginTimeoutError, LoopbackReceiver


def _get(url: str, **params: str) -> httpx.Response:
    return httpx.get(url, params=params, timeout=10)


def test_binds_loopback_on_a_random_port() -> None:
    with LoopbackReceiver() as receiver:
        assert receiver.redirect_uri == f"http://127.0.0.1:{receiver.port}/callback"
        assert receiver.port > 0
        assert receiver._server.server_address[0] == "127.0.0.1"
    with LoopbackReceiver(path="/cb") as a, LoopbackReceiver(path="/cb") as b:
        assert a.port != b.port and a.redirect_uri.endswith("/cb")


@pytest.mark.parametrize("host", ["0.0.0.0", "localhost", "192.168.1.10", "::1"])
def test_refuses_non_loopback_or_non_literal_hosts(host: str) -> None:
    with pytest.raises(ValueError):
        LoopbackReceiver(host=host)


def test_wrong_path_404_wrong_state_400_then_valid_callback_closes() -> None:
    with LoopbackReceiver(timeout=30) as receiver, ThreadPoolExecutor(1) as pool:
        base = f"http://127.0.0.1:{receiver.port}"
        waiting = pool.submit(receiver.wait, "the-state")

        assert _get(f"{base}/favicon.ico").status_code == 404
        assert _get(f"{base}/other", code="c", state="the-state").status_code == 404
        assert httpx.post(receiver.redirect_uri, timeout=10).status_code == 405

        wrong = _get(receiver.redirect_uri, code="c", state="forged")
        assert wrong.status_code == 400 and "does not belong" in wrong.text
        missing = _get(receiver.redirect_uri, code="c")
        assert missing.status_code == 400
        dup = httpx.get(f"{receiver.redirect_uri}?code=a&code=b&state=the-state", timeout=10)
        assert dup.status_code == 400
        assert not waiting.done()  # still waiting after the bad callbacks

        ok = _get(receiver.redirect_uri, code="the-code", state="the-state", iss="https://idp.example")
        assert ok.status_code == 200 and "You can close this window" in ok.text
        assert ok.headers["Cache-Control"] == "no-store"
        assert waiting.result(timeout=10) == {"code": "the-code", "state": "the-state", "iss": "https://idp.example"}

        assert receiver.closed
        with pytest.raises(httpx.ConnectError):
            _get(receiver.redirect_uri, code="again", state="the-state")


def test_callback_before_wait_is_held_until_the_state_is_known() -> None:
    with LoopbackReceiver(timeout=30) as receiver, ThreadPoolExecutor(1) as pool:
        browser = pool.submit(_get, receiver.redirect_uri, code="c", state="s")
        assert receiver.wait("s") == {"code": "c", "state": "s"}
        assert browser.result(timeout=10).status_code == 200


def test_error_response_with_the_right_state_is_returned() -> None:
    with LoopbackReceiver(timeout=30) as receiver, ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(receiver.wait, "s")
        page = _get(receiver.redirect_uri, error="access_denied", state="s")
        assert page.status_code == 200 and "not completed" in page.text
        assert waiting.result(timeout=10)["error"] == "access_denied"


def test_timeout_raises_and_closes() -> None:
    receiver = LoopbackReceiver(timeout=0.2)
    with pytest.raises(LoginTimeoutError):
        receiver.wait("s")
    assert receiver.closed
    with pytest.raises(httpx.ConnectError):
        _get(receiver.redirect_uri, code="c", state="s")


def test_context_exit_closes_the_port() -> None:
    with LoopbackReceiver() as receiver:
        uri = receiver.redirect_uri
    assert receiver.closed
    with pytest.raises(httpx.ConnectError):
        _get(uri)


async def test_wait_async() -> None:
    with LoopbackReceiver(timeout=30) as receiver:
        page, params = await asyncio.gather(
            asyncio.to_thread(_get, receiver.redirect_uri, code="c", state="s"), receiver.wait_async("s")
        )
    assert page.status_code == 200 and params == {"code": "c", "state": "s"}


async def test_cancelling_wait_async_closes_the_receiver() -> None:
    receiver = LoopbackReceiver(timeout=30)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(receiver.wait_async("s"), timeout=0.1)  # cancels the waiting coroutine
    assert receiver.closed
