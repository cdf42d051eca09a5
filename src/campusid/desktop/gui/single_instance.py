"""One window per user and data directory: a second start hands over to the first and exits.

The first instance listens on a local socket (a Unix socket or a Windows named pipe) named after
the user and the data directory; a second one connects, sends ``show`` and waits for ``ok``.
"""

from __future__ import annotations

import getpass
import hashlib
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtNetwork import QLocalServer, QLocalSocket

SHOW = b"show\n"
ACK = b"ok\n"


def instance_name(data_dir: Path) -> str:
    digest = hashlib.sha256(str(Path(data_dir).resolve()).encode()).hexdigest()[:16]
    user = "".join(c for c in getpass.getuser() if c.isalnum())[:32] or "user"
    return f"campusid-desktop-{user}-{digest}"


def hand_over(name: str, timeout_ms: int = 3000) -> bool:
    """Ask a running instance to show its window; ``True`` when it answered."""
    socket = QLocalSocket()
    socket.connectToServer(name)
    if not socket.waitForConnected(timeout_ms):
        return False
    socket.write(SHOW)
    socket.waitForBytesWritten(timeout_ms)
    answered = False
    while socket.waitForReadyRead(timeout_ms):
        if bytes(socket.readAll().data()).startswith(ACK):
            answered = True
            break
    socket.disconnectFromServer()
    return answered


class InstanceServer(QObject):
    show_requested = Signal()

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self._server = QLocalServer(self)
        self._server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        self._server.newConnection.connect(self._accept)

    def listen(self) -> bool:
        if self._server.listen(self.name):
            return True
        # Nobody answered hand_over, so a socket left by a crashed instance is stale: remove it.
        QLocalServer.removeServer(self.name)
        return self._server.listen(self.name)

    def close(self) -> None:
        self._server.close()

    def _accept(self) -> None:
        while self._server.hasPendingConnections():
            socket = self._server.nextPendingConnection()
            socket.readyRead.connect(lambda s=socket: self._read(s))
            socket.disconnected.connect(socket.deleteLater)

    def _read(self, socket: QLocalSocket) -> None:
        if bytes(socket.readAll().data()).startswith(SHOW.strip()):
            socket.write(ACK)
            socket.flush()
            self.show_requested.emit()
