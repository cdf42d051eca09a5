"""What people read (pages, interface text, the bridge's API description) cites RFCs and OpenID
specifications, never the project's design documents: an administrator or a script author has no
copy of them, and a clone of the repository does not either. The code, tests, docs, examples and
benchmark of the repository do not cite them either: a reader of a clone could not follow them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import campusid
from campusid import i18n
from campusid.desktop.bridge.openapi import build_openapi

SOURCE = Path(campusid.__file__).parent
REPOSITORY = Path(__file__).resolve().parents[1]
DESIGN_CITATION = re.compile(r"\b(DESIGN|SPEC)\b|shared/|\.\./|\bissue \d")


def _files() -> list[Path]:
    pages = sorted(SOURCE.glob("**/templates/**/*.html"))
    resources = sorted(p for p in (SOURCE / "desktop" / "bridge" / "resources").rglob("*") if p.is_file())
    assert pages and resources
    return pages + resources


@pytest.mark.parametrize("path", _files(), ids=lambda p: str(p.relative_to(SOURCE)))
def test_pages_cite_no_design_document(path: Path) -> None:
    assert not DESIGN_CITATION.search(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("locale", i18n.locales())
def test_the_catalogues_cite_no_design_document(locale: str) -> None:
    """Every text of the pages, the desktop window and the example web client, in each language."""
    from babel.messages.pofile import read_po

    with (i18n.LOCALE_DIR / locale / "LC_MESSAGES" / f"{i18n.DOMAIN}.po").open("rb") as handle:
        catalogue = read_po(handle)
    texts = [s for m in catalogue if m.id for s in ([m.string] if isinstance(m.string, str) else m.string)]
    assert len(texts) > 400
    assert [t for t in texts if DESIGN_CITATION.search(t)] == []


def test_the_bridge_api_description_cites_no_design_document() -> None:
    assert not DESIGN_CITATION.search(json.dumps(build_openapi(), ensure_ascii=False))


def _repository_text_files() -> list[Path]:
    skip = {".venv", "node_modules", "__pycache__", "screenshots", ".git"}
    suffixes = {".py", ".md", ".html", ".mjs", ".js", ".toml", ".txt", ".sh", ".yml", ".yaml", ".json", ".css"}
    found = [REPOSITORY / "README.md"]
    for top in ("src", "tests", "docs", "examples", "bench"):
        for path in (REPOSITORY / top).rglob("*"):
            if path.suffix in suffixes and path.is_file() and not skip & set(path.relative_to(REPOSITORY).parts):
                found.append(path)
    return found


def test_the_repository_cites_no_design_document() -> None:
    if not (REPOSITORY / "tests").is_dir() or not (REPOSITORY / "docs").is_dir():
        pytest.skip("runs in a checkout of the repository")
    cited = re.compile(r"\b(DESIGN|SPEC)\b")
    offending = []
    for path in _repository_text_files():
        if path == Path(__file__).resolve():
            continue  # the patterns themselves
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if cited.search(line):
                offending.append(f"{path.relative_to(REPOSITORY)}:{number}: {line.strip()}")
    assert len(_repository_text_files()) > 100
    assert offending == []


def test_the_pattern_finds_what_it_looks_for() -> None:
    for cited in ("Redirect URI checks (DESIGN 3.6)", "(SPEC 2.4)", "see ../shared/SPEC.md", "(the GUI issue 7)"):
        assert DESIGN_CITATION.search(cited), cited
    for fine in ("RFC 8252 7.3", "OIDC Core 8.1", "OpenID Connect Discovery 1.0 section 4.3", "inspect the response"):
        assert not DESIGN_CITATION.search(fine), fine
