"""Where the browser tests save their screenshots.

A test run must leave the checkout as it was, so by default a screenshot goes to the test's own tmp
dir. ``CAMPUSID_UPDATE_SCREENSHOTS=1`` sends it to docs/screenshots/, the README's pictures:
run the browser tests that way when a page changed and commit the new pictures.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

DOCS_SCREENSHOTS = Path(__file__).resolve().parents[1] / "docs" / "screenshots"
UPDATE_VARIABLE = "CAMPUSID_UPDATE_SCREENSHOTS"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def screenshot_dir(tmp_path: Path) -> Path:
    if os.environ.get(UPDATE_VARIABLE) == "1":
        return DOCS_SCREENSHOTS
    return tmp_path / "screenshots"


def save_screenshot(page: Any, name: str, tmp_path: Path) -> Path:
    """Save a full-page screenshot of a Playwright page as ``name``; returns where it went."""
    folder = screenshot_dir(tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    page.screenshot(path=str(path), full_page=True)
    assert path.read_bytes().startswith(PNG_SIGNATURE), f"{path} is not a PNG"
    return path
