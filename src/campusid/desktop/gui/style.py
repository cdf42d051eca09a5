"""The window's look: a calm light theme and an icon drawn in code (no image files to ship)."""

from __future__ import annotations

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QFont, QIcon, QPainter, QPixmap

ACCENT = "#1f5fbf"

STYLE_SHEET = f"""
QWidget#root {{ background: #f4f6f9; }}
QLabel {{ color: #1f2933; font-size: 13px; }}
QLabel#appTitle {{ font-size: 20px; font-weight: 600; color: #102a43; }}
QLabel#userLabel {{ font-size: 13px; color: #334e68; padding-right: 8px; }}
QLabel#cardTitle {{ font-size: 15px; font-weight: 600; color: #102a43; }}
QLabel#muted {{ color: #627d98; font-size: 12px; }}
QLabel#empty {{ color: #627d98; font-size: 13px; padding: 24px; }}
QLabel#gpaTitle {{ font-size: 13px; font-weight: 600; color: #102a43; }}
QLabel#gpaOverall {{ font-size: 34px; font-weight: 600; color: {ACCENT}; }}
QLabel#gpaTerm {{ font-weight: 600; }}
QFrame[card="true"] {{ background: #ffffff; border: 1px solid #d9e2ec; border-radius: 8px; }}
QFrame#gpaPanel {{ background: #f0f4fa; border: 1px solid #d9e2ec; border-radius: 6px; }}
QFrame#banner {{ border-radius: 6px; background: #fdecea; border: 1px solid #f5c2bd; }}
QFrame#banner[kind="info"] {{ background: #e8f1fb; border: 1px solid #b9d3f3; }}
QFrame#waiting {{ border-radius: 6px; background: #e8f1fb; border: 1px solid #b9d3f3; }}
QPushButton {{
    background: #ffffff; color: #1f2933; border: 1px solid #bcccdc; border-radius: 5px;
    padding: 6px 14px; font-size: 13px;
}}
QPushButton:hover {{ background: #f0f4f8; }}
QPushButton:disabled {{ color: #9fb3c8; border-color: #d9e2ec; }}
QPushButton#primary {{ background: {ACCENT}; color: #ffffff; border: 1px solid {ACCENT}; font-weight: 600; }}
QPushButton#primary:disabled {{ background: #9fb3c8; border-color: #9fb3c8; }}
QPushButton#flat {{ border: none; background: transparent; color: #334e68; }}
QTableView {{
    background: #ffffff; alternate-background-color: #f7f9fc; border: 1px solid #e4e7eb;
    border-radius: 4px; font-size: 13px; selection-background-color: #d6e4f7; selection-color: #102a43;
}}
QHeaderView::section {{
    background: #f0f4f8; color: #334e68; font-weight: 600; border: none;
    border-bottom: 1px solid #d9e2ec; padding: 6px 8px;
}}
QTableView::item {{ padding: 4px 8px; }}
QProgressBar {{ border: 1px solid #bcccdc; border-radius: 4px; background: #ffffff; max-height: 8px; }}
QProgressBar::chunk {{ background: {ACCENT}; }}
QStatusBar {{ color: #627d98; font-size: 12px; }}
"""


def app_icon() -> QIcon:
    pixmap = QPixmap(64, 64)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setBrush(QColor(ACCENT))
    painter.setPen(Qt.PenStyle.NoPen)
    painter.drawRoundedRect(QRectF(2, 2, 60, 60), 14, 14)
    painter.setPen(QColor("#ffffff"))
    font = QFont()
    font.setPixelSize(30)
    font.setBold(True)
    painter.setFont(font)
    painter.drawText(QRectF(0, 0, 64, 64), Qt.AlignmentFlag.AlignCenter, "ID")
    painter.end()
    return QIcon(pixmap)
