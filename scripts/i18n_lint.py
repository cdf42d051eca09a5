"""Finds text for people that is not marked for translation, in templates and in page handlers.

Templates (Jinja2): every piece of text between tags, and the attributes people read (title, alt,
placeholder, aria-label, a button's value), must be inside `{% trans %}` or `_()`; so must a string
in an expression that reads as prose. Python: a string literal that reads as prose (a capitalised
sentence of two words or more, or any Chinese) must be inside a marker (`_`, `gettext`, `ngettext`,
`pgettext`, `N_`, `N_plural`), unless it is a docstring, a log line, an event's `detail`, or its
line says `# i18n: ignore` (with the reason). Lower-case protocol descriptions (`error_description`
for apps, RFC 6749 5.2) are not prose and stay English.

The rules are deliberately generic: they walk every template and every handler module, so a new
page (a face's, a console's) is checked the day it is added. scripts/i18n.py runs them in `check`.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

from jinja2 import Environment

MARKERS = {"_", "gettext", "ngettext", "pgettext", "npgettext", "N_", "N_plural"}
LOG_METHODS = {"debug", "info", "warning", "error", "exception", "critical", "log"}
LOGGERS = {"log", "logger", "logging"}
HUMAN_ATTRIBUTES = {"title", "alt", "placeholder", "aria-label", "label"}
PRAGMA = "# i18n: ignore"
_HOLE = "\x00"  # where a Jinja2 construct was: no letter, so never text for people
_CJK = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]")
_SENTENCE = re.compile(r"\s*[A-Z][a-z']*(?:-[a-z]+)*[\s,:;]+\S")  # "Sign-in expired", not "Retry-After"
_CODE = re.compile(r"=[\"'{]")  # a header value (realm="…"), not prose
_TRANS_BLOCK = re.compile(r"\{%-?\s*trans\b.*?\{%-?\s*endtrans\s*-?%\}", re.S)
_JINJA = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", re.S)


@dataclass(frozen=True, order=True)
class Unmarked:
    path: str
    line: int
    text: str

    def __str__(self) -> str:
        shown = self.text if len(self.text) <= 90 else self.text[:87] + "..."
        return f"{self.path}:{self.line}: not marked for translation: {shown!r}"


def reads_as_prose(text: str) -> bool:
    """Chinese, or a capitalised sentence of two words or more ("Sign in", "The form expired.")."""
    return bool(_CJK.search(text)) or (bool(_SENTENCE.match(text)) and not _CODE.search(text))


def _has_letters(text: str) -> bool:
    return any(ch.isalpha() for ch in text)


def _blank(match: re.Match) -> str:
    """A Jinja2 construct replaced by a hole, its line breaks kept (line numbers stay right)."""
    return _HOLE + "\n" * match.group(0).count("\n")


class _TextFinder(HTMLParser):
    """Text nodes and human attributes of an HTML skeleton, with their lines."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[int, str]] = []
        self._skip = 0  # inside <script> or <style>

    def handle_starttag(self, tag: str, attrs) -> None:
        if tag in ("script", "style"):
            self._skip += 1
        kind = dict(attrs).get("type", "")
        for name, value in attrs:
            human = name in HUMAN_ATTRIBUTES or (name == "value" and tag == "input" and kind in ("submit", "button"))
            if human and value and _has_letters(value.replace(_HOLE, "")):
                self.found.append((self.getpos()[0], value))

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style") and self._skip:
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        if self._skip:
            return
        line = self.getpos()[0]
        for piece in data.split(_HOLE):  # text between two Jinja2 constructs is a text of its own
            if _has_letters(piece):
                leading = piece[: len(piece) - len(piece.lstrip())]  # it starts below its line breaks
                self.found.append((line + leading.count("\n"), piece.strip()))
            line += piece.count("\n")


def _template_text(source: str) -> list[tuple[int, str]]:
    skeleton = _TRANS_BLOCK.sub(_blank, source)
    skeleton = _JINJA.sub(_blank, skeleton)
    finder = _TextFinder()
    finder.feed(skeleton)
    finder.close()
    return finder.found


def _template_strings(source: str, name: str) -> list[tuple[int, str]]:
    """String literals in expressions that read as prose and sit in no marker's call."""
    env = Environment(extensions=["jinja2.ext.i18n"], autoescape=True)  # lexed only, never rendered
    found = []
    calls: list[str | None] = []  # the function each open parenthesis belongs to
    previous = None
    for line, kind, value in env.lex(source, name):
        if kind == "whitespace":
            continue
        if kind == "operator" and value == "(":
            calls.append(previous[2] if previous and previous[1] == "name" else None)
        elif kind == "operator" and value == ")" and calls:
            calls.pop()
        elif kind in ("variable_end", "block_end"):
            calls.clear()
        elif kind == "string" and not MARKERS.intersection(c for c in calls if c):
            text = value[1:-1]  # the lexer's raw token keeps its quotes
            if reads_as_prose(text):
                found.append((line, text))
        previous = (line, kind, value)
    return found


def unmarked_in_template(source: str, path: str) -> list[Unmarked]:
    found = _template_text(source) + _template_strings(source, path)
    return sorted(Unmarked(path, line, text) for line, text in found)


# -- Python -----------------------------------------------------------------------------------
def _call_name(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _is_log_call(call: ast.Call) -> bool:
    func = call.func
    return (
        isinstance(func, ast.Attribute)
        and func.attr in LOG_METHODS
        and isinstance(func.value, ast.Name)
        and func.value.id in LOGGERS
    )


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


class _PythonFinder(ast.NodeVisitor):
    def __init__(self, docstrings: set[int]) -> None:
        self.docstrings = docstrings
        self.found: list[tuple[int, str]] = []
        self._exempt = 0  # inside a marker's call, a log call or an event's detail

    def visit_Call(self, node: ast.Call) -> None:  # noqa: N802 - the ast.NodeVisitor API
        exempt = _call_name(node) in MARKERS or _is_log_call(node)
        self._exempt += exempt
        self.visit(node.func)
        for arg in node.args:
            self.visit(arg)
        for keyword in node.keywords:
            detail = keyword.arg == "detail"
            self._exempt += detail
            self.visit(keyword.value)
            self._exempt -= detail
        self._exempt -= exempt

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:  # noqa: N802
        text = "".join(v.value if isinstance(v, ast.Constant) else "{…}" for v in node.values)
        if not self._exempt and reads_as_prose(text):
            self.found.append((node.lineno, text))
        for value in node.values:
            if isinstance(value, ast.FormattedValue):
                self.visit(value)

    def visit_Constant(self, node: ast.Constant) -> None:  # noqa: N802
        if (
            isinstance(node.value, str)
            and not self._exempt
            and id(node) not in self.docstrings
            and reads_as_prose(node.value)
        ):
            self.found.append((node.lineno, node.value))


def unmarked_in_python(source: str, path: str) -> list[Unmarked]:
    tree = ast.parse(source, path)
    finder = _PythonFinder(_docstrings(tree))
    finder.visit(tree)
    lines = source.splitlines()
    return sorted(
        Unmarked(path, line, text)
        for line, text in finder.found
        if not (0 < line <= len(lines) and PRAGMA in lines[line - 1])
    )


def unmarked(files: list[Path], root: Path) -> list[Unmarked]:
    """Every unmarked text of `files` (templates by their .html suffix), paths relative to `root`."""
    out: list[Unmarked] = []
    for path in files:
        shown = str(path.relative_to(root)) if path.is_relative_to(root) else str(path)
        source = path.read_text(encoding="utf-8")
        if path.suffix == ".html":
            out.extend(unmarked_in_template(source, shown))
        else:
            out.extend(unmarked_in_python(source, shown))
    return out
