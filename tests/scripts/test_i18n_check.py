"""`make lint`'s check of user-facing text (scripts/i18n.py check): it passes on the checkout, and
fails — listing file:line and the text — on a copy with a string left unmarked in a template, in a
page handler or in a new protocol face, on a marked string with no Chinese, and on a stale .mo."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "i18n.py"

pytestmark = pytest.mark.timeout(300)


def check(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "check", "--root", str(root)], capture_output=True, text=True, timeout=240
    )


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    """A copy of the sources and catalogues the check reads."""
    root = tmp_path_factory.mktemp("checkout")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for top in ("src", "examples"):
        shutil.copytree(ROOT / top, root / top, ignore=ignore)
    return root


@pytest.fixture
def copy(checkout: Path, tmp_path: Path) -> Path:
    root = tmp_path / "copy"
    shutil.copytree(checkout, root)
    return root


def test_the_checkout_passes(checkout: Path) -> None:
    result = check(checkout)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "every text marked and translated in en, zh_CN" in result.stdout


def test_an_unmarked_string_in_a_template_fails_with_its_file_and_line(copy: Path) -> None:
    login = copy / "src/campusid/idp/web/templates/login.html"
    lines = login.read_text().splitlines()
    lines.insert(3, '<p class="hint">Forgot your password? Ask the IT service desk.</p>')
    lines.insert(4, '<img src="x.png" alt="University crest">')
    login.write_text("\n".join(lines) + "\n")
    result = check(copy)
    assert result.returncode == 1
    assert (
        "src/campusid/idp/web/templates/login.html:4: not marked for translation: "
        "'Forgot your password? Ask the IT service desk.'" in result.stdout
    )
    assert (
        "src/campusid/idp/web/templates/login.html:5: not marked for translation: 'University crest'" in result.stdout
    )
    assert "mark text with _()" in result.stderr


def test_an_unmarked_string_a_handler_puts_on_a_page_fails(copy: Path) -> None:
    login = copy / "src/campusid/idp/pages/login.py"
    source = login.read_text()
    marked = 'N_("Enter your username and password.")'
    assert marked in source
    login.write_text(source.replace(marked, '"Enter your username and password."'))
    line = next(n for n, text in enumerate(login.read_text().splitlines(), 1) if '"Enter your username' in text)
    result = check(copy)
    assert result.returncode == 1
    assert (
        f"src/campusid/idp/pages/login.py:{line}: not marked for translation: 'Enter your username and password.'"
        in result.stdout
    )


def test_a_new_face_is_checked_the_day_it_is_added(copy: Path) -> None:
    face = copy / "src/campusid/idp/newface"  # a face nobody has written yet
    face.mkdir()
    (face / "face.py").write_text('"""A face."""\n')
    (face / "login.py").write_text(
        "def refused(ctx, request):\n"
        '    return error_page(ctx, request, "This application is not allowed to use the sign-in service.")\n'
    )
    result = check(copy)
    assert result.returncode == 1
    assert "src/campusid/idp/newface/login.py:2: not marked for translation" in result.stdout


def test_the_cas_face_is_checked(copy: Path) -> None:
    login = copy / "src/campusid/idp/cas/login.py"
    source = login.read_text()
    marked = 'N_("Too many sign-ins")'
    assert marked in source
    login.write_text(source.replace(marked, '"Too many sign-ins"'))
    line = next(n for n, text in enumerate(login.read_text().splitlines(), 1) if '"Too many sign-ins"' in text)
    result = check(copy)
    assert result.returncode == 1
    assert f"src/campusid/idp/cas/login.py:{line}: not marked for translation: 'Too many sign-ins'" in result.stdout


def test_a_marked_string_without_chinese_fails(copy: Path) -> None:
    login = copy / "src/campusid/idp/web/templates/login.html"
    login.write_text(login.read_text() + '{{ _("Forgot your password?") }}\n')
    result = check(copy)
    assert result.returncode == 1
    assert "login.html:21: no zh_CN translation: 'Forgot your password?'" in result.stdout
    assert "no en translation: 'Forgot your password?'" in result.stdout  # until `update` fills it in


def test_a_compiled_catalogue_older_than_its_source_fails(copy: Path) -> None:
    po = copy / "src/campusid/i18n/locale/zh_CN/LC_MESSAGES/campusid.po"
    po.write_text(po.read_text().replace('msgstr "登录已过期"', 'msgstr "登录超时"'))
    result = check(copy)
    assert result.returncode == 1
    assert "src/campusid/i18n/locale/zh_CN/LC_MESSAGES/campusid.mo: out of date with its .po" in result.stdout


def test_a_translation_that_breaks_its_placeholders_fails(copy: Path) -> None:
    po = copy / "src/campusid/i18n/locale/zh_CN/LC_MESSAGES/campusid.po"
    po.write_text(po.read_text().replace('msgstr "当前用户：%(name)s"', 'msgstr "当前用户：%(nom)s"'))
    result = check(copy)
    assert result.returncode == 1 and "'Signed in as %(name)s'" in result.stdout
