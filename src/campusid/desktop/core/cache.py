"""The local grade cache: one SQLite file, replaced atomically by each sync."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

_SCHEMA = """
CREATE TABLE IF NOT EXISTS grades (
    position INTEGER PRIMARY KEY,
    course_code TEXT NOT NULL,
    entry TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS sync (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    synced_at TEXT NOT NULL,
    student_name TEXT
);
"""


@dataclass(frozen=True)
class GradeSnapshot:
    """The grades as the records API gave them, and when they were fetched (``None``: never)."""

    grades: list[dict[str, Any]] = field(default_factory=list)
    synced_at: datetime | None = None
    student_name: str | None = None


class GradeCache:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as conn:
            conn.executescript(_SCHEMA)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        # One short-lived connection per operation keeps the cache safe to use from any thread.
        conn = sqlite3.connect(self.path, timeout=10, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            yield conn
        finally:
            conn.close()

    def replace(self, snapshot: GradeSnapshot) -> None:
        """Swap the whole cache for ``snapshot`` in one transaction: readers see old or new, never a mix."""
        if snapshot.synced_at is None:
            raise ValueError("a stored snapshot needs its sync time")
        with self._connect() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute("DELETE FROM grades")
                conn.executemany(
                    "INSERT INTO grades (position, course_code, entry) VALUES (?, ?, ?)",
                    [(i, str(g.get("course_code", "")), json.dumps(g)) for i, g in enumerate(snapshot.grades)],
                )
                conn.execute(
                    "INSERT INTO sync (id, synced_at, student_name) VALUES (1, ?, ?) "
                    "ON CONFLICT(id) DO UPDATE SET synced_at = excluded.synced_at, "
                    "student_name = excluded.student_name",
                    (snapshot.synced_at.isoformat(), snapshot.student_name),
                )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    def load(self) -> GradeSnapshot:
        with self._connect() as conn:
            conn.execute("BEGIN")
            rows = conn.execute("SELECT entry FROM grades ORDER BY position").fetchall()
            meta = conn.execute("SELECT synced_at, student_name FROM sync WHERE id = 1").fetchone()
            conn.execute("COMMIT")
        if meta is None:
            return GradeSnapshot()
        return GradeSnapshot(
            grades=[json.loads(r[0]) for r in rows],
            synced_at=datetime.fromisoformat(meta[0]),
            student_name=meta[1],
        )

    def clear(self) -> None:
        with self._connect() as conn:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("DELETE FROM grades")
            conn.execute("DELETE FROM sync")
            conn.execute("COMMIT")
