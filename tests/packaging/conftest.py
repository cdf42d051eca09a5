"""The product as an operator installs it: a wheel built the way `pip install .` builds one, and a
fresh virtual environment outside the checkout that holds it.

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
from dataclasses import dataclass
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


def installed_env(venv: Path) -> dict[str, str]:
    """The environment of a shell in which `venv` is activated and nothing points at the checkout.

    Bytecode caches may be written (as on an operator's machine) so that the processes after the
    first one start from them: the venv is installed without compiling every dependency."""
    dropped = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONDONTWRITEBYTECODE", "PYTHONSAFEPATH")
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in dropped and not k.startswith(("CAMPUSID_", "APP_BRIDGE_", "VIRTUAL_ENV"))
    }
    env["VIRTUAL_ENV"] = str(venv)
    env["PATH"] = os.pathsep.join([str(venv / "bin"), env.get("PATH", "")])
    return env


@dataclass(frozen=True)
class Installed:
    venv: Path
    bin: Path
    home: Path  # a working directory outside the checkout
    env: dict[str, str]

    def run(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            list(args), cwd=self.home, env=self.env, capture_output=True, text=True, timeout=timeout, check=False
        )


@pytest.fixture(scope="session")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """A fresh venv outside the checkout with the wheel installed from its own metadata (no extras:
    the headless desktop needs no GUI packages), at the versions constraints.txt pins."""
    root = tmp_path_factory.mktemp("installed")
    assert not root.resolve().is_relative_to(ROOT), f"the venv must live outside the checkout, not in {root}"
    venv, home = root / "venv", root / "home"
    home.mkdir()
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    # The test run's own pip installs into the new venv (--python): no second pip to bootstrap.
    # pip's cache serves the dependencies; --no-compile leaves bytecode to the first import.
    result = subprocess.run(
        [
            sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "--quiet",
            "--no-compile", "-c", str(ROOT / "constraints.txt"), str(wheel),
        ],
        cwd=home,
        env=installed_env(venv),
        capture_output=True,
        text=True,
        timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, f"installing the wheel failed:\n{result.stdout}\n{result.stderr}"
    return Installed(venv=venv, bin=venv / "bin", home=home, env=installed_env(venv))
