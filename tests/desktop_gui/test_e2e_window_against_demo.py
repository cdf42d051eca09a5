"""End to end with a real ``campusid demo`` process: the real window signs alice in through the
BROWSER script (the IdP's own login and consent pages), syncs, shows her grades and GPA, lists a
script's bridge calls, and signs out."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from tests.conftest import Server, start_server

from .conftest import BRIDGE_TOKEN

pytestmark = pytest.mark.e2e

DEMO_GRADES = Path(__file__).parents[2] / "src" / "campusid" / "records" / "demo_grades.csv"


@pytest.fixture
def demo(idp_env: dict[str, str]) -> Iterator[tuple[Server, dict]]:
    server = start_server(idp_env, "--json", command="demo")
    try:
        info = json.loads(server.proc.stdout.readline())
        yield server, info
    finally:
        server.stop()


def expected_gpa(student_number: str) -> tuple[str, dict[str, str]]:
    """Alice's GPA worked out from the demo CSV with exact fractions, rounded half up to 2 places."""
    rows = [r for r in csv.DictReader(DEMO_GRADES.open(encoding="utf-8")) if r["student_number"] == student_number]

    def two_places(value: Fraction) -> str:
        exact = Decimal(value.numerator) / Decimal(value.denominator)
        return str(exact.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))

    def gpa(selected: list[dict[str, str]]) -> str:
        credits = sum(Fraction(r["credits"]) for r in selected)
        return two_places(sum(Fraction(r["credits"]) * Fraction(r["grade_point"]) for r in selected) / credits)

    terms = {r["term"] for r in rows}
    return gpa(rows), {t: gpa([r for r in rows if r["term"] == t]) for t in terms}


def bridge_call_from_script(url: str, token: str) -> int:
    """A separate process, as a script or chat bot would be: GET /status with the bridge token."""
    script = (
        "import os, sys, httpx\n"
        "r = httpx.get(sys.argv[1] + '/status', headers={'Authorization': 'Bearer ' + os.environ['T']})\n"
        "print(r.status_code)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, url], env={"T": token}, capture_output=True, text=True, timeout=30
    )
    return int(done.stdout.strip())


def window_texts(window) -> str:
    from PySide6.QtWidgets import QLabel

    labels = " ".join(label.text() for label in window.findChildren(QLabel))
    cells = json.dumps(window.sorted_grades() + window.calls_shown())
    return labels + cells + window.statusBar().currentMessage()


def test_sign_in_sync_grades_gpa_bridge_calls_and_sign_out(qtbot, demo, make_app, login_browser) -> None:
    server, info = demo
    alice = next(u for u in info["users"] if u["username"] == "alice")
    native = next(c for c in info["clients"] if c["type"] == "native")
    assert native["client_id"] == "campusid-desktop"
    login_browser(alice["username"], alice["password"])
    app = make_app(server.issuer)
    window = app.window

    # Signed out: the bridge runs, nothing personal is shown, Sync is not possible yet.
    assert window.user_label.text() == "Not signed in"
    assert window.bridge_status_label.text() == f"Running at {app.bridge.address}"
    assert not window.sync_button.isEnabled()

    qtbot.mouseClick(window.sign_in_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.user_label.text() == f"Signed in as {alice['name']}", timeout=20_000)
    assert window.banner.isHidden(), window.message_label.text()
    assert window.sign_out_button.isVisible() and not window.sign_in_button.isVisible()

    qtbot.mouseClick(window.sync_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.grades_model.rowCount() == 5, timeout=15_000)
    qtbot.waitUntil(lambda: window.sync_progress.isHidden())
    assert (
        window.last_sync_label.text().startswith("Last synced ")
        and str(datetime.now().year) in window.last_sync_label.text()
    )

    overall, per_term = expected_gpa(alice["student_number"])
    assert window.gpa_overall_label.text() == overall
    assert window.term_gpa_text() == per_term

    # The table sorts by value: scores descending, then credits ascending.
    window.grades_view.sortByColumn(4, Qt.SortOrder.DescendingOrder)
    scores = [row[4] for row in window.sorted_grades()]
    assert scores == sorted(scores, key=float, reverse=True) and scores[0] == "95"
    window.grades_view.sortByColumn(3, Qt.SortOrder.AscendingOrder)
    assert [row[0] for row in window.sorted_grades()][0] == "EN101"

    # A script calls the bridge; the panel lists it (and a refused call), never the token.
    assert bridge_call_from_script(app.bridge.address, BRIDGE_TOKEN) == 200
    assert bridge_call_from_script(app.bridge.address, "x" * 40) == 401
    qtbot.waitUntil(lambda: len(window.calls_shown()) >= 2, timeout=5_000)
    shown = [row[1:] for row in window.calls_shown()]
    assert shown[:2] == [["GET", "/status", "401 refused"], ["GET", "/status", "200 OK"]]

    session = app.core.session.current
    texts = window_texts(window)
    for secret in (BRIDGE_TOKEN, session.access_token, session.refresh_token):
        assert secret and secret not in texts

    qtbot.mouseClick(window.sign_out_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.user_label.text() == "Not signed in", timeout=10_000)
    qtbot.waitUntil(lambda: window.grades_model.rowCount() == 0)
    assert window.sign_in_button.isVisible() and not window.sync_button.isEnabled()
    assert window.gpa_overall_label.text() == "\u2013"
    assert app.core.session.current is None
