"""The example chat bot: its formatting and GPA on their own, and its commands end to end against a
real bridge (fake IdP and records API behind it)."""

from __future__ import annotations

import sys
from pathlib import Path

from campusid.bridge_client import AsyncBridgeClient, Grade, GradeReport, RateLimited
from tests.desktop.harness import BRIDGE_TOKEN, Bridge

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, for examples/
from examples.chat_bot.bot import explain, format_report, handle_command, weighted_gpa  # noqa: E402


def test_weighted_gpa_weights_by_credits() -> None:
    grades = [
        Grade("A", credits=5, grade_point=4.0),
        Grade("B", credits=3, grade_point=3.0),
        Grade("C", credits=2, grade_point=2.0),
        Grade("D", credits=0, grade_point=1.0),
        Grade("E", credits=4, grade_point=None),
    ]
    assert weighted_gpa(grades) == 3.3  # (20 + 9 + 4) / 10
    assert weighted_gpa([]) is None


def test_format_report_lists_courses_and_gpa() -> None:
    text = format_report(GradeReport([Grade("CS101", "Programming I", "2025-fall", 5, 91, 4.0)], None))
    assert "CS101 Programming I" in text and "GPA (credit-weighted): 4.00 over 5 credits" in text
    assert "No grades cached" in format_report(GradeReport([], None))


def test_rate_limit_reply_says_when() -> None:
    assert "30 s" in explain(RateLimited("rate_limited", "busy", 429, 30))


async def test_commands_against_a_real_bridge(bridge: Bridge) -> None:
    async with AsyncBridgeClient(bridge.url, BRIDGE_TOKEN) as client:
        assert "Not signed in" in await handle_command("/sync", client)
        await client.login()
        synced = await handle_command("/sync", client)
        assert synced.startswith("Synced 3 course(s).")
        grades = await handle_command("/grades@campus_bot", client)
        assert "GPA (credit-weighted): 3.30 over 10 credits" in grades
        assert "MA102 Linear Algebra" in grades
        assert await handle_command("hello", client) is None
        assert "/sync" in await handle_command("/help", client)
