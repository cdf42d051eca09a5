"""The product as an operator installs it: a wheel built the way `pip install .` builds one.

The wheel is built once per test run (under pytest-xdist the workers share it through a lock) from a
clean copy of the files git tracks, so a `build/` directory left in the checkout by an earlier build
cannot put back a file the package configuration leaves out. The copy also gets the bytecode caches
that a checkout which has run the code contains, as an operator's would."""

from __future__ import annotations

import compileall
import fcntl
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_DIR = "src/campusid/"


def git_tracked() -> list[str]:
    """Paths (relative to the checkout) of the files git tracks that exist in the work tree."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed: the files git tracks are what the wheel is checked against")
    result = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=False)
    if result.returncode != 0:
        pytest.skip(f"{ROOT} is not a git checkout: {result.stderr.decode().strip()}")
    return [path for path in result.stdout.decode().split("\0") if path and (ROOT / path).is_file()]


def tracked_package_files() -> set[str]:
    """Every file git tracks under src/campusid, as its path inside the wheel (campusid/...)."""
    return {path.removeprefix("src/") for path in git_tracked() if path.startswith(PACKAGE_DIR)}


@contextmanager
def _run_wide_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.getbasetemp()
    # Each xdist worker has its own base directory inside the one this test run created.
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def _clean_copy(dest: Path) -> None:
    """The project's top-level files and src/, as git tracks them (with any uncommitted edits)."""
    for path in git_tracked():
        if "/" not in path or path.startswith("src/"):
            target = dest / path
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / path, target)
    assert compileall.compile_dir(dest / "src", quiet=1), "the sources do not compile"


def build_wheel(workdir: Path) -> Path:
    source = workdir / "source"
    _clean_copy(source)
    dist = workdir / "dist"
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--quiet", "-w", str(dist)],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, f"pip wheel failed:\n{result.stdout}\n{result.stderr}"
    wheels = list(dist.glob("campusid-*.whl"))
    assert len(wheels) == 1, f"expected one campusid wheel in {dist}: {sorted(p.name for p in dist.iterdir())}"
    return wheels[0]


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The campusid wheel, built once for the whole run."""
    workdir = _run_dir(tmp_path_factory) / "campusid-wheel"
    with _run_wide_lock(workdir.with_suffix(".lock")):
        built = list((workdir / "dist").glob("campusid-*.whl"))
        if built:
            return built[0]
        shutil.rmtree(workdir, ignore_errors=True)  # a build that failed in another worker
        return build_wheel(workdir)
