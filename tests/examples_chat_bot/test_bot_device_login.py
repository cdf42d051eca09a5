"""The example bot signs its owner in without a browser on its machine: /login replies with the
code (RFC 8628), the owner enters it on /device, and a follow-up message says who is signed in.
Against the real bridge, desktop core and campusid's own IdP (one real 5-second polling interval)."""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path

import pytest

from campusid.bridge_client import AsyncBridgeClient
from tests.desktop.harness import BRIDGE_TOKEN, Bridge
from tests.desktop.real_idp import ServedIdP

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, for examples/
from examples.chat_bot.bot import handle_command  # noqa: E402

pytestmark = pytest.mark.slow


async def test_login_tells_the_owner_the_code_and_then_who_signed_in(device_bridge: Bridge, served_idp: ServedIdP):
    sent: list[str] = []
    follow_up = asyncio.Event()

    async def notify(text: str) -> None:
        sent.append(text)
        follow_up.set()

    async with AsyncBridgeClient(device_bridge.url, BRIDGE_TOKEN) as client:
        assert "Send /login" in await handle_command("/sync", client)
        reply = await handle_command("/login", client, notify)
        code = re.search(r"enter the code ([A-Z]{4}-[A-Z]{4})", reply).group(1)
        assert f"open {served_idp.issuer}/device" in reply and "Only enter it if you asked" in reply
        assert "already waiting" in await handle_command("/login", client)
        await asyncio.to_thread(served_idp.decide, code)
        await asyncio.wait_for(follow_up.wait(), 30)
        assert sent == ["Signed in as Alice Zhang. Send /sync to fetch your grades."]
        assert (await handle_command("/sync", client)).startswith("Synced 0 course(s).")
        assert await handle_command("/login", client) == "Already signed in as Alice Zhang."
