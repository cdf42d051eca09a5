"""Logging for the desktop app: plain lines to stderr, with known secrets masked as a last defence.

The code never logs the bridge token, codes, verifiers or access tokens; the filter is there so
a mistake (or a third-party library's message) cannot leak the bridge token either.
"""

from __future__ import annotations

import logging
import sys

MASK = "[redacted]"


class RedactSecrets(logging.Filter):
    def __init__(self, secrets: list[str] | None = None) -> None:
        super().__init__()
        self.secrets = [s for s in (secrets or []) if s]

    def add(self, secret: str) -> None:
        if secret:
            self.secrets.append(secret)

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.secrets:
            return True
        message = record.getMessage()
        if any(s in message for s in self.secrets):
            for secret in self.secrets:
                message = message.replace(secret, MASK)
            record.msg, record.args = message, None
        return True


def configure(level: str = "INFO") -> RedactSecrets:
    redact = RedactSecrets()
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(redact)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    logging.getLogger("httpx").setLevel(logging.WARNING)  # its INFO lines carry full URLs
    logging.getLogger("httpcore").setLevel(logging.WARNING)
    return redact
