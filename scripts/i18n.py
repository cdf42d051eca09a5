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
DOMAIN = "campusid"
SOURCE_LOCALE = "en"  # the msgids are English: its catalogue is filled from them

# Where marked text is looked for (every Python module of the product, the example web client),
# and where unmarked text is not allowed: every template, and the modules that put text on pages
# (the shared pages, the HTTP plumbing, the consoles, each protocol face — any package of
# src/campusid/idp with a face.py — the desktop window and the example web client).
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
HEADER = """\
# campusid's user-facing text: %(language)s.
# Made by scripts/i18n.py update from the marked text of the sources; edit the msgstr lines only.
#"""


class Project:
    """The checkout (or a copy of it, `root`): its sources and catalogues."""

    def __init__(self, root: Path = ROOT) -> None:
        self.root = root
        self.src = root / "src" / "campusid"
        self.locale_dir = self.src / "i18n" / "locale"
        self.web_client = root / "examples" / "web_client"

    def relative(self, path: Path) -> str:
        return str(path.relative_to(self.root))

    def python_files(self) -> list[Path]:
        files = [*self.src.rglob("*.py"), *self.web_client.rglob("*.py")]
        return sorted(p for p in files if "migrations" not in p.relative_to(self.root).parts)

    def template_files(self) -> list[Path]:
        tops = (self.src / "idp" / "web" / "templates", self.web_client / "templates")
        return sorted(p for top in tops for p in top.rglob("*.html"))

    def handler_files(self) -> list[Path]:
        """The modules that put text on pages: HANDLER_DIRS, HANDLER_FILES, each face (found by its
        face.py) and the example web client."""
        faces = [p.parent for p in (self.src / "idp").glob("*/face.py")]
        dirs = [self.src / d for d in HANDLER_DIRS] + faces + [self.web_client]
        files = {p for d in dirs for p in d.rglob("*.py")} | {self.src / f for f in HANDLER_FILES}
        return sorted(files)

    def extract(self) -> Catalog:
        """Every marked text of the sources, with where it is (file:line)."""
        catalog = Catalog(domain=DOMAIN, project="campusid", creation_date=FIXED_DATE, charset="utf-8")
        sources = [(p, "python", {}) for p in self.python_files()]
        sources += [(p, "jinja2", JINJA_OPTIONS) for p in self.template_files()]
        for path, method, options in sources:
            for line, message, comments, context in extract_from_file(
                method, str(path), keywords=KEYWORDS, options=options, strip_comment_tags=True
            ):
                catalog.add(message, None, [(self.relative(path), line)], auto_comments=comments, context=context)
        return catalog

    def po_path(self, locale: str) -> Path:
        return self.locale_dir / locale / "LC_MESSAGES" / f"{DOMAIN}.po"

    def mo_path(self, locale: str) -> Path:
        return self.po_path(locale).with_suffix(".mo")

    def locales(self) -> list[str]:
        return sorted(p.parent.parent.name for p in self.locale_dir.glob(f"*/LC_MESSAGES/{DOMAIN}.po"))

    def read(self, locale: str) -> Catalog:
        with self.po_path(locale).open("rb") as handle:
            return read_po(handle, locale=locale, domain=DOMAIN)

    def update(self, locales: Iterable[str]) -> None:
        for locale in locales:
            template = self.extract()  # a fresh one each time: a catalogue's update takes its messages
            path = self.po_path(locale)
            if path.exists():
                catalog = self.read(locale)
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
            print(f"{self.relative(path)}: {len(catalog)} texts")

    def compile(self) -> None:
        for locale in self.locales():
            self.mo_path(locale).write_bytes(_mo_bytes(self.read(locale)))
            print(f"{self.relative(self.mo_path(locale))}: compiled")

    def problems(self) -> list[str]:
        """Everything `check` reports, one line each (file:line: what)."""
        found = [str(u) for u in unmarked(self.template_files() + self.handler_files(), self.root)]
        template = self.extract()
        for locale in self.locales():
            catalog = self.read(locale)
            found += [f"{where}: no {locale} translation: {text!r}" for where, text in _untranslated(template, catalog)]
            for message, errors in catalog.check():
                found += [f"{self.relative(self.po_path(locale))}: {message.id!r}: {error}" for error in errors]
            mo = self.mo_path(locale)
            if not mo.exists() or mo.read_bytes() != _mo_bytes(catalog):
                found.append(f"{self.relative(mo)}: out of date with its .po (run: scripts/i18n.py compile)")
        return found


def _strings(message) -> tuple[str, ...]:
    return message.string if isinstance(message.string, tuple) else (message.string,)


def _untranslated(template: Catalog, catalog: Catalog) -> list[tuple[str, str]]:
    """(where, the text) of each marked text `catalog` does not translate (or only fuzzily)."""
    out = []
    for message in template:
        if not message.id:
            continue
        have = catalog.get(message.id, context=message.context)
        if have is None or not all(_strings(have)) or "fuzzy" in have.flags:
            where = ", ".join(f"{file}:{line}" for file, line in message.locations[:3])
            out.append((where, message.id[0] if isinstance(message.id, tuple) else message.id))
    return out


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
        if message.id and not all(_strings(message)):
            message.string = tuple(message.id) if isinstance(message.id, tuple) else message.id
            message.flags.discard("fuzzy")


def translated(catalog: Catalog) -> int:
    return sum(1 for m in catalog if m.id and all(_strings(m)) and "fuzzy" not in m.flags)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["update", "compile", "check", "stats"])
    parser.add_argument("--locale", action="append", help="update only these catalogues (update)")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout (default: this script's)")
    args = parser.parse_args(argv)
    project = Project(args.root.resolve())
    if not project.src.is_dir():
        parser.error(f"{args.root} holds no src/campusid: give the checkout with --root")
    if args.command == "update":
        project.update(args.locale or project.locales() or [SOURCE_LOCALE])
    elif args.command == "compile":
        project.compile()
    elif args.command == "stats":
        total = len([m for m in project.extract() if m.id])
        for locale in project.locales():
            print(f"{locale}: {translated(project.read(locale))} of {total} texts translated")
    else:
        found = project.problems()
        for line in found:
            print(line)
        if found:
            print(
                f"\n{len(found)} problem(s) with user-facing text: mark text with _() / {{% trans %}} / N_(), "
                "then run scripts/i18n.py update, translate the new entries of each .po, and scripts/i18n.py compile.",
                file=sys.stderr,
            )
            return 1
        print(f"user-facing text: every text marked and translated in {', '.join(project.locales())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
