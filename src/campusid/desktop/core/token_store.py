"""Where the session's tokens live: the OS keyring, or a 0600 file that says so.

The fallback is chosen only when no keyring backend works (headless servers, containers, tests);
it is reported through ``TokenStore.kind``/``detail`` and a warning so nobody mistakes it for the
keyring.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from pathlib import Path
from typing import Any, Protocol

import keyring
import keyring.errors

log = logging.getLogger(__name__)

SERVICE = "campusid-desktop"
TOKEN_FILE = "tokens.json"


class TokenStore(Protocol):
    kind: str
    detail: str

    def load(self) -> dict[str, Any] | None: ...
    def save(self, data: dict[str, Any]) -> None: ...
    def clear(self) -> None: ...


class KeyringTokenStore:
    kind = "keyring"

    def __init__(self, account: str) -> None:
        self._account = account
        self.detail = f"OS keyring ({type(keyring.get_keyring()).__name__})"

    def load(self) -> dict[str, Any] | None:
        raw = keyring.get_password(SERVICE, self._account)
        return _decode(raw)

    def save(self, data: dict[str, Any]) -> None:
        keyring.set_password(SERVICE, self._account, json.dumps(data))

    def clear(self) -> None:
        with contextlib.suppress(keyring.errors.PasswordDeleteError):
            keyring.delete_password(SERVICE, self._account)


class FileTokenStore:
    """A JSON file readable by its owner only (mode 0600), replaced atomically on every save."""

    kind = "file"

    def __init__(self, path: Path, reason: str) -> None:
        self.path = path
        self.detail = f"file {path} (mode 0600), because {reason}"

    def load(self) -> dict[str, Any] | None:
        try:
            raw = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        return _decode(raw)

    def save(self, data: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.fchmod(fd, 0o600)  # the umask or an older file must not widen it
            os.write(fd, json.dumps(data).encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self.path)

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)


def _decode(raw: str | None) -> dict[str, Any] | None:
    if not raw:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        log.warning("stored session is unreadable; ignoring it")
        return None
    return value if isinstance(value, dict) else None


def open_token_store(data_dir: Path, account: str) -> TokenStore:
    """The OS keyring when a backend works, else the 0600 file in ``data_dir`` (with the reason logged)."""
    try:
        backend = keyring.get_keyring()
        if getattr(backend, "priority", 0) <= 0:
            raise keyring.errors.NoKeyringError(f"no usable keyring backend ({type(backend).__name__})")
        keyring.get_password(SERVICE, account)  # probe: a locked or absent service fails here
        return KeyringTokenStore(account)
    except Exception as exc:  # any backend failure means: fall back, and say so
        reason = f"no OS keyring is available ({type(exc).__name__})"
    store = FileTokenStore(Path(data_dir) / TOKEN_FILE, reason)
    log.warning("tokens are kept in %s", store.detail)
    return store
