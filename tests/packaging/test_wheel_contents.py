"""The built wheel holds every file under src/campusid that git tracks, and nothing else: the code
opens templates, static files, Alembic migrations, the demo grades and the bridge's resources at run
time, so a file left out of the package data is a product that fails once installed (the editable
install the rest of the suite runs on cannot notice)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from .conftest import tracked_package_files

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def wheel_package_files(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        return {name for name in archive.namelist() if not name.endswith("/") and ".dist-info/" not in name}


def test_wheel_holds_every_tracked_file_under_src_campusid(wheel: Path) -> None:
    tracked = tracked_package_files()
    assert "campusid/records/demo_grades.csv" in tracked, "git ls-files did not list the package"
    missing = sorted(tracked - wheel_package_files(wheel))
    assert not missing, f"{wheel.name} lacks files the installed product opens: {missing}"


def test_wheel_holds_the_compiled_catalogues(wheel: Path) -> None:
    files = wheel_package_files(wheel)
    for locale in ("en", "zh_CN"):
        for suffix in ("mo", "po"):
            assert f"campusid/i18n/locale/{locale}/LC_MESSAGES/campusid.{suffix}" in files


def test_wheel_holds_nothing_git_does_not_track(wheel: Path) -> None:
    # The wheel is built from a copy with bytecode caches in it (see conftest), as an operator's
    # checkout that has run the code would be.
    extra = sorted(wheel_package_files(wheel) - tracked_package_files())
    assert not extra, f"{wheel.name} ships files that are not part of the source: {extra}"


def test_wheel_installs_both_commands(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        (entry_points,) = (n for n in archive.namelist() if n.endswith(".dist-info/entry_points.txt"))
        text = archive.read(entry_points).decode()
    assert "campusid = campusid.cli:main" in text
    assert "campusid-desktop = campusid.desktop.cli:main" in text
