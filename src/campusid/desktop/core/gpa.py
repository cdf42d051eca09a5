"""Credit-weighted grade point average, per term and overall. Pure functions, no I/O.

GPA = sum(credits x grade_point) / sum(credits), over the courses that carry credits and a grade
point. Arithmetic is decimal (the records give values such as 3.7) so 3.625 shows as 3.63, as a
student working it out by hand would expect.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any


@dataclass(frozen=True)
class TermGPA:
    term: str
    credits: Decimal
    gpa: Decimal | None  # None: no course of the term carries credits


@dataclass(frozen=True)
class GPASummary:
    terms: tuple[TermGPA, ...]  # in the order the terms first appear
    credits: Decimal
    overall: Decimal | None


def _decimal(value: Any) -> Decimal | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = Decimal(str(value))
    except (InvalidOperation, ValueError):
        return None
    return number if number.is_finite() and number >= 0 else None


def credit_weighted_gpa(grades: Iterable[Mapping[str, Any]]) -> GPASummary:
    """The GPA per term and overall; a course without numeric credits or grade point is left out."""
    weighted: dict[str, Decimal] = {}
    credits: dict[str, Decimal] = {}
    for grade in grades:
        term = str(grade.get("term") or "")
        c, gp = _decimal(grade.get("credits")), _decimal(grade.get("grade_point"))
        weighted.setdefault(term, Decimal(0))
        credits.setdefault(term, Decimal(0))
        if c is None or gp is None or c == 0:
            continue
        weighted[term] += c * gp
        credits[term] += c
    terms = tuple(TermGPA(t, credits[t], weighted[t] / credits[t] if credits[t] else None) for t in weighted)
    total_credits = sum(credits.values(), Decimal(0))
    total = sum(weighted.values(), Decimal(0))
    return GPASummary(terms, total_credits, total / total_credits if total_credits else None)


def format_gpa(gpa: Decimal | None, places: int = 2) -> str:
    """``3.63`` (half up), or an en dash when there is nothing to average."""
    if gpa is None:
        return "\u2013"
    return str(gpa.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP))


def format_credits(value: Decimal) -> str:
    return format(value.normalize(), "f") if value == value.to_integral() else str(value)
