"""Chat-bot commands over the campusid desktop bridge, as plain async functions.

No bot framework is imported: ``handle_command(text, client, notify)`` takes the message text and
returns the reply text, so it drops into any framework's message handler (see README.md);
``notify`` sends a later message to the same chat (how a /login ended).

The bot runs where nobody has a browser (a server, a container): /login signs its owner in with
the device authorization grant (RFC 8628) — the bot tells them a code, they enter it on their phone.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable

from campusid.bridge_client import (
    AsyncBridgeClient,
    BridgeError,
    BridgeUnavailable,
    Grade,
    GradeReport,
    InsufficientScope,
    LoginFailed,
    LoginInProgress,
    LoginTimeout,
    NotLoggedIn,
    RateLimited,
    Unauthorized,
    UpstreamUnavailable,
)

HELP = "Commands: /login (sign in with a code), /grades (cached grades and GPA), /sync (fetch the latest grades), /help"
Notify = Callable[[str], Awaitable[object]]
_background: set[asyncio.Task] = set()  # follow-ups in flight (kept, so they are not collected early)


def weighted_gpa(grades: Iterable[Grade]) -> float | None:
    """Credit-weighted mean of the grade points; courses without credits or a grade point are left out."""
    total_credits = 0.0
    total_points = 0.0
    for grade in grades:
        if grade.grade_point is None or not grade.credits:
            continue
        total_credits += float(grade.credits)
        total_points += float(grade.credits) * float(grade.grade_point)
    return round(total_points / total_credits, 2) if total_credits else None


def format_report(report: GradeReport) -> str:
    if not report.grades:
        return "No grades cached yet. Send /sync to fetch them."
    lines = [f"{len(report.grades)} course(s):"]
    for g in report.grades:
        point = "-" if g.grade_point is None else f"{g.grade_point:.1f}"
        score = "-" if g.score is None else f"{g.score:g}"
        lines.append(f"• {g.course_code} {g.course_name} ({g.term}, {g.credits:g} cr): {score} → {point}")
    gpa = weighted_gpa(report.grades)
    credits = sum(float(g.credits or 0) for g in report.grades)
    lines.append(f"GPA (credit-weighted): {gpa:.2f} over {credits:g} credits" if gpa is not None else "GPA: n/a")
    if report.synced_at is not None:
        lines.append(f"Last synced: {report.synced_at:%Y-%m-%d %H:%M} UTC")
    return "\n".join(lines)


def explain(error: BridgeError) -> str:
    """A reply a person understands, for each kind of bridge failure."""
    if isinstance(error, NotLoggedIn):
        return "Not signed in. Send /login, enter the code it shows on your phone or computer, then /sync."
    if isinstance(error, LoginTimeout):
        return "Nobody entered the code in time. Send /login for a new one."
    if isinstance(error, LoginFailed):
        return "The sign-in was denied or refused. Send /login to start again."
    if isinstance(error, LoginInProgress):
        return "A sign-in is already waiting for its code to be entered."
    if isinstance(error, RateLimited):
        wait = f" in about {int(error.retry_after)} s" if error.retry_after else " later"
        return f"The sign-in service is busy; try again{wait}."
    if isinstance(error, InsufficientScope):
        return "The desktop session may not read grades; sign in again and allow grade access."
    if isinstance(error, Unauthorized):
        return "The bot's bridge token is wrong; check APP_BRIDGE_TOKEN."
    if isinstance(error, BridgeUnavailable):
        return "The campusid desktop app is not running."
    if isinstance(error, UpstreamUnavailable):
        return "The university's servers are unreachable right now; /grades still shows the cached grades."
    return f"Something went wrong ({error.code})."


async def grades_command(client: AsyncBridgeClient) -> str:
    """/grades: the cached grades, without contacting the university (cheap; safe to call often)."""
    return format_report(await client.grades())


async def sync_command(client: AsyncBridgeClient) -> str:
    """/sync: fetch the latest grades into the cache (never starts a sign-in by itself)."""
    report = await client.sync_grades()
    return f"Synced {len(report.grades)} course(s).\n" + format_report(report)


async def finish_login(client: AsyncBridgeClient) -> str:
    """How the pending sign-in ended, as a message for the owner."""
    try:
        result = await client.wait_for_login()
    except BridgeError as error:
        return explain(error)
    return f"Signed in as {result.user_name or 'you'}. Send /sync to fetch your grades."


async def login_command(client: AsyncBridgeClient, notify: Notify | None = None) -> str:
    """/login: the session when there is one; otherwise the code the owner enters on their phone
    or computer (the reply), and, with ``notify``, a follow-up message once they have decided."""
    started = await client.device_login()
    if not started.pending or started.device is None:
        return f"Already signed in as {started.user_name or 'you'}."
    if notify is not None:

        async def follow_up() -> None:
            await notify(await finish_login(client))

        task = asyncio.create_task(follow_up())
        _background.add(task)
        task.add_done_callback(_background.discard)
    return started.device.message() + " Only enter it if you asked me to sign in."


COMMANDS = {"/grades": grades_command, "/sync": sync_command}


async def handle_command(text: str, client: AsyncBridgeClient, notify: Notify | None = None) -> str | None:
    """Reply to one message; ``None`` when the message is not a command of this bot."""
    word = text.strip().split(maxsplit=1)[0].split("@", 1)[0].lower() if text.strip() else ""
    if word == "/help":
        return HELP
    try:
        if word == "/login":
            return await login_command(client, notify)
        command = COMMANDS.get(word)
        if command is None:
            return None
        return await command(client)
    except BridgeError as error:
        return explain(error)
