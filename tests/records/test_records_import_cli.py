"""`campusid records import FILE.csv [--json]` through the real CLI: every row is
validated first, and a file with any bad row imports nothing and names each rejected line."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli

HEADER = "student_number,course_code,course_name,term,credits,score,grade_point\n"
GOOD_ROWS = (
    "2030001,CS101,Introduction to Programming,2025-autumn,4,92,4.0\n"
    '2030001,MA101,"Calculus I, honours",2025-autumn,5,85.5,3.7\n'
    "2030002,CS101,Introduction to Programming,2025-autumn,4,61,1.0\n"
)


def write(tmp_path, text: str | bytes, name: str = "grades.csv"):
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def count_rows(env, student_numbers=("2030001", "2030002")) -> int:
    """How many grade rows the database holds for these students (read through the store)."""
    from campusid.idp.settings import load_settings
    from campusid.idp.store import open_store
    from campusid.records.store import GradeStore
    from tests.idp.helpers import run

    settings = load_settings(env)
    store = open_store(settings.database_url, settings.data_dir)
    grades = GradeStore(store)

    async def count() -> int:
        return sum([len(await grades.for_student(n)) for n in student_numbers])

    try:
        return run(store, count())
    finally:
        store.close()


def test_valid_file_imports_every_row_and_a_reimport_replaces_them(idp_env, tmp_path):
    path = write(tmp_path, HEADER + GOOD_ROWS)
    proc = run_cli(idp_env, "records", "import", str(path))
    assert "imported 3 grade(s)" in proc.stdout
    assert count_rows(idp_env) == 3
    proc = run_cli(idp_env, "records", "import", str(path), "--json")
    assert json.loads(proc.stdout) == {"imported": 3, "rows": 3, "errors": []}
    assert count_rows(idp_env) == 3  # replaced, not duplicated


def test_utf8_bom_and_blank_lines_are_accepted(idp_env, tmp_path):
    data = ("\ufeff" + HEADER + GOOD_ROWS + "\n\n").encode("utf-8")
    proc = run_cli(idp_env, "records", "import", str(write(tmp_path, data)), "--json")
    assert json.loads(proc.stdout)["imported"] == 3


BAD_FILE = (
    HEADER
    + "2030001,CS101,Introduction to Programming,2025-autumn,4,92,4.0\n"  # line 2: good
    + "2030001,MA101,Calculus I,2025-autumn,five,85,3.7\n"  # line 3: credits not numeric
    + "2030001,PH101,General Physics,2025-autumn,3,101,3.0\n"  # line 4: score out of range
    + "2030001,EN101,Academic English,2026-spring,2,95\n"  # line 5: a missing column
    + "2030002,CS101,Introduction to Programming,2025-autumn,4,61,1.0\n"  # line 6: good
    + "2030001,CS101,Introduction to Programming,2025-autumn,4,90,4.0\n"  # line 7: duplicate of line 2
    + "2030002,MA101,Calculus I,2025-autumn,5,-1,3.0\n"  # line 8: negative score
    + "2030002,,Empty course,2025-autumn,5,80,3.0\n"  # line 9: empty course code
)
BAD_LINES = {3: "credits", 4: "score", 5: "columns", 7: "twice", 8: "score", 9: "course_code"}


def test_bad_rows_import_nothing_and_each_is_reported_with_its_line(idp_env, tmp_path):
    proc = run_cli(idp_env, "records", "import", str(write(tmp_path, BAD_FILE)), check=False)
    assert proc.returncode != 0
    assert "nothing imported" in proc.stderr
    for line, word in BAD_LINES.items():
        match = [text for text in proc.stderr.splitlines() if text.strip().startswith(f"line {line}:")]
        assert match, f"line {line} not reported:\n{proc.stderr}"
        assert word in match[0], match[0]
    for good in (2, 6):
        assert f"line {good}:" not in proc.stderr
    assert count_rows(idp_env) == 0  # all or nothing: the two good rows were not imported


def test_bad_rows_json_report(idp_env, tmp_path):
    proc = run_cli(idp_env, "records", "import", str(write(tmp_path, BAD_FILE)), "--json", check=False)
    assert proc.returncode != 0
    assert proc.stdout == ""
    report = json.loads(proc.stderr)
    assert report["imported"] == 0 and report["rows"] == 8
    assert [e["line"] for e in report["errors"]] == sorted(BAD_LINES)
    for error in report["errors"]:
        assert BAD_LINES[error["line"]] in error["error"]
    assert count_rows(idp_env) == 0


def test_a_bad_file_leaves_earlier_grades_untouched(idp_env, tmp_path):
    run_cli(idp_env, "records", "import", str(write(tmp_path, HEADER + GOOD_ROWS, "good.csv")))
    changed = HEADER + "2030001,CS101,Introduction to Programming,2025-autumn,4,10,0.0\n" + "2030001,X,Y,Z,1,1,9\n"
    proc = run_cli(idp_env, "records", "import", str(write(tmp_path, changed, "bad.csv")), check=False)
    assert proc.returncode != 0
    assert count_rows(idp_env) == 3
    from campusid.idp.settings import load_settings
    from campusid.idp.store import open_store
    from campusid.records.store import GradeStore
    from tests.idp.helpers import run

    settings = load_settings(idp_env)
    store = open_store(settings.database_url, settings.data_dir)
    try:
        grades = run(store, GradeStore(store).for_student("2030001"))
        cs101 = next(g for g in grades if g.course_code == "CS101")
    finally:
        store.close()
    assert cs101.score == 92  # the rejected file's row 2 did not overwrite it


@pytest.mark.parametrize(
    "header",
    [
        "student_number,course_code,course_name,term,credits,score\n",  # a column missing
        "student,course_code,course_name,term,credits,score,grade_point\n",  # a wrong name
    ],
)
def test_wrong_header_is_rejected_on_line_1(idp_env, tmp_path, header):
    proc = run_cli(idp_env, "records", "import", str(write(tmp_path, header + GOOD_ROWS)), "--json", check=False)
    assert proc.returncode != 0
    report = json.loads(proc.stderr)
    assert report["imported"] == 0
    assert report["errors"][0]["line"] == 1 and "header" in report["errors"][0]["error"]
    assert count_rows(idp_env) == 0


def test_non_utf8_file_is_rejected(idp_env, tmp_path):
    data = (HEADER + "2030001,CS101,Programmation \u00e9l\u00e9mentaire,2025-autumn,4,92,4.0\n").encode("latin-1")
    proc = run_cli(idp_env, "records", "import", str(write(tmp_path, data)), "--json", check=False)
    assert proc.returncode != 0 and "UTF-8" in json.loads(proc.stderr)["errors"][0]["error"]
    assert count_rows(idp_env) == 0


def test_missing_file_is_a_clear_error(idp_env, tmp_path):
    proc = run_cli(idp_env, "records", "import", str(tmp_path / "nope.csv"), check=False)
    assert proc.returncode != 0
    assert "cannot read" in proc.stderr
