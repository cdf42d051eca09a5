"""`campusid records import FILE.csv`: validate every row first, then import all or nothing."""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field

from campusid.idp.store import Store
from campusid.records.store import GradeStore

COLUMNS = ("student_number", "course_code", "course_name", "term", "credits", "score", "grade_point")
MAX_FILE = 20 * 1024 * 1024


@dataclass
class ImportReport:
    imported: int = 0
    rows: int = 0
    errors: list[dict] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


def _number(value: str, name: str, low: float, high: float) -> float:
    try:
        number = float(value)
    except ValueError:
        raise ValueError(f"{name} {value!r} is not a number") from None
    if math.isnan(number) or not low <= number <= high:
        raise ValueError(f"{name} {value!r} is outside {low:g}..{high:g}")
    return number


def parse_rows(data: bytes) -> tuple[list[dict], ImportReport]:
    report = ImportReport()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        report.errors.append({"line": 0, "error": "the file is not UTF-8 text"})
        return [], report
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if header is None or tuple(h.strip() for h in header) != COLUMNS:
        report.errors.append({"line": 1, "error": f"the header must be: {','.join(COLUMNS)}"})
        return [], report
    rows, seen = [], set()
    for line, fields in enumerate(reader, start=2):
        if not any(f.strip() for f in fields):
            continue
        report.rows += 1
        try:
            if len(fields) != len(COLUMNS):
                raise ValueError(f"expected {len(COLUMNS)} columns, found {len(fields)}")
            row = dict(zip(COLUMNS, (f.strip() for f in fields), strict=True))
            for key in ("student_number", "course_code", "course_name", "term"):
                if not row[key]:
                    raise ValueError(f"{key} is empty")
                if len(row[key]) > (200 if key == "course_name" else 32):
                    raise ValueError(f"{key} is too long")
            row["credits"] = _number(row["credits"], "credits", 0, 60)
            row["score"] = _number(row["score"], "score", 0, 100)
            row["grade_point"] = _number(row["grade_point"], "grade_point", 0, 5)
            key = (row["student_number"], row["course_code"], row["term"])
            if key in seen:
                raise ValueError("the same student, course and term appear twice in the file")
            seen.add(key)
            rows.append(row)
        except ValueError as exc:
            report.errors.append({"line": line, "error": str(exc)})
    return rows, report


async def import_csv(store: Store, data: bytes) -> ImportReport:
    if len(data) > MAX_FILE:
        return ImportReport(errors=[{"line": 0, "error": "the file is larger than 20 MiB"}])
    rows, report = parse_rows(data)
    if report.ok:
        report.imported = await GradeStore(store).upsert_all(rows)
    return report
