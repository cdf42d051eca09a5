"""Log lines: `text` (the default) or, with CAMPUSID_LOG_FORMAT=json, one JSON object per line on
stderr with `time`, `level`, `event`, `request_id` and, for a request's line, `method`, `route`,
`status`, `duration_ms` and `client_id` where known.

The request id of the request being served is in REQUEST_ID (set by the request layer,
idp/web/observe.py), so every line logged while serving it carries it. No line holds a password,
secret, code, verifier or token: request lines name the route *template*, never the raw path or
query, and no header is logged.
"""

from __future__ import annotations

import json
import logging
import logging.config
import time
from contextvars import ContextVar

REQUEST_ID: ContextVar[str | None] = ContextVar("campusid_request_id", default=None)
ACCESS_LOGGER = "campusid.access"
# the request line's fields, passed as `extra` to the access logger
REQUEST_FIELDS = ("method", "route", "status", "duration_ms", "client_id")


class JsonFormatter(logging.Formatter):
    """One JSON object per record (an exception's traceback is one string field of it)."""

    def format(self, record: logging.LogRecord) -> str:
        seconds = record.created
        line = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{int(seconds % 1 * 1000):03d}Z",
            "level": record.levelname.lower(),
            "event": record.getMessage(),
            "logger": record.name,
            "request_id": getattr(record, "request_id", None) or REQUEST_ID.get(),
        }
        for key in REQUEST_FIELDS:
            value = getattr(record, key, None)
            if value is not None:
                line[key] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


def log_config(fmt: str, level: str = "WARNING") -> dict:
    """A logging.config dictionary for `fmt` ("text" or "json"), for this process and for each of
    uvicorn's workers (`uvicorn.run(log_config=...)`)."""
    formatter = (
        {"()": f"{__name__}.JsonFormatter"}
        if fmt == "json"
        else {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}
    )
    handler = {"class": "logging.StreamHandler", "formatter": "main", "stream": "ext://sys.stderr"}
    quiet = {"handlers": ["stderr"], "level": level, "propagate": False}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"main": formatter},
        "handlers": {"stderr": handler},
        "root": {"handlers": ["stderr"], "level": level},
        "loggers": {
            "uvicorn": quiet,
            "uvicorn.error": quiet,
            "uvicorn.access": {"handlers": [], "level": "CRITICAL", "propagate": False},
            "campusid.cli": {"level": "INFO"},  # serve's banner
            ACCESS_LOGGER: {"level": "INFO"},  # its lines are on with json only (idp/web/observe.py)
        },
    }


def configure(fmt: str) -> dict:
    """Configure this process's logging for `fmt`; returns the dictionary (for uvicorn)."""
    config = log_config(fmt)
    logging.config.dictConfig(config)
    return config
