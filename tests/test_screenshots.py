"""The browser tests write their screenshots into the checkout only when asked."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.screenshots import DOCS_SCREENSHOTS, UPDATE_VARIABLE, screenshot_dir


def test_by_default_screenshots_go_to_the_tests_tmp_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(UPDATE_VARIABLE, raising=False)
    assert screenshot_dir(tmp_path) == tmp_path / "screenshots"
    monkeypatch.setenv(UPDATE_VARIABLE, "0")
    assert screenshot_dir(tmp_path) == tmp_path / "screenshots"


def test_with_the_variable_set_they_update_docs_screenshots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(UPDATE_VARIABLE, "1")
    assert screenshot_dir(tmp_path) == DOCS_SCREENSHOTS
    assert (DOCS_SCREENSHOTS / "admin-console.png").is_file()  # the folder the README shows
