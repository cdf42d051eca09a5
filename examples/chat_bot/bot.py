"""Chat-bot commands over the campusid desktop bridge, as plain async functions.

No bot framework is imported: ``handle_command(text, client)`` takes the message text and returns
the reply text, so it drops into any framework's message handler (see README.md).
"""

from __future__ import annotations

from collections.abc import Iterable

from campusid.bridge_client import (
    AsyncBridgeClient,
    BridgeError,
    BridgeUnavailable,
    Grade,
    GradeReport,
    InsufficientScope,
    NotLoggedIn,
    RateLimited,
    Unauthorized,
    UpstreamUnavailable,
)

HELP = "Commands: /grades (cached grades and GPA), /sync (fetch the latest grades), /help"


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
        return "Not signed in on the desktop app. Sign in there (or call login()), then /sync."
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


COMMANDS = {"/grades": grades_command, "/sync": sync_command}


async def handle_command(text: str, client: AsyncBridgeClient) -> str | None:
    """Reply to one message; ``None`` when the message is not a command of this bot."""
    word = text.strip().split(maxsplit=1)[0].split("@", 1)[0].lower() if text.strip() else ""
    if word == "/help":
        return HELP
    command = COMMANDS.get(word)
    if command is None:
        return None
    try:
        return await command(client)
    except BridgeError as error:
        return explain(error)
