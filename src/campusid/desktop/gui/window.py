"""The main window: who is signed in, the grades with their GPA, and the bridge with its recent calls.

The window only drives :class:`DesktopCore`; every slow call (sign-in, sync, sign-out) runs off
the GUI thread and comes back through :class:`CoreRelay`.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from PySide6.QtCore import QSortFilterProxyModel, Qt, Signal
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMainWindow,
    QProgressBar,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from campusid.i18n import Translator

from ..core import DesktopCore, GradeSnapshot, SessionState
from ..core import events as ev
from ..core.errors import CoreError
from ..core.gpa import GPASummary, credit_weighted_gpa, format_credits, format_gpa
from .bridge_host import BridgeHost
from .messages import SESSION_REVOKED, describe_error
from .models import SORT_ROLE, BridgeCallsModel, GradesModel
from .relay import CoreRelay
from .style import STYLE_SHEET, app_icon


def _card(name: str) -> tuple[QFrame, QVBoxLayout]:
    frame = QFrame()
    frame.setObjectName(name)
    frame.setProperty("card", True)
    layout = QVBoxLayout(frame)
    layout.setContentsMargins(16, 14, 16, 14)
    layout.setSpacing(10)
    return frame, layout


def _label(text: str = "", name: str | None = None, *, wrap: bool = False) -> QLabel:
    label = QLabel(text)
    if name:
        label.setObjectName(name)
    label.setWordWrap(wrap)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label


class MainWindow(QMainWindow):
    close_requested = Signal()  # the window was closed by the person (the app decides: tray or quit)

    def __init__(self, core: DesktopCore, bridge: BridgeHost, texts: Translator) -> None:
        super().__init__()
        self.core, self.bridge, self.t = core, bridge, texts
        self.hide_on_close = False
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="campusid-gui")
        self.relay = CoreRelay(core.events)
        self.relay.event.connect(self._on_event)
        self._login: Future[Any] | None = None
        self._syncing = False
        self.gpa: GPASummary = credit_weighted_gpa([])

        self.setWindowTitle(texts._("CampusID Desktop"))
        self.setWindowIcon(app_icon())
        self.setStyleSheet(STYLE_SHEET)
        self.resize(1120, 720)
        root = QWidget()
        root.setObjectName("root")
        self.setCentralWidget(root)
        layout = QVBoxLayout(root)
        layout.setContentsMargins(20, 16, 20, 16)
        layout.setSpacing(12)
        layout.addLayout(self._build_header())
        layout.addWidget(self._build_banner())
        layout.addWidget(self._build_waiting())
        layout.addWidget(self._build_grades(), 1)
        layout.addWidget(self._build_bridge())
        self.statusBar().showMessage(
            texts._("Sign-in tokens are kept in the %(detail)s", detail=core.token_store.detail)
        )

        for event in list(core.events.recent):  # calls that happened before the window existed
            if event.kind == ev.BRIDGE_CALL:
                self._on_event(event)
        self.refresh_bridge_status()
        self.load_grades(core.cache.load())
        self.apply_state()

    # -- building ----------------------------------------------------------------------------
    def _build_header(self) -> QHBoxLayout:
        row = QHBoxLayout()
        title = QLabel(self.t._("CampusID Desktop"))
        title.setObjectName("appTitle")
        row.addWidget(title)
        row.addStretch(1)
        self.user_label = _label(name="userLabel")
        self.sign_in_button = QPushButton(self.t._("Sign in"))
        self.sign_in_button.setObjectName("primary")
        self.sign_out_button = QPushButton(self.t._("Sign out"))
        self.sign_in_button.clicked.connect(self.sign_in)
        self.sign_out_button.clicked.connect(self.sign_out)
        for widget in (self.user_label, self.sign_in_button, self.sign_out_button):
            row.addWidget(widget)
        return row

    def _build_banner(self) -> QFrame:
        self.banner = QFrame()
        self.banner.setObjectName("banner")
        row = QHBoxLayout(self.banner)
        row.setContentsMargins(14, 10, 10, 10)
        self.message_label = _label(name="bannerText", wrap=True)
        dismiss = QPushButton(self.t._("Dismiss"))
        dismiss.setObjectName("flat")
        dismiss.clicked.connect(self.clear_message)
        row.addWidget(self.message_label, 1)
        row.addWidget(dismiss)
        self.banner.hide()
        return self.banner

    def _build_waiting(self) -> QFrame:
        self.waiting_panel = QFrame()
        self.waiting_panel.setObjectName("waiting")
        row = QHBoxLayout(self.waiting_panel)
        row.setContentsMargins(14, 10, 10, 10)
        self.waiting_label = _label(
            self.t._(
                "Finish signing in in the browser window that just opened. This window keeps working while you do."
            ),
            wrap=True,
        )
        bar = QProgressBar()
        bar.setRange(0, 0)
        bar.setFixedWidth(140)
        bar.setTextVisible(False)
        self.cancel_button = QPushButton(self.t._("Cancel sign-in"))
        self.cancel_button.clicked.connect(self.cancel_sign_in)
        row.addWidget(self.waiting_label, 1)
        row.addWidget(bar)
        row.addWidget(self.cancel_button)
        self.waiting_panel.hide()
        return self.waiting_panel

    def _build_grades(self) -> QWidget:
        card, layout = _card("gradesCard")
        head = QHBoxLayout()
        title = QLabel(self.t._("Grades"))
        title.setObjectName("cardTitle")
        self.last_sync_label = _label(name="muted")
        self.sync_progress = QProgressBar()
        self.sync_progress.setRange(0, 0)
        self.sync_progress.setFixedWidth(120)
        self.sync_progress.setTextVisible(False)
        self.sync_progress.hide()
        self.sync_button = QPushButton(self.t._("Sync now"))
        self.sync_button.clicked.connect(self.sync_now)
        head.addWidget(title)
        head.addSpacing(12)
        head.addWidget(self.last_sync_label)
        head.addStretch(1)
        head.addWidget(self.sync_progress)
        head.addWidget(self.sync_button)
        layout.addLayout(head)

        body = QHBoxLayout()
        body.setSpacing(14)
        self.grades_model = GradesModel(self.t)
        self.grades_proxy = QSortFilterProxyModel(self)
        self.grades_proxy.setSourceModel(self.grades_model)
        self.grades_proxy.setSortRole(SORT_ROLE)
        self.grades_view = QTableView()
        self.grades_view.setModel(self.grades_proxy)
        self.grades_view.setSortingEnabled(True)
        self.grades_view.sortByColumn(2, Qt.SortOrder.AscendingOrder)
        self._table_style(self.grades_view)
        header = self.grades_view.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self.grades_empty = _label(name="empty", wrap=True)
        self.grades_empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        table_box = QVBoxLayout()
        table_box.addWidget(self.grades_view, 1)
        table_box.addWidget(self.grades_empty, 1)
        body.addLayout(table_box, 1)
        body.addWidget(self._build_gpa())
        layout.addLayout(body, 1)
        return card

    def _build_gpa(self) -> QFrame:
        panel = QFrame()
        panel.setObjectName("gpaPanel")
        panel.setFixedWidth(230)
        layout = QVBoxLayout(panel)
        layout.setContentsMargins(14, 12, 14, 12)
        title = QLabel(self.t._("Grade point average"))
        title.setObjectName("gpaTitle")
        note = QLabel(self.t._("Credit-weighted"))
        note.setObjectName("muted")
        self.gpa_overall_label = _label(name="gpaOverall")
        self.gpa_credits_label = _label(name="muted")
        self.gpa_terms = QGridLayout()
        self.gpa_terms.setHorizontalSpacing(10)
        self.gpa_terms.setVerticalSpacing(6)
        for widget in (title, note, self.gpa_overall_label, self.gpa_credits_label):
            layout.addWidget(widget)
        layout.addSpacing(8)
        layout.addLayout(self.gpa_terms)
        layout.addStretch(1)
        return panel

    def _build_bridge(self) -> QWidget:
        card, layout = _card("bridgeCard")
        head = QHBoxLayout()
        title = QLabel(self.t._("Automation bridge"))
        title.setObjectName("cardTitle")
        self.bridge_dot = QLabel("\u25cf")
        self.bridge_status_label = _label(wrap=True)
        head.addWidget(title)
        head.addSpacing(12)
        head.addWidget(self.bridge_dot)
        head.addWidget(self.bridge_status_label, 1)
        layout.addLayout(head)
        calls_title = QLabel(self.t._("Recent calls"))
        calls_title.setObjectName("muted")
        layout.addWidget(calls_title)
        self.calls_model = BridgeCallsModel(self.t)
        self.calls_view = QTableView()
        self.calls_view.setModel(self.calls_model)
        self._table_style(self.calls_view)
        self.calls_view.setFixedHeight(150)
        header = self.calls_view.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        self.calls_empty = _label(name="empty")
        layout.addWidget(self.calls_view)
        layout.addWidget(self.calls_empty)
        return card

    @staticmethod
    def _table_style(view: QTableView) -> None:
        view.setAlternatingRowColors(True)
        view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        view.verticalHeader().hide()
        view.setShowGrid(False)
        view.horizontalHeader().setHighlightSections(False)
        view.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        view.horizontalHeader().setDefaultAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)

    # -- state -------------------------------------------------------------------------------
    def apply_state(self) -> None:
        state = self.core.session.state
        session = self.core.session.current
        waiting = state in (SessionState.WAITING_FOR_BROWSER, SessionState.WAITING_FOR_DEVICE)
        signed_in = session is not None
        if waiting:
            self.user_label.setText(self.t._("Waiting for the browser sign-in…"))
        elif signed_in:
            name = session.user_name or self.core.cache.load().student_name
            self.user_label.setText(self.t._("Signed in as %(name)s", name=name) if name else self.t._("Signed in"))
        else:
            self.user_label.setText(self.t._("Not signed in"))
        self.waiting_panel.setVisible(waiting)
        self.sign_in_button.setVisible(not signed_in or waiting)
        self.sign_in_button.setEnabled(not waiting)
        self.sign_out_button.setVisible(signed_in and not waiting)
        self.sync_button.setEnabled(signed_in and not self._syncing)
        self._show_empty_hint()

    def load_grades(self, snapshot: GradeSnapshot) -> None:
        self.grades_model.set_grades(snapshot.grades)
        self.gpa = credit_weighted_gpa(snapshot.grades)
        if snapshot.synced_at is None:
            self.last_sync_label.setText(self.t._("Not synced yet"))
        else:
            when = self.t.moment(snapshot.synced_at.astimezone())
            self.last_sync_label.setText(self.t._("Last synced %(when)s", when=when))
        self._show_gpa()
        self._show_empty_hint()

    def _show_gpa(self) -> None:
        while self.gpa_terms.count():
            item = self.gpa_terms.takeAt(0)
            if item.widget():
                item.widget().deleteLater()
        self.gpa_overall_label.setText(format_gpa(self.gpa.overall))
        self.gpa_credits_label.setText(
            f"{self.t._('Overall')} \u00b7 {self.t._('%(credits)s credits', credits=format_credits(self.gpa.credits))}"
        )
        for row, term in enumerate(sorted(self.gpa.terms, key=lambda t: t.term)):
            name = QLabel(term.term)
            credits = QLabel(self.t._("%(credits)s credits", credits=format_credits(term.credits)))
            credits.setObjectName("muted")
            value = QLabel(format_gpa(term.gpa))
            value.setObjectName("gpaTerm")
            value.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            self.gpa_terms.addWidget(name, row, 0)
            self.gpa_terms.addWidget(credits, row, 1)
            self.gpa_terms.addWidget(value, row, 2)

    def term_gpa_text(self) -> dict[str, str]:
        """What the GPA panel shows per term (for tests and accessibility tools)."""
        shown: dict[str, str] = {}
        for row in range(self.gpa_terms.rowCount()):
            name, value = self.gpa_terms.itemAtPosition(row, 0), self.gpa_terms.itemAtPosition(row, 2)
            if name and value:
                shown[name.widget().text()] = value.widget().text()
        return shown

    def _show_empty_hint(self) -> None:
        empty = self.grades_model.rowCount() == 0
        signed_in = self.core.session.current is not None
        if signed_in:
            hint = self.t._("No grades on this computer yet. Select “Sync now” to fetch them.")
        else:
            hint = self.t._("Sign in to see your grades.")
        self.grades_empty.setText(hint)
        self.grades_empty.setVisible(empty)
        self.grades_view.setVisible(not empty)

    def refresh_bridge_status(self) -> None:
        if self.bridge.running:
            text, colour = self.t._("Running at %(address)s", address=self.bridge.address), "#1e7b34"
        elif self.bridge.reason:
            text, colour = self.t._("Not running: %(reason)s", reason=self.bridge.reason), "#b3261e"
        else:
            text, colour = self.t._("Stopped"), "#6b7280"
        self.bridge_status_label.setText(text)
        self.bridge_dot.setStyleSheet(f"color: {colour};")
        address = self.bridge.address or "http://127.0.0.1"
        self.calls_empty.setText(
            self.t._("No calls yet. Scripts and chat bots reach this app at %(address)s.", address=address)
        )
        self._show_calls_hint()

    def _show_calls_hint(self) -> None:
        empty = self.calls_model.rowCount() == 0
        self.calls_empty.setVisible(empty)
        self.calls_view.setVisible(not empty)

    # -- messages ----------------------------------------------------------------------------
    def show_message(self, text: str, *, error: bool = True) -> None:
        self.banner.setProperty("kind", "error" if error else "info")
        self.banner.style().unpolish(self.banner)
        self.banner.style().polish(self.banner)
        self.message_label.setText(text)
        self.banner.show()

    def clear_message(self) -> None:
        self.message_label.clear()
        self.banner.hide()

    def show_error(self, error: BaseException) -> None:
        self.show_message(describe_error(error, self.t))

    # -- actions -----------------------------------------------------------------------------
    def sign_in(self) -> None:
        self.clear_message()
        try:
            future = self.core.start_login()
        except CoreError as exc:
            self.show_error(exc)
            return
        self._login = future
        self.relay.watch(future, self._login_done)
        self.apply_state()

    def _login_done(self, future: Future[Any]) -> None:
        if future is self._login:
            self._login = None
        error = future.exception()
        if error is not None:
            self.show_error(error)
        self.apply_state()

    def cancel_sign_in(self) -> None:
        self.core.session.cancel_login()

    def sync_now(self) -> None:
        self.clear_message()
        try:
            future = self.core.start_sync()
        except CoreError as exc:
            self.show_error(exc)
            return
        self._set_syncing(True)
        self.relay.watch(future, self._sync_done)

    def _sync_done(self, future: Future[GradeSnapshot]) -> None:
        self._set_syncing(False)
        error = future.exception()
        if error is not None:
            self.show_error(error)
        else:
            snapshot = future.result()
            self.load_grades(snapshot)
            count = len(snapshot.grades)
            updated = self.t.ngettext("Grades updated: %(count)s course.", "Grades updated: %(count)s courses.", count)
            self.statusBar().showMessage(updated % {"count": count}, 8000)
        self.apply_state()

    def _set_syncing(self, syncing: bool) -> None:
        self._syncing = syncing
        self.sync_progress.setVisible(syncing)
        if syncing:
            self.last_sync_label.setText(self.t._("Syncing grades…"))
        self.sync_button.setEnabled(not syncing and self.core.session.current is not None)

    def sign_out(self) -> None:
        self.clear_message()
        self.sign_out_button.setEnabled(False)
        self.relay.watch(self._pool.submit(self.core.logout), self._signed_out)

    def _signed_out(self, future: Future[bool]) -> None:
        self.sign_out_button.setEnabled(True)
        self.load_grades(self.core.cache.load())
        self.apply_state()

    # -- core events -------------------------------------------------------------------------
    def _on_event(self, event: ev.Event) -> None:
        if event.kind == ev.BRIDGE_CALL:
            data = event.data
            self.calls_model.add_call(event.at, str(data.get("method")), str(data.get("path")), data.get("status", 0))
            self.calls_view.scrollToTop()
            self._show_calls_hint()
        elif event.kind == ev.STATE_CHANGED:
            self.apply_state()
            if event.data.get("reason") == "session_revoked":  # campusid ended the sign-in
                self.show_message(self.t.text(SESSION_REVOKED))
        elif event.kind == ev.SYNC_STARTED and not self._syncing:
            self._set_syncing(True)  # a sync started by a script through the bridge
        elif event.kind in (ev.SYNC_FINISHED, ev.SYNC_FAILED):
            if event.kind == ev.SYNC_FINISHED:
                self.load_grades(self.core.cache.load())
            self._set_syncing(False)
            self.apply_state()
        elif event.kind == ev.LOGIN_URL_OPENED and not event.data.get("browser_opened", True):
            self.show_message(self.t._("No browser could be opened. Check your default browser, then try again."))

    # -- lifetime ----------------------------------------------------------------------------
    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt API
        if self.hide_on_close:
            event.ignore()
            self.hide()
        else:
            event.accept()
        self.close_requested.emit()

    def bring_to_front(self) -> None:
        self.showNormal()
        self.raise_()
        self.activateWindow()

    def shutdown(self) -> None:
        self.relay.close()
        self._pool.shutdown(wait=False, cancel_futures=True)

    def sorted_grades(self) -> list[list[str]]:
        """The table as it is shown (sorted), one list of cell texts per row."""
        proxy = self.grades_proxy
        return [[proxy.data(proxy.index(r, c)) for c in range(proxy.columnCount())] for r in range(proxy.rowCount())]

    def calls_shown(self) -> list[list[str]]:
        model = self.calls_model
        return [[model.data(model.index(r, c)) for c in range(model.columnCount())] for r in range(model.rowCount())]
