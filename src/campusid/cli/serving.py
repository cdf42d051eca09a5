"""How `campusid serve` and `campusid demo` run the server: uvicorn in this process or under its
supervisor, where the worker processes' figures are kept (idp/metrics.py), SIGTERM before
uvicorn takes the signals over, and JSON log lines from the start. Process plumbing only: the
commands themselves are serve.py."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import tempfile

from campusid.cli.common import err, say
from campusid.idp import logs as _logs
from campusid.idp.settings import Settings, SettingsError, log_format

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"  # read by idp/metrics.py in each worker
# the logger idp/logs.py configures for the commands' own lines (serve's banner, its warnings)
log = logging.getLogger("campusid.cli")


def run_server(cfg: Settings, host: str, port: int, workers: int) -> None:
    """One way to serve, whatever the number of workers: uvicorn builds the app with
    `campusid.idp.asgi:app_factory` from the environment, in this process (one worker) or in each
    worker process under uvicorn's supervisor, which restarts a worker that dies and stops them
    gracefully on SIGTERM/SIGINT."""
    import uvicorn

    if workers > 1:
        if not cfg.redis_url:
            warn(
                cfg,
                "several workers without CAMPUSID_REDIS_URL keep separate rate-limit "
                "counters, so each limit is multiplied by the number of workers",
            )
        if cfg.database_url.startswith("sqlite"):
            warn(cfg, "several workers on SQLite share one file; use PostgreSQL to scale out")
    # The factory reads the settings from the environment; the issuer's default depends on --port.
    os.environ["CAMPUSID_ISSUER"] = cfg.issuer.canonical
    log_options = {"log_config": _logs.configure("json")} if cfg.log_format == "json" else {}
    uvicorn.run(
        "campusid.idp.asgi:app_factory",
        factory=True,
        workers=workers,
        host=host,
        port=port,
        proxy_headers=False,  # X-Forwarded-For is read by the app, from trusted proxies only
        server_header=False,
        log_level="warning",
        access_log=False,
        **log_options,
    )


def warn(cfg: Settings, message: str) -> None:
    if cfg.log_format == "json":
        log.warning(message)
    else:
        say(("warning:", "yellow"), " ", message, console=err)


class _Terminated(Exception):
    """SIGTERM, raised where the process is, so that what serve set up is undone first."""


def _raise_terminated(signum, frame) -> None:
    raise _Terminated()


def figures_in_memory() -> None:
    """One worker's figures stay in its memory (idp/metrics.py): no multiprocess directory, not
    even one inherited from the environment. Before anything imports prometheus-client."""
    os.environ.pop(MULTIPROC_ENV, None)


@contextlib.contextmanager
def metrics_dir(workers: int):
    """Where this serve run's figures live (idp/metrics.py). One worker keeps them in its memory:
    prometheus-client's plain values, with no file to write on each update (a third of the
    figures' cost per request, bench/README.md "Metrics on and off"). Several workers count in
    files of their own under a fresh private directory (multiprocess mode), set before anything
    imports prometheus-client and removed when serving ends; a SIGTERM before uvicorn's supervisor
    takes over the signals is raised here, so that the directory is removed first, and then ends
    the process as before."""
    if workers <= 1:
        figures_in_memory()
        yield None
        return
    path = tempfile.mkdtemp(prefix="campusid-metrics-")  # mode 0700
    os.environ[MULTIPROC_ENV] = path
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    terminated = False
    try:
        yield path
    except _Terminated:
        terminated = True
    finally:
        os.environ.pop(MULTIPROC_ENV, None)
        shutil.rmtree(path, ignore_errors=True)
        signal.signal(signal.SIGTERM, previous)
    if terminated:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.raise_signal(signal.SIGTERM)


def early_logging() -> None:
    """JSON log lines from the start when CAMPUSID_LOG_FORMAT=json (a bad value is reported by
    the settings, as a clear error)."""
    try:
        fmt = log_format(os.environ.get("CAMPUSID_LOG_FORMAT"))
    except SettingsError:
        return
    if fmt == "json":
        _logs.configure("json")
