#!/usr/bin/env python3
"""The gettext catalogues of campusid (src/campusid/i18n/locale): extracted with Babel, kept, compiled
and checked. One domain, `campusid`, for the IdP's pages and handlers, the records and console
pages, the desktop window and the example web client.

    .venv/bin/python scripts/i18n.py update    extract the marked text and bring every .po up to date
                                               (English filled in from the source; new Chinese
                                               entries left empty for a translator)
    .venv/bin/python scripts/i18n.py compile   write each .mo from its .po (the wheel ships them)
    .venv/bin/python scripts/i18n.py check     what `make lint` runs: fails, listing file:line and the
                                               text, when a template or handler has text not marked
                                               for translation, a marked text has no translation in a
                                               catalogue, a translation breaks its placeholders, or a
                                               .mo is older than its .po
    .venv/bin/python scripts/i18n.py stats     how many texts each catalogue translates

A new language: `pybabel init`-like, copy locale/en to locale/<name>, clear its msgstr, translate,
compile; the IdP offers it as soon as its .mo is there.
"""

from __future__ import annotations

import argparse
import io
import sys
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_file
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po, write_po

sys.path.insert(0, str(Path(__file__).resolve().parent))
from i18n_lint import unmarked  # noqa: E402 - the script's own module, beside it

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "campusid"
LOCALE_DIR = SRC / "i18n" / "locale"
DOMAIN = "campusid"
SOURCE_LOCALE = "en"  # the msgids are English: its catalogue is filled from them

# Where marked text is looked for (every Python module of the product, the example web client),
# and where unmarked text is not allowed: every template, and the modules that put text on pages
# (the shared pages, the HTTP plumbing, the consoles, each protocol face — any package of
# src/campusid/idp with a face.py — the desktop window and the example web client).
PYTHON_SOURCES = (SRC, ROOT / "examples" / "web_client")
TEMPLATE_SOURCES = (SRC / "idp" / "web" / "templates", ROOT / "examples" / "web_client" / "templates")
HANDLER_DIRS = ("idp/pages", "idp/web", "idp/portal", "idp/admin", "desktop/gui")
HANDLER_FILES = ("idp/app.py", "idp/ratelimit.py")
KEYWORDS = {
    "_": None,
    "gettext": None,
    "ngettext": (1, 2),
    "pgettext": ((1, "c"), 2),
    "N_": None,
    "N_plural": (1, 2),
}
JINJA_OPTIONS = {"extensions": "jinja2.ext.i18n", "trimmed": "true", "newstyle_gettext": "true"}
WIDTH = 116
FIXED_DATE = datetime(2026, 12, 1, tzinfo=UTC)  # the header's dates: no churn at each update


def _relative(path: Path) -> str:
    return str(path.relative_to(ROOT))


def python_files() -> list[Path]:
    skip = ("migrations",)
    return sorted(
        p for top in PYTHON_SOURCES for p in top.rglob("*.py") if not set(skip) & set(p.relative_to(ROOT).parts)
    )


def template_files() -> list[Path]:
    return sorted(p for top in TEMPLATE_SOURCES for p in top.rglob("*.html"))


def handler_files() -> list[Path]:
    """The modules that put text on pages: see HANDLER_DIRS; each face is found by its face.py."""
    faces = [p.parent for p in (SRC / "idp").glob("*/face.py")]
    dirs = [SRC / d for d in HANDLER_DIRS] + faces
    files = {p for d in dirs for p in d.rglob("*.py")} | {SRC / f for f in HANDLER_FILES}
    files |= set((ROOT / "examples" / "web_client").rglob("*.py"))
    return sorted(files)


def extract() -> Catalog:
    """Every marked text of the sources, with where it is (file:line)."""
    catalog = Catalog(domain=DOMAIN, project="campusid", creation_date=FIXED_DATE, charset="utf-8")
    sources = [(p, "python", {}) for p in python_files()] + [(p, "jinja2", JINJA_OPTIONS) for p in template_files()]
    for path, method, options in sources:
        for line, message, comments, context in extract_from_file(
            method, str(path), keywords=KEYWORDS, options=options, strip_comment_tags=True
        ):
            catalog.add(message, None, [(_relative(path), line)], auto_comments=comments, context=context)
    return catalog


def po_path(locale: str) -> Path:
    return LOCALE_DIR / locale / "LC_MESSAGES" / f"{DOMAIN}.po"


def mo_path(locale: str) -> Path:
    return po_path(locale).with_suffix(".mo")


def catalogue_locales() -> list[str]:
    return sorted(p.parent.parent.name for p in LOCALE_DIR.glob(f"*/LC_MESSAGES/{DOMAIN}.po"))


def read(locale: str) -> Catalog:
    with po_path(locale).open("rb") as handle:
        return read_po(handle, locale=locale, domain=DOMAIN)


def _po_bytes(catalog: Catalog) -> bytes:
    out = io.BytesIO()
    write_po(out, catalog, width=WIDTH, include_lineno=False, ignore_obsolete=True, sort_output=False)
    return out.getvalue()


def _mo_bytes(catalog: Catalog) -> bytes:
    out = io.BytesIO()
    write_mo(out, catalog, use_fuzzy=False)
    return out.getvalue()


def _fill_source(catalog: Catalog) -> None:
    """The English catalogue says what the source says (a university may reword it there)."""
    for message in catalog:
        if not message.id or message.string and (not isinstance(message.string, tuple) or all(message.string)):
            continue
        message.string = tuple(message.id) if isinstance(message.id, tuple) else message.id
        message.flags.discard("fuzzy")


HEADER = """\
# campusid's user-facing text: %(language)s.
# Made by scripts/i18n.py update from the marked text of the sources; edit the msgstr lines only.
#"""


def update(locales: Iterable[str]) -> None:
    for locale in locales:
        template = extract()  # a fresh one each time: a catalogue's update takes its messages
        path = po_path(locale)
        if path.exists():
            catalog = read(locale)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            catalog = Catalog(locale=locale, domain=DOMAIN)
        catalog.update(template, no_fuzzy_matching=True, update_creation_date=False)
        catalog.project, catalog.version = "campusid", "1"
        catalog.msgid_bugs_address = "README.md"
        catalog.revision_date = catalog.creation_date = FIXED_DATE
        catalog.last_translator = catalog.language_team = "campusid"
        catalog.header_comment = HEADER % {"language": catalog.locale.english_name}
        catalog.fuzzy = False
        if locale == SOURCE_LOCALE:
            _fill_source(catalog)
        path.write_bytes(_po_bytes(catalog))
        print(f"{_relative(path)}: {len(catalog)} texts")


def compile_all() -> None:
    for locale in catalogue_locales():
        mo_path(locale).write_bytes(_mo_bytes(read(locale)))
        print(f"{_relative(mo_path(locale))}: compiled")


def translated(catalog: Catalog) -> int:
    def done(message) -> bool:
        strings = message.string if isinstance(message.string, tuple) else (message.string,)
        return bool(message.id) and all(strings) and "fuzzy" not in message.flags

    return sum(1 for message in catalog if done(message))


def problems() -> list[str]:
    """Everything `check` reports, one line each (file:line: what)."""
    found = [str(u) for u in unmarked(template_files() + handler_files(), ROOT)]
    template = extract()
    for locale in catalogue_locales():
        catalog = read(locale)
        for message in template:
            if not message.id:
                continue
            have = catalog.get(message.id, context=message.context)
            strings = () if have is None else have.string if isinstance(have.string, tuple) else (have.string,)
            if have is None or not all(strings) or "fuzzy" in have.flags:
                where = ", ".join(f"{file}:{line}" for file, line in message.locations[:3])
                text = message.id[0] if isinstance(message.id, tuple) else message.id
                found.append(f"{where}: no {locale} translation: {text!r}")
        for message, errors in catalog.check():
            for error in errors:
                found.append(f"{_relative(po_path(locale))}: {message.id!r}: {error}")
        if not mo_path(locale).exists() or mo_path(locale).read_bytes() != _mo_bytes(catalog):
            found.append(f"{_relative(mo_path(locale))}: out of date with its .po (run: scripts/i18n.py compile)")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["update", "compile", "check", "stats"])
    parser.add_argument("--locale", action="append", help="update only these catalogues (update)")
    args = parser.parse_args(argv)
    if args.command == "update":
        update(args.locale or catalogue_locales() or [SOURCE_LOCALE])
    elif args.command == "compile":
        compile_all()
    elif args.command == "stats":
        total = len([m for m in extract() if m.id])
        for locale in catalogue_locales():
            print(f"{locale}: {translated(read(locale))} of {total} texts translated")
    else:
        found = problems()
        for line in found:
            print(line)
        if found:
            print(
                f"\n{len(found)} problem(s) with user-facing text: mark text with _() / {{% trans %}} / N_(), "
                "then run scripts/i18n.py update, translate the new entries of each .po, and scripts/i18n.py compile.",
                file=sys.stderr,
            )
            return 1
        print(f"user-facing text: every text marked and translated in {', '.join(catalogue_locales())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
