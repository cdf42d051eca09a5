"""The desktop application: one core, the bridge on a thread, the window, the tray, one instance."""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence

from PySide6.QtCore import QLocale, QObject, Signal
from PySide6.QtWidgets import QApplication, QMenu, QSystemTrayIcon

from campusid.i18n import Translator, translator

from ..bridge.settings import BridgeSettings
from ..config import DesktopSettings
from ..core import DesktopCore
from .bridge_host import BridgeHost
from .language import interface_language
from .single_instance import InstanceServer, hand_over, instance_name
from .style import app_icon
from .window import MainWindow

log = logging.getLogger(__name__)


def interface_texts() -> Translator:
    """The window's language from the system locale (LC_ALL/LC_MESSAGES/LANG override it)."""
    return translator(interface_language(QLocale.system().name()))


class DesktopApp(QObject):
    """Wires core, bridge, window and tray together; :meth:`quit` stops the bridge."""

    quitting = Signal()

    def __init__(
        self,
        core: DesktopCore,
        bridge: BridgeSettings | None,
        bridge_error: Exception | None,
        *,
        texts: Translator | None = None,
        tray: bool | None = None,
    ) -> None:
        super().__init__()
        self.core = core
        self.texts = texts or interface_texts()
        self.bridge = BridgeHost(core, bridge, bridge_error)
        self.instance: InstanceServer | None = None
        self.window = MainWindow(core, self.bridge, self.texts)
        self.window.close_requested.connect(self._window_closed)
        use_tray = QSystemTrayIcon.isSystemTrayAvailable() if tray is None else tray
        self.tray = self._make_tray() if use_tray else None
        self.window.hide_on_close = self.tray is not None
        self._stopped = False

    def start(self) -> None:
        self.bridge.start()
        self.window.refresh_bridge_status()
        if self.tray is not None:
            self.tray.show()
        self.window.show()

    def claim_instance(self, name: str) -> bool:
        """Listen for later starts (they ask this window to come to the front)."""
        self.instance = InstanceServer(name)
        self.instance.show_requested.connect(self.window.bring_to_front)
        return self.instance.listen()

    def _make_tray(self) -> QSystemTrayIcon:
        tray = QSystemTrayIcon(app_icon(), self)
        tray.setToolTip(self.texts._("CampusID Desktop – bridge running"))
        menu = QMenu()
        menu.addAction(self.texts._("Show window"), self.window.bring_to_front)
        menu.addSeparator()
        menu.addAction(self.texts._("Quit"), self.quit)
        tray.setContextMenu(menu)
        self._tray_menu = menu  # the tray does not own its menu
        tray.activated.connect(
            lambda reason: self.window.bring_to_front() if reason == QSystemTrayIcon.ActivationReason.Trigger else None
        )
        return tray

    def _window_closed(self) -> None:
        if self.tray is None:
            self.quit()
        elif self.bridge.running:
            self.tray.showMessage(
                self.texts._("CampusID Desktop"),
                self.texts._(
                    "CampusID Desktop keeps running in the tray so scripts can reach the bridge. "
                    "Choose Quit from the tray menu to stop it."
                ),
                app_icon(),
                5000,
            )

    def quit(self) -> None:
        """Stop the bridge and leave the event loop (the tray's Quit, or closing without a tray)."""
        if self._stopped:
            return
        self._stopped = True
        self.bridge.stop()
        self.window.refresh_bridge_status()
        if self.instance is not None:
            self.instance.close()
        if self.tray is not None:
            self.tray.hide()
        self.window.shutdown()
        self.window.hide_on_close = False
        self.window.close()
        self.quitting.emit()  # main() ends the event loop on this


def main(
    bridge: BridgeSettings | None,
    bridge_error: Exception | None,
    argv: Sequence[str] | None = None,
    *,
    settings: DesktopSettings | None = None,
) -> int:
    """Run the window; ``0`` also when another instance was asked to show itself instead.

    ``settings`` are those the command read at start (read from the environment when not given).
    """
    app = QApplication.instance() or QApplication(list(argv if argv is not None else sys.argv[:1]))
    app.setApplicationName("campusid-desktop")
    app.setQuitOnLastWindowClosed(False)  # DesktopApp decides: keep running in the tray, or quit
    settings = settings or DesktopSettings.from_env()
    texts = interface_texts()
    name = instance_name(settings.data_dir)
    if hand_over(name):
        handed = texts._("CampusID Desktop is already running; its window has been brought to the front.")
        print(f"campusid-desktop: {handed}", flush=True)
        return 0
    desktop = DesktopApp(DesktopCore(settings), bridge, bridge_error, texts=texts)
    if not desktop.claim_instance(name):
        log.warning("could not listen for other starts of the app (%s)", name)
    desktop.quitting.connect(app.quit)
    desktop.start()
    code = app.exec()
    desktop.quit()
    return int(code)
