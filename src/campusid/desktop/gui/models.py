"""Qt item models: the grades table (sortable by value, not by text) and the recent bridge calls."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt

from campusid.i18n import N_, Translator

Index = QModelIndex | QPersistentModelIndex
SORT_ROLE = Qt.ItemDataRole.UserRole

GRADE_COLUMNS = ("course_code", "course_name", "term", "credits", "score", "grade_point")
GRADE_HEADERS = {
    "course_code": N_("Course code"),
    "course_name": N_("Course name"),
    "term": N_("Term"),
    "credits": N_("Credits"),
    "score": N_("Score"),
    "grade_point": N_("Grade point"),
}
_NUMERIC = {"credits", "score", "grade_point"}


def _number(value: Any) -> Decimal | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return Decimal(str(value))
    except (InvalidOperation, ValueError):
        return None


def _shown(column: str, value: Any) -> str:
    number = _number(value) if column in _NUMERIC else None
    if number is None:
        return "" if value is None else str(value)
    if column == "grade_point":
        return f"{number:.1f}"
    return format(number.normalize(), "f")


class GradesModel(QAbstractTableModel):
    def __init__(self, texts: Translator) -> None:
        super().__init__()
        self._texts = texts
        self._rows: list[dict[str, Any]] = []

    def set_grades(self, grades: list[dict[str, Any]]) -> None:
        self.beginResetModel()
        self._rows = [dict(g) for g in grades]
        self.endResetModel()

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008, N802 - Qt API
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008, N802 - Qt API
        return 0 if parent.isValid() else len(GRADE_COLUMNS)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        column = GRADE_COLUMNS[index.column()]
        value = self._rows[index.row()].get(column)
        if role == Qt.ItemDataRole.DisplayRole:
            return _shown(column, value)
        if role == SORT_ROLE:
            if column in _NUMERIC:
                number = _number(value)
                return float(number) if number is not None else -1.0
            return "" if value is None else str(value).casefold()
        if role == Qt.ItemDataRole.TextAlignmentRole and column in _NUMERIC:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:  # noqa: N802
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return self._texts.text(GRADE_HEADERS[GRADE_COLUMNS[section]])
        if (
            orientation == Qt.Orientation.Horizontal
            and role == Qt.ItemDataRole.TextAlignmentRole
            and GRADE_COLUMNS[section] in _NUMERIC
        ):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None


CALL_COLUMNS = ("time", "method", "path", "outcome")
CALL_HEADERS = {"time": N_("Time"), "method": N_("Method"), "path": N_("Path"), "outcome": N_("Outcome")}


class BridgeCallsModel(QAbstractTableModel):
    """The newest call first; only method, path and status ever reach it (no headers, no query)."""

    def __init__(self, texts: Translator, limit: int = 50) -> None:
        super().__init__()
        self._texts = texts
        self._limit = limit
        self._calls: list[tuple[str, str, str, int]] = []

    def add_call(self, at: float, method: str, path: str, status: int) -> None:
        self.beginInsertRows(QModelIndex(), 0, 0)
        self._calls.insert(0, (datetime.fromtimestamp(at).strftime("%H:%M:%S"), method, path, int(status)))
        self.endInsertRows()
        if len(self._calls) > self._limit:
            self.beginRemoveRows(QModelIndex(), self._limit, len(self._calls) - 1)
            del self._calls[self._limit :]
            self.endRemoveRows()

    def outcome(self, status: int) -> str:
        if status < 400:
            return self._texts._("%(status)s OK", status=status)
        if status < 500:
            return self._texts._("%(status)s refused", status=status)
        return self._texts._("%(status)s error", status=status)

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008, N802 - Qt API
        return 0 if parent.isValid() else len(self._calls)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008, N802 - Qt API
        return 0 if parent.isValid() else len(CALL_COLUMNS)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        when, method, path, status = self._calls[index.row()]
        column = CALL_COLUMNS[index.column()]
        if role == Qt.ItemDataRole.DisplayRole:
            return {"time": when, "method": method, "path": path, "outcome": self.outcome(status)}[column]
        if role == Qt.ItemDataRole.ForegroundRole and column == "outcome":
            from PySide6.QtGui import QColor

            return QColor("#1e7b34") if status < 400 else QColor("#b3261e")
        return None

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:  # noqa: N802
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return self._texts.text(CALL_HEADERS[CALL_COLUMNS[section]])
        return None
