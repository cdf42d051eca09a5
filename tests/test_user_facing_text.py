"""What people read (pages, interface text, the bridge's API description) cites RFCs and OpenID
specifications, never the project's design documents: an administrator or a script author has no
copy of them, and a clone of the repository does not either."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import campusid
from campusid.desktop.bridge.openapi import build_openapi
from campusid.desktop.gui import i18n as gui_i18n
from campusid.idp import i18n as idp_i18n

SOURCE = Path(campusid.__file__).parent
DESIGN_CITATION = re.compile(r"\b(DESIGN|SPEC)\b|shared/|\.\./|\bissue \d")


def _files() -> list[Path]:
    pages = sorted(SOURCE.glob("**/templates/**/*.html"))
    resources = sorted(p for p in (SOURCE / "desktop" / "bridge" / "resources").rglob("*") if p.is_file())
    assert pages and resources
    return pages + resources


@pytest.mark.parametrize("path", _files(), ids=lambda p: str(p.relative_to(SOURCE)))
def test_pages_cite_no_design_document(path: Path) -> None:
    assert not DESIGN_CITATION.search(path.read_text(encoding="utf-8"))


def test_idp_page_text_cites_no_design_document() -> None:
    for language in idp_i18n.LANGUAGES:
        t = idp_i18n.translator(language)
        offending = {key: t(key) for key in idp_i18n._TEXT if DESIGN_CITATION.search(t(key))}
        assert offending == {}, language


def test_desktop_interface_text_cites_no_design_document() -> None:
    for language in gui_i18n.LANGUAGES:
        texts = gui_i18n.catalogue(language)
        assert texts
        assert {k: v for k, v in texts.items() if DESIGN_CITATION.search(v)} == {}, language


def test_the_bridge_api_description_cites_no_design_document() -> None:
    assert not DESIGN_CITATION.search(json.dumps(build_openapi(), ensure_ascii=False))


def test_the_pattern_finds_what_it_looks_for() -> None:
    for cited in ("Redirect URI checks (DESIGN 3.6)", "(SPEC 2.4)", "see ../shared/SPEC.md", "(the GUI issue 7)"):
        assert DESIGN_CITATION.search(cited), cited
    for fine in ("RFC 8252 7.3", "OIDC Core 8.1", "OpenID Connect Discovery 1.0 section 4.3", "inspect the response"):
        assert not DESIGN_CITATION.search(fine), fine
