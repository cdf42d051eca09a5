"""`campusid records`: grades for the records API."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from campusid.cli.common import JsonOpt, Services, emit, err, fail, out, print_error

app = typer.Typer(no_args_is_help=True, help="Grades for the records API.")


@app.command("import")
def records_import(file: Path, as_json: JsonOpt = False):
    """Import grades from CSV: every row is checked first; all rows or none are imported."""
    from campusid.records.importer import COLUMNS, import_csv

    try:
        data = file.read_bytes()
    except OSError as exc:
        fail(f"cannot read {file}: {exc.strerror}", 2, as_json)
    report = Services(as_json=as_json).run(lambda svc: import_csv(svc.store, data))
    body = {"imported": report.imported, "rows": report.rows, "errors": report.errors}
    if not report.ok:
        if as_json:
            print(json.dumps(body), file=sys.stderr)
        else:
            rejected = f"{len(report.errors)} row(s) rejected (columns: {','.join(COLUMNS)})"
            print_error(rejected, label="nothing imported:")
            for e in report.errors[:50]:  # a row's values, quoted in its error, as they are
                err.print(f"  line {e['line']}: {e['error']}", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(1)
    emit(body, as_json, lambda d: out.print(f"imported {d['imported']} grade(s)", markup=False))
