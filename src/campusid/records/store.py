"""The records API's own statements on the grades table (the table itself is defined with the
IdP's schema, since one set of migrations owns the database), run through the IdP store's
database interface like every other statement."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields

from sqlalchemy import bindparam, delete, insert, select

from campusid.idp.store import Store
from campusid.idp.store.schema import grades, grants, users


@dataclass(frozen=True)
class Grade:
    course_code: str
    course_name: str
    term: str
    credits: float
    score: float
    grade_point: float


@dataclass(frozen=True)
class Transcript:
    """What one records request needs, read in one statement: the client the grant behind the
    token belongs to (to check it still stands), the student's name and grades."""

    client_id: str
    name: str
    grades: list[Grade]


# The grant (not revoked), its user and that user's grades: one statement per records request.
TRANSCRIPT = (
    select(grants.c.client_id, users.c.name, *(grades.c[f.name] for f in fields(Grade)))
    .select_from(
        grants.join(users, users.c.id == grants.c.user_id).outerjoin(
            grades, grades.c.student_number == users.c.student_number
        )
    )
    .where(grants.c.id == bindparam("gid"), grants.c.revoked_at.is_(None))
    .order_by(grades.c.term, grades.c.course_code)
)
FOR_STUDENT = (
    select(*(grades.c[f.name] for f in fields(Grade)))
    .where(grades.c.student_number == bindparam("number"))
    .order_by(grades.c.term, grades.c.course_code)
)
DELETE_GRADE = delete(grades).where(
    grades.c.student_number == bindparam("student_number"),
    grades.c.course_code == bindparam("course_code"),
    grades.c.term == bindparam("term"),
)
INSERT_GRADE = insert(grades).values({c.name: bindparam(c.name, type_=c.type) for c in grades.c if c.name != "id"})


class GradeStore:
    def __init__(self, store: Store) -> None:
        self._db = store.db
        self._transcript = self._db.prepare("TRANSCRIPT", TRANSCRIPT)
        self._for_student = self._db.prepare("GRADES_FOR_STUDENT", FOR_STUDENT)
        self._delete = self._db.prepare("DELETE_GRADE", DELETE_GRADE)
        self._insert = self._db.prepare("INSERT_GRADE", INSERT_GRADE)

    def prepared(self) -> list:
        return [self._transcript, self._for_student, self._delete, self._insert]

    async def transcript(self, grant_id: str) -> Transcript | None:
        """The grant's student and grades (None when the grant is unknown or revoked)."""
        rows = await self._db.fetch_all(self._transcript, {"gid": grant_id})
        if not rows:
            return None
        found = [Grade(*row[2:]) for row in rows if row[2] is not None]  # a student without grades: one row of NULLs
        return Transcript(rows[0][0], rows[0][1], found)

    async def for_student(self, student_number: str) -> list[Grade]:
        """One statement: a student's grades, by term then course."""
        return [Grade(*row) for row in await self._db.fetch_all(self._for_student, {"number": student_number})]

    async def upsert_all(self, rows: Sequence[Mapping]) -> int:
        """Insert or replace every row (same student, course and term) in one transaction: all or nothing."""
        async with self._db.transaction() as tx:
            await tx.execute_many(self._delete, rows)
            await tx.execute_many(self._insert, rows)
        return len(rows)
