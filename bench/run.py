#!/usr/bin/env python3
"""campusid benchmark, side by side with node-oidc-provider (issue 8).

    python bench/run.py                 # full: campusid on SQLite, on PostgreSQL, node-oidc-provider; 3 runs
    python bench/run.py --quick         # smoke run: 1 run, short rows
    python bench/run.py --only node     # select targets (repeatable or comma-separated)
    python bench/run.py --save          # also write the table to bench/results/<date>-<HHMM>.txt
    python bench/run.py --compare-metrics  # each campusid target also without /metrics, rows interleaved
    python bench/run.py --rows sso,cas_sso --only sqlite,postgres,mama  # CAS SSO beside OIDC SSO, and the CAS peer

Servers are pinned to core 0 and the load generators to core 1 (taskset); for the PostgreSQL target the
local PostgreSQL server is moved to core 1 too and put back afterwards. Simple GET rows are driven
by wrk (with a Lua script that checks every response), flows by bench/loadgen/driver.mjs (undici +
jose, checks every redirect, token response and ID token). See bench/README.md.
Only the standard library is used here, so any Python 3.11 runs it.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import math
import os
import platform
import re
import secrets
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
NODE_OP = BENCH / "node_op"
# The CAS peer (target "mama"): django-mama-cas on Django, served by uvicorn, in a venv of its own.
MAMA = BENCH / "mama_cas"
MAMA_PY = MAMA / ".venv" / "bin" / "python"
LOADGEN = BENCH / "loadgen"
WRK_LUA = BENCH / "wrk" / "check.lua"
SERVER_CORE = "0"
LOAD_CORE = "1"
TARGETS = ("sqlite", "postgres", "node", "mama")  # the default set
# campusid serves with /metrics on (CAMPUSID_METRICS_TOKEN), as a deployment that is watched does;
# its "-nometrics" twin serves without it (the default configuration: no figures collected).
NO_METRICS = "-nometrics"
# --baseline BIN: the same rows against another build of campusid (the code before a change, in a
# venv of its own), interleaved with this one's in the same run: its "-base" targets.
BASE = "-base"
ALL_TARGETS = (
    "sqlite",
    "sqlite" + NO_METRICS,
    "sqlite" + BASE,
    "postgres",
    "postgres" + NO_METRICS,
    "postgres" + BASE,
    "node",
    "mama",
)
TARGET_LABEL = {
    "sqlite": "campusid SQLite",
    "sqlite" + NO_METRICS: "campusid SQLite, no metrics",
    "sqlite" + BASE: "campusid SQLite, baseline build",
    "postgres": "campusid PostgreSQL",
    "postgres" + NO_METRICS: "campusid PostgreSQL, no metrics",
    "postgres" + BASE: "campusid PostgreSQL, baseline build",
    "node": "node-oidc-provider",
    "mama": "django-mama-cas",
}
BASELINE_BIN: str | None = None  # set once, by main(), from --baseline
# --compare-metrics control: the twin serves with /metrics as well, so any difference between the
# two is the method's own (an A/A control for the metrics on/off figures). Set once, by main().
TWIN_HAS_METRICS = False
BENCH_METRICS_TOKEN = "bench-metrics-token-" + "m" * 24
PG_ADMIN_URL = os.environ.get("BENCH_PG_HOST", "127.0.0.1")
PG_PORT = os.environ.get("BENCH_PG_PORT", "5432")
PG_USER = os.environ.get("BENCH_PG_USER", "postgres")
# The login-frequency limits (docs/configuration.md) are per user, per client and per IP; the bench is one user
# from one IP doing thousands of logins, so they are raised (short windows keep the limiter's own
# bookkeeping small: the limiter still runs on every request, it just never says no).
RAISED_LIMITS = {
    "CAMPUSID_LIMIT_FAILED_PER_ACCOUNT": "1000000/second",
    "CAMPUSID_LIMIT_ATTEMPTS_PER_IP": "1000000/second",
    "CAMPUSID_LIMIT_LOGINS_PER_USER_CLIENT": "1000000/second",
    "CAMPUSID_LIMIT_TOKEN_PER_CLIENT": "1000000/second",
}
BENCH_PASSWORD = "bench-Passw0rd-" + "x" * 8
# The CAS SSO row's service: under the CAS app's registered service (campusid) and the peer's pattern.
CAS_SERVICE_ROOT = "https://rp.example/cas/"
CAS_SERVICE = CAS_SERVICE_ROOT + "app?page=1"


def database(target: str) -> str:
    """The database a campusid target uses ("sqlite" or "postgres"), with or without metrics, this
    build or the baseline's."""
    return target.removesuffix(NO_METRICS).removesuffix(BASE)


def cli_of(target: str) -> str:
    """The campusid command a target runs: the baseline build's for a "-base" target."""
    return BASELINE_BIN if target.endswith(BASE) and BASELINE_BIN else campusid_bin()


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def campusid_bin() -> str:
    venv = ROOT / ".venv" / "bin" / "campusid"
    if venv.exists():
        return str(venv)
    found = shutil.which("campusid")
    if not found:
        sys.exit("campusid is not installed (expected .venv/bin/campusid)")
    return found


# ------------------------------------------------------------------------------------------ preflight
def preflight(targets: list[str]) -> None:
    missing = [t for t in ("taskset", "node", "npm", "wrk") if not shutil.which(t)]
    if "wrk" in missing and os.geteuid() == 0 and shutil.which("apt-get"):
        log("wrk missing: apt-get install -y wrk nginx-light")
        subprocess.run(
            ["apt-get", "install", "-y", "-qq", "wrk", "nginx-light"], check=False, stdout=subprocess.DEVNULL
        )
        missing = [t for t in missing if not shutil.which(t)]
    if missing:
        sys.exit(f"missing tools: {', '.join(missing)} (Debian: apt-get install wrk nginx-light util-linux nodejs)")
    if (os.cpu_count() or 1) < 2:
        sys.exit("needs 2 cores: the server is pinned to core 0, the load generator to core 1")
    if "mama" in targets and not MAMA_PY.exists():
        log("python -m venv bench/mama_cas/.venv; pip install -r bench/mama_cas/requirements.txt")
        subprocess.run([sys.executable, "-m", "venv", str(MAMA / ".venv")], check=True)
        subprocess.run([str(MAMA_PY), "-m", "pip", "install", "-q", "-r", str(MAMA / "requirements.txt")], check=True)
    for d in (NODE_OP, LOADGEN):
        if not (d / "node_modules").is_dir():
            log(f"npm ci in {d.relative_to(ROOT)}")
            subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=d, check=True)
    if any(database(t) == "postgres" for t in targets) and not shutil.which("psql"):
        sys.exit("psql not found: PostgreSQL target needs a local server (or use --only sqlite,node)")


# ------------------------------------------------------------------------------------------ RSS
def _tree(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        except (OSError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def _rss_kib(pids: list[int]) -> int:
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


class RssSampler(threading.Thread):
    """Samples the RSS of the server's process tree every 100 ms; peak per labelled phase."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid = pid
        self.phase = "idle"
        self.peaks: dict[str, int] = {}
        self._halt = threading.Event()
        self._pids = _tree(pid)
        self._last_tree = time.monotonic()

    def run(self) -> None:
        while not self._halt.is_set():
            if time.monotonic() - self._last_tree > 1.0:
                self._pids = _tree(self.pid)
                self._last_tree = time.monotonic()
            rss = _rss_kib(self._pids)
            if rss > self.peaks.get(self.phase, 0):
                self.peaks[self.phase] = rss
            self._halt.wait(0.1)

    def stop(self) -> None:
        self._halt.set()
        self.join(2)


# ------------------------------------------------------------------------------------------ background load
class CpuAccount:
    """How much CPU other processes used while the bench ran (other people's tests, etc.).

    busy (user+nice+system of /proc/stat, both cores) minus the CPU of this script and of every child it
    waited for (servers, wrk, the driver, the CLI), and minus the PostgreSQL server's CPU during the
    PostgreSQL target (`ours_extra`: it works for the bench but is not our child). Measured between
    points where no child is running.
    """

    HZ = os.sysconf("SC_CLK_TCK")

    def __init__(self) -> None:
        self.samples: list[tuple[float, float, float]] = []  # (wall, background cpu-seconds, steal seconds)
        self._mark = self._read()

    @classmethod
    def _read(cls) -> tuple[float, float, float, float]:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
        user, nice, system, _idle, _iowait, _irq, _softirq, steal = (fields + [0] * 8)[:8]
        t = os.times()
        ours = t.user + t.system + t.children_user + t.children_system
        return time.monotonic(), (user + nice + system) / cls.HZ, ours, steal / cls.HZ

    def mark(self) -> None:
        self._mark = self._read()

    def sample(self, ours_extra: float = 0.0) -> None:
        w0, b0, o0, s0 = self._mark
        w1, b1, o1, s1 = self._read()
        self.samples.append((w1 - w0, max(0.0, (b1 - b0) - (o1 - o0) - ours_extra), s1 - s0))
        self._mark = (w1, b1, o1, s1)

    def summary(self) -> str:
        if not self.samples:
            return ""
        ncpu = os.cpu_count() or 1
        wall = sum(s[0] for s in self.samples)
        bg = sum(s[1] for s in self.samples) / (wall * ncpu) * 100
        worst = max(s[1] / (s[0] * ncpu) * 100 for s in self.samples if s[0] > 0)
        steal = sum(s[2] for s in self.samples) / (wall * ncpu) * 100
        text = (
            f"other processes used {bg:.0f}% of the {ncpu} cores on average during the runs "
            f"(worst run {worst:.0f}%), hypervisor steal {steal:.0f}%"
        )
        if bg > 10 or worst > 25:
            text += "  <-- NOISY MACHINE: figures are pessimistic and less comparable; rerun when idle"
        return text


# ------------------------------------------------------------------------------------------ PostgreSQL pinning
PG_NAMES = ("postgres", "postmaster")


def _stat_fields(pid: int) -> list[str] | None:
    """/proc/<pid>/stat after the command name: [0] is field 3 (state), [1] ppid, [11..14] utime, stime,
    cutime, cstime, [19] starttime."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    return stat[stat.rindex(")") + 2 :].split()


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _is_pg_root(pid: int) -> bool:
    """A postgres process whose parent is not one: a postmaster, not a backend or auxiliary process."""
    f = _stat_fields(pid)
    return f is not None and _comm(pid) in PG_NAMES and _comm(int(f[1])) not in PG_NAMES


def _cpulist(cpus: set[int]) -> str:
    """{0, 1, 2, 5} -> '0-2,5' (taskset -c syntax)."""
    spans: list[list[int]] = []
    for c in sorted(cpus):
        if spans and c == spans[-1][1] + 1:
            spans[-1][1] = c
        else:
            spans.append([c, c])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


def _taskset(pid: int, cpus: str) -> str:
    """`taskset -a -p -c CPUS PID` (every thread); returns '' on success, else the error."""
    r = subprocess.run(["taskset", "-a", "-p", "-c", cpus, str(pid)], capture_output=True, text=True)
    return "" if r.returncode == 0 else (r.stderr.strip() or f"exit {r.returncode}")


def find_postmaster() -> tuple[int | None, str]:
    """The local PostgreSQL server's postmaster: (pid, how it was found) or (None, why not).

    First the first line of <data_directory>/postmaster.pid (SHOW data_directory over psql), then a scan
    of /proc for postgres processes whose parent is not postgres (preferring the one whose cwd is the
    data directory; the oldest when several remain, as `pgrep -o -x postgres`)."""
    if PG_ADMIN_URL not in ("127.0.0.1", "localhost", "::1") and not PG_ADMIN_URL.startswith("/"):
        return None, f"the server at {PG_ADMIN_URL} is not local"
    data_dir, why = "", ""
    try:
        data_dir = psql("SHOW data_directory")
    except Exception as exc:  # noqa: BLE001 - fall back to the process scan
        why = f"SHOW data_directory: {exc}; "
    if data_dir:
        try:
            pid = int((Path(data_dir) / "postmaster.pid").read_text().split("\n", 1)[0])
            if _is_pg_root(pid):
                return pid, f"{data_dir}/postmaster.pid"
            why += f"{data_dir}/postmaster.pid names {pid}, not a running postmaster; "
        except (OSError, ValueError) as exc:
            why += f"{data_dir}/postmaster.pid unreadable ({exc.__class__.__name__}); "
    roots = [int(e) for e in os.listdir("/proc") if e.isdigit() and _is_pg_root(int(e))]
    if data_dir:
        in_dir = []
        for pid in roots:
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/{pid}/cwd") == data_dir:
                    in_dir.append(pid)
        roots = in_dir or roots
    if not roots:
        return None, why + "no postgres process found"
    pid = min(roots, key=lambda p: int((_stat_fields(p) or [0] * 20)[19]))
    return pid, why + "process scan" + (f" (oldest of {len(roots)} postmasters)" if len(roots) > 1 else "")


class PostgresPin:
    """Puts the local PostgreSQL server on the load-generator core while the PostgreSQL target runs.

    node-oidc-provider keeps its state in memory, so the measured server has core 0 to itself; for a
    like-for-like PostgreSQL column the database (infrastructure, not the server under test) shares core 1
    with the load generator instead of taking CPU from campusid on core 0. The postmaster and every process
    of its tree get `taskset -a -p -c LOAD_CORE` (backends forked later inherit it from the postmaster);
    afterwards each goes back to its previous CPU list, and any process started meanwhile to the
    postmaster's previous list. Not being able to pin is a warning (and a note in the table), not an error.
    """

    HZ = os.sysconf("SC_CLK_TCK")

    def __init__(self) -> None:
        self.pid: int | None = None
        self.attempts = 0
        self.pinned_runs = 0
        self.problem = ""
        self._saved: dict[int, tuple[str, set[int]]] = {}  # pid -> (starttime, CPUs before pinning)
        self._active = False

    @contextlib.contextmanager
    def pinned(self):
        self.attempts += 1
        self._active = False  # set once the postmaster may have been touched (Ctrl-C inside _pin too)
        try:
            yield self._pin()
        finally:
            if self._active:
                self._active = False
                try:
                    self._restore()
                except Exception as exc:  # noqa: BLE001 - must not hide the run's own error
                    log(f"  WARNING: restoring PostgreSQL's CPU affinity failed: {exc}")

    def _fail(self, why: str) -> bool:
        self.problem = why
        log(f"  WARNING: PostgreSQL not pinned to core {LOAD_CORE}: {why}")
        return False

    def _pin(self) -> bool:
        pid, how = find_postmaster()
        if pid is None:
            return self._fail(how)
        self.pid = pid
        # save every process's CPU list before touching the postmaster: a child forked after the
        # postmaster is pinned would show the pinned list as its "original"
        saved: dict[int, tuple[str, set[int]]] = {}
        for p in _tree(pid):
            f = _stat_fields(p)
            with contextlib.suppress(OSError):
                if f is not None:
                    saved[p] = (f[19], os.sched_getaffinity(p))
        if pid not in saved:
            return self._fail(f"cannot read the CPU affinity of postmaster {pid} (found via {how})")
        self._saved = saved
        self._active = True
        err = _taskset(pid, LOAD_CORE)
        if err:
            self._active = False
            return self._fail(f"taskset on postmaster {pid}: {err}")
        self.pinned_runs += 1
        children = 0
        for p in _tree(pid)[1:]:
            if not _taskset(p, LOAD_CORE):  # a backend exiting meanwhile: nothing to do
                children += 1
        log(
            f"  PostgreSQL postmaster {pid} (via {how}) and {children} child process(es) pinned to core "
            f"{LOAD_CORE}, was {_cpulist(saved[pid][1])}"
        )
        return True

    def _restore(self) -> None:
        pid, saved = self.pid, self._saved
        f = _stat_fields(pid)
        if f is None or f[19] != saved[pid][0]:
            log(f"  PostgreSQL postmaster {pid} is gone (restarted?): nothing to restore")
            return
        original = saved[pid][1]
        err = _taskset(pid, _cpulist(original))  # first, so that new backends inherit the old list again
        if err:
            log(f"  WARNING: could not restore postmaster {pid}: {err}")
            log(f"  restore it by hand: taskset -a -p -c {_cpulist(original)} {pid}; same for its children")
            return
        restored = 0
        for p in _tree(pid)[1:]:
            fp = _stat_fields(p)
            if fp is None:
                continue
            was = saved.get(p)
            cpus = was[1] if was is not None and was[0] == fp[19] else original
            if not _taskset(p, _cpulist(cpus)):
                restored += 1
        now = _cpulist(os.sched_getaffinity(pid))
        log(f"  PostgreSQL postmaster {pid} back on CPUs {now}, {restored} child process(es) restored")

    def cpu_seconds(self) -> float | None:
        """CPU seconds used so far by the server: utime+stime of every process of the postmaster's tree
        plus cutime+cstime (what its exited, reaped children used). None when no postmaster is known."""
        if self.pid is None or _stat_fields(self.pid) is None:
            self.pid = find_postmaster()[0]
        if self.pid is None:
            return None
        ticks = 0
        for p in _tree(self.pid):
            f = _stat_fields(p)
            if f is not None:
                ticks += sum(int(x) for x in f[11:15])
        return ticks / self.HZ

    def summary(self) -> str:
        """For the table header: where PostgreSQL ran."""
        if not self.attempts:
            return ""
        if self.pinned_runs == self.attempts:
            return f"PostgreSQL pinned to core {LOAD_CORE} with the load generator"
        if self.pinned_runs == 0:
            return f"PostgreSQL NOT pinned ({self.problem}): it may run on core {SERVER_CORE} beside the server"
        return (
            f"PostgreSQL pinned to core {LOAD_CORE} with the load generator in {self.pinned_runs} of "
            f"{self.attempts} runs only ({self.problem})"
        )


# ------------------------------------------------------------------------------------------ servers
@dataclass
class Server:
    target: str
    issuer: str
    proc: subprocess.Popen
    clients: list[dict]
    user: dict
    log_path: Path
    cleanup: list = field(default_factory=list)
    password_label: str = ""
    password_hash: str | None = None  # the bench user's stored hash (campusid): argon2id alone is measured on it
    env: dict | None = None  # campusid: the environment its commands run with (--purge-load runs one)
    db_name: str | None = None  # campusid on PostgreSQL: its database
    cas: dict | None = None  # its CAS endpoints and the bench service ({login, validate, service}), if it speaks CAS
    rows: tuple[str, ...] | None = None  # the rows it serves (None: every OIDC row, and CAS SSO when `cas`)

    def stop(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        for fn in reversed(self.cleanup):
            try:
                fn()
            except Exception as exc:  # noqa: BLE001 - cleanup must not hide results
                log(f"cleanup: {exc}")


def wait_http(url: str, proc: subprocess.Popen, log_path: Path, timeout: float = 40.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(
                f"server exited with {proc.returncode}; log: {log_path}\n"
                + log_path.read_text(errors="replace")[-2000:]
            )
        try:
            with urllib.request.urlopen(url, timeout=2) as r:  # noqa: S310 - loopback only
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"server did not answer {url} within {timeout}s; log: {log_path}")


def psql(sql: str, db: str = "postgres") -> str:
    r = subprocess.run(
        ["psql", "-h", PG_ADMIN_URL, "-p", PG_PORT, "-U", PG_USER, "-d", db, "-XAtq", "-c", sql],
        capture_output=True,
        text=True,
    )
    if r.returncode:
        raise RuntimeError(f"psql: {r.stderr.strip()}")
    return r.stdout.strip()


def argon2_label(hash_value: str | None) -> str:
    m = re.match(r"\$argon2(id|i|d)\$v=\d+\$m=(\d+),t=(\d+),p=(\d+)\$", hash_value or "")
    if not m:
        return "argon2id"
    kind, mem, t, p = m.groups()
    mem_i = int(mem)
    mem_s = f"{mem_i // 1024} MiB" if mem_i % 1024 == 0 else f"{mem_i / 1024:.0f} MiB"
    return f"argon2{kind} m={mem_s} t={t} p={p}"


# The c=32 full-flow row runs in this many windows of half a row's duration, alternating with as many
# plus one windows of argon2id alone (TargetBench._full_against_argon2).
FULL_WINDOWS, FULL_WINDOWS_QUICK = 4, 2

# argon2id alone: the stored hash verified in a loop on the server core, with the server idle. Run in
# windows between the full-flow row's, it is the bound that row is held against; this VM's speed
# drifts by 10-20 % within seconds, so a figure taken at another time would not be comparable.
ARGON2_ALONE = """
import sys, time
from argon2 import PasswordHasher
stored, password = sys.stdin.read().split("\\n")[:2]
ph, seconds = PasswordHasher(), float(sys.argv[1])
ph.verify(stored, password)
n, t0 = 0, time.perf_counter()
while time.perf_counter() - t0 < seconds:
    ph.verify(stored, password)
    n += 1
print(n / (time.perf_counter() - t0))
"""


def argon2_alone(stored_hash: str, seconds: float) -> float | None:
    """argon2id verifications per second on the server core, the password hasher alone (argon2-cffi,
    the parameters of the stored hash, one thread): what one core allows for password logins."""
    try:
        out = subprocess.run(
            ["taskset", "-c", SERVER_CORE, str(ROOT / ".venv" / "bin" / "python"), "-c", ARGON2_ALONE, str(seconds)],
            input=f"{stored_hash}\n{BENCH_PASSWORD}\n",
            capture_output=True,
            text=True,
            timeout=seconds + 60,
            check=True,
        )
        return float(out.stdout.strip())
    except (subprocess.SubprocessError, ValueError) as exc:
        log(f"  argon2id alone could not be measured: {exc}")
        return None


def parse_json_output(out: str) -> dict:
    try:
        return json.loads(out)
    except ValueError:
        for line in reversed(out.splitlines()):
            if line.startswith("{"):
                return json.loads(line)
        raise


def start_campusid(target: str, workdir: Path, run_no: int) -> Server:
    """Sets up and starts campusid; if that fails or is interrupted (Ctrl-C, SIGTERM) after the PostgreSQL
    database was created, the database is dropped (DROP ... IF EXISTS: harmless when Server.stop did it)."""
    cleanup: list = []
    try:
        return _start_campusid(target, workdir, run_no, cleanup)
    except BaseException:
        for fn in reversed(cleanup):
            with contextlib.suppress(Exception):
                fn()
        raise


def _start_campusid(target: str, workdir: Path, run_no: int, cleanup: list) -> Server:
    port = free_port()
    issuer = f"http://127.0.0.1:{port}"
    data_dir = Path(tempfile.mkdtemp(prefix=f"campusid-{target}-", dir=workdir))
    env = {
        **os.environ,
        **RAISED_LIMITS,
        "CAMPUSID_DATA_DIR": str(data_dir),
        "CAMPUSID_ISSUER": issuer,
        "CAMPUSID_SECRET_KEY": secrets.token_urlsafe(48),
    }
    env.pop("CAMPUSID_DATABASE_URL", None)
    env.pop("CAMPUSID_REDIS_URL", None)
    env.pop("CAMPUSID_METRICS_TOKEN", None)
    if not target.endswith(NO_METRICS) or TWIN_HAS_METRICS:
        env["CAMPUSID_METRICS_TOKEN"] = BENCH_METRICS_TOKEN
    db_name = None
    if database(target) == "postgres":
        # one database per target: the -nometrics twin runs beside its target, never on its database
        db_name = f"campusid_bench_{os.getpid()}_{run_no}_{target.replace('-', '_')}"
        psql(f'DROP DATABASE IF EXISTS "{db_name}"')
        psql(f'CREATE DATABASE "{db_name}"')
        env["CAMPUSID_DATABASE_URL"] = f"postgresql+psycopg://{PG_USER}@{PG_ADMIN_URL}:{PG_PORT}/{db_name}"
        cleanup.append(lambda: psql(f'DROP DATABASE IF EXISTS "{db_name}" WITH (FORCE)'))
    cli = cli_of(target)

    def run_cli(*args: str, stdin: str | None = None) -> str:
        r = subprocess.run([cli, *args], input=stdin, capture_output=True, text=True, env=env)
        if r.returncode:
            raise RuntimeError(f"campusid {' '.join(args)}: exit {r.returncode}\n{r.stderr.strip()[-1500:]}")
        return r.stdout

    admin_pw = secrets.token_urlsafe(16)
    run_cli("users", "add", "admin", "--name", "Admin", "--role", "admin", "--password-stdin", stdin=admin_pw + "\n")
    run_cli(
        "users", "add", "dev", "--name", "Developer", "--role", "developer", "--password-stdin", stdin=admin_pw + "\n"
    )
    run_cli(
        "users",
        "add",
        "bench",
        "--name",
        "Bench User",
        "--student-number",
        "20269999",
        "--password-stdin",
        stdin=BENCH_PASSWORD + "\n",
    )
    clients = []
    for kind, uri in (("web", "https://rp.example/callback"), ("native", "http://127.0.0.1/callback")):
        out = run_cli(
            "apps",
            "create",
            "--name",
            f"Bench {kind}",
            "--type",
            kind,
            "--redirect-uri",
            uri,
            "--owner",
            "dev",
            "--json",
        )
        app = parse_json_output(out)
        cid = app["client_id"]
        run_cli("apps", "submit", cid, "--json")
        run_cli("apps", "approve", cid, "--by", "admin", "--json")
        run_cli("apps", "activate", cid, "--json")
        c = {"client_id": cid, "type": kind, "redirect_uris": [uri]}
        if app.get("client_secret"):
            c["client_secret"] = app["client_secret"]
        clients.append(c)

    # a CAS app for the CAS SSO row (its service is never contacted: the driver reads the redirect)
    run_cli(
        "apps", "create", "--name", "Bench CAS", "--type", "cas", "--service", CAS_SERVICE_ROOT,
        "--scope", "profile", "--owner", "dev", "--client-id", "bench-cas", "--json",
    )  # fmt: skip
    for step in (["submit"], ["approve", "--by", "admin"], ["activate"]):
        run_cli("apps", step[0], "bench-cas", *step[1:], "--json")

    # the password cost, read from the stored hash (shown in the row label)
    hash_value = None
    try:
        if database(target) == "postgres":
            hash_value = psql("SELECT password_hash FROM users WHERE username = 'bench'", db_name)
        else:
            for db in data_dir.rglob("*.db"):
                with sqlite3.connect(db) as con:
                    row = con.execute("SELECT password_hash FROM users WHERE username = 'bench'").fetchone()
                if row:
                    hash_value = row[0]
                    break
    except Exception:  # noqa: BLE001 - the label is informative only
        pass
    return _launch_campusid(target, workdir, run_no, env, clients, hash_value, cleanup, db_name)


def _launch_campusid(
    target: str, workdir: Path, run_no: int, env: dict, clients: list, hash_value: str | None, cleanup: list,
    db_name: str | None, label: str = "",
) -> Server:  # fmt: skip
    """`campusid serve` on the server core, over a data directory (or database) already set up."""
    port = free_port()
    issuer = f"http://127.0.0.1:{port}"
    env = {**env, "CAMPUSID_ISSUER": issuer}
    cli = cli_of(target)
    log_path = workdir / f"{target}{label}-run{run_no}.log"
    logf = open(log_path, "w")  # noqa: SIM115 - closed with the process
    proc = subprocess.Popen(
        ["taskset", "-c", SERVER_CORE, cli, "serve", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=logf,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    server = Server(
        target,
        issuer,
        proc,
        clients,
        {"username": "bench", "password": BENCH_PASSWORD},
        log_path,
        cleanup,
        password_label=argon2_label(hash_value),
        password_hash=hash_value,
        env=env,
        db_name=db_name,
        cas={"login": f"{issuer}/cas/login", "validate": f"{issuer}/cas/p3/serviceValidate", "service": CAS_SERVICE},
    )
    try:
        wait_http(f"{issuer}/.well-known/openid-configuration", proc, log_path)
    except BaseException:  # Ctrl-C too: stop it, drop its database
        server.stop()
        raise
    return server


def start_node(workdir: Path, run_no: int) -> Server:
    port = free_port()
    log_path = workdir / f"node-run{run_no}.log"
    logf = open(log_path, "w")  # noqa: SIM115
    env = {**os.environ, "NODE_ENV": "production"}
    proc = subprocess.Popen(
        ["taskset", "-c", SERVER_CORE, "node", str(NODE_OP / "server.mjs"), "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=logf,
        text=True,
        start_new_session=True,
    )
    line = proc.stdout.readline()
    if not line:
        proc.wait(5)
        raise RuntimeError(f"node-oidc-provider did not start; log: {log_path}")
    info = json.loads(line)
    server = Server(
        "node",
        info["issuer"],
        proc,
        info["clients"],
        {"username": "", "password": ""},
        log_path,
        password_label="passwordless interaction",
    )
    wait_http(f"{info['issuer']}/.well-known/openid-configuration", proc, log_path)
    return server


def start_mama(workdir: Path, run_no: int) -> Server:
    """django-mama-cas on the server core (uvicorn, one process, SQLite), for the CAS SSO row only."""
    port = free_port()
    log_path = workdir / f"mama-run{run_no}.log"
    logf = open(log_path, "w")  # noqa: SIM115 - closed with the process
    data = Path(tempfile.mkdtemp(prefix="mama-", dir=workdir))
    proc = subprocess.Popen(
        ["taskset", "-c", SERVER_CORE, str(MAMA_PY), str(MAMA / "serve.py"), "--port", str(port), "--data", str(data),
         "--password", BENCH_PASSWORD],
        stdout=subprocess.PIPE,
        stderr=logf,
        text=True,
        start_new_session=True,
    )  # fmt: skip
    line = proc.stdout.readline()
    if not line:
        proc.wait(5)
        raise RuntimeError(f"django-mama-cas did not start; log: {log_path}")
    info = json.loads(line)
    server = Server(
        "mama",
        info["issuer"],
        proc,
        [],
        {"username": "bench", "password": BENCH_PASSWORD},
        log_path,
        password_label="Django's PBKDF2",
        cas={**info["cas"], "service": CAS_SERVICE},
        rows=("cas_sso",),
    )
    wait_http(f"{info['cas']['login']}?service=https://rp.example/cas/x", proc, log_path)
    return server


# ------------------------------------------------------------------------------------------ load
def driver(cfg: dict, timeout: float = 300) -> dict:
    if "cpu_pid" in cfg:  # the server's process tree as it is now: the driver reads their CPU time
        cfg = {**cfg, "cpu_pids": _tree(cfg["cpu_pid"]), "clk_tck": os.sysconf("SC_CLK_TCK")}
        del cfg["cpu_pid"]
    r = subprocess.run(
        ["taskset", "-c", LOAD_CORE, "node", str(LOADGEN / "driver.mjs"), json.dumps(cfg)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        return {"ok": False, "errors": 1, "error_samples": [f"driver exit {r.returncode}: {r.stderr[-800:]}"]}
    return json.loads(lines[-1])


def wrk(url: str, path: str, conc: int, duration: float, expect: list[str], auth: str | None = None) -> dict:
    env = {**os.environ, "BENCH_PATH": path, "BENCH_EXPECT": "\t".join(expect)}
    if auth:
        env["BENCH_AUTH"] = auth
    cmd = [
        "taskset",
        "-c",
        LOAD_CORE,
        "wrk",
        "-t1",
        f"-c{conc}",
        f"-d{max(1, round(duration))}s",
        "--timeout",
        "5s",
        "-s",
        str(WRK_LUA),
        url,
    ]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=duration + 60)
    m = re.search(r"^BENCH_RESULT (\{.*\})$", r.stdout, re.M)
    if not m:
        return {
            "ok": False,
            "errors": 1,
            "error_samples": [f"wrk exit {r.returncode}: {r.stdout[-400:]} {r.stderr[-400:]}"],
        }
    res = json.loads(m.group(1))
    errors = res["check_failures"] + res["socket_errors"] + res["non2xx"]
    return {
        "ok": errors == 0 and res["requests"] > 0,
        "count": res["requests"],
        "elapsed": res["duration_us"] / 1e6,
        "rate": res["requests"] / (res["duration_us"] / 1e6),
        "p50_ms": res["p50_us"] / 1000,
        "p99_ms": res["p99_us"] / 1000,
        "errors": errors,
        "error_samples": [res["first_failure"]] if res["first_failure"] else [],
    }


ROWS = ("discovery", "userinfo", "token", "sso", "full", "cas_sso")
# the rows the flow driver runs: it also reports the server's CPU time per operation over the window
FLOW_ROWS = ("token", "sso", "full", "cas_sso")
CLIENT_LABEL = {
    "pool": "wrk for the GET rows, the flow driver's shared keep-alive pool for the flows",
    "oneby1": "one by one (every row through the flow driver; each virtual user its own connection, "
    "one request written per event-loop turn)",
}
ROW_TITLE = {
    "discovery": "discovery GET/s",
    "userinfo": "userinfo GET/s",
    "token": "token exchanges/s (codes minted before)",
    "sso": "SSO flows/s (authorize w/ session + token)",
    "full": "full flows/s with login",
    "cas_sso": "CAS SSO flows/s (/cas/login w/ session + /cas/p3/serviceValidate)",
}


class TargetBench:
    """The rows of one started server. main() interleaves the targets row by row, so that the three
    figures of a row are measured within a minute of each other: this VM's speed drifts by 10-20 %
    over a few minutes, and a target measured minutes after another would carry that drift."""

    def __init__(self, server: Server, args, record_failure) -> None:
        self.server = server
        self.args = args
        self.record_failure = record_failure
        self.base = {
            "issuer": server.issuer,
            "clients": server.clients,
            "user": server.user,
            "warmup": args.warmup,
            "warmup_ops": args.warmup_ops,
            "duration": args.duration,
            "min_ops": args.min_ops,
            "max_duration": args.max_duration,
            "client": args.client,
            "cpu_pid": server.proc.pid,
        }
        self.concs = sorted(args.concurrency, reverse=True)
        self.out: dict = {}
        self.pg_cpu = {"cpu_s": 0.0, "wall_s": 0.0}
        self.sampler = RssSampler(server.proc.pid)
        self.sampler.start()

    def _note(self, row: str, conc: int, res: dict) -> dict:
        target = self.server.target
        if not res.get("ok"):
            self.record_failure(target, row, conc, res)
        self.out.setdefault(row, {})[conc] = res
        rate = res.get("rate")
        log(
            f"  {target:8s} {row:9s} c={conc:<2d} "
            + (
                f"{rate:9.1f}/s p50 {res.get('p50_ms') or 0:7.2f} ms p99 {res.get('p99_ms') or 0:7.2f} ms"
                if rate is not None
                else "no result"
            )
            + (
                f"  ({res['count']} in {res['elapsed']:.1f} s after {res['warmup_s']:.1f} s, "
                f"{res['warmup_ops_done']} ops of warm-up)"
                if "warmup_ops_done" in res and rate is not None
                else ""
            )
            + ("" if res.get("ok") else f"  FAILED {res.get('errors')} {res.get('error_samples', [])[:2]}")
        )
        return res

    def check(self) -> bool:
        """One full flow, one SSO flow, userinfo and a code reuse for each client, before any row."""
        self.sampler.phase = "check"
        chk = {"ok": True}
        if self.server.rows is None:  # an OIDC provider
            chk = driver({**self.base, "mode": "check", "concurrency": 1})
        if chk.get("ok") and self.server.cas:
            chk = driver({**self.base, "mode": "cas-check", "concurrency": 1, "cas": self.server.cas})
        self.sampler.phase = "idle"
        if not chk.get("ok"):
            self.record_failure(self.server.target, "check", 1, chk)
            log(f"  {self.server.target}: correctness check FAILED: {chk.get('error_samples')}")
        return bool(chk.get("ok"))

    def row(self, row: str) -> None:
        """Every concurrency of one row (nothing for a row this server does not serve)."""
        serves = (
            self.server.rows
            if self.server.rows is not None
            else (*ROWS[:-1], *(("cas_sso",) if self.server.cas else ()))
        )
        if row not in serves:
            return
        self.sampler.phase = row
        try:
            getattr(self, f"_{row}")()
        finally:
            self.sampler.phase = "idle"

    def _get_row(self, row: str, path: str, expect: list[str], auth: str | None = None) -> None:
        """A GET row: wrk (one warm-up run, then each concurrency), or with `--client oneby1` the
        flow driver's one-by-one client, warmed up and recorded like every driver row."""
        issuer = self.server.issuer
        if self.args.client == "oneby1":
            for c in self.concs:
                cfg = {**self.base, "mode": "get", "origin": issuer, "path": path, "expect": expect, "concurrency": c}
                self._note(row, c, driver({**cfg, **({"auth": auth} if auth else {})}))
            return
        wrk(issuer, path, max(self.concs), self.args.warmup, expect, auth)
        for c in self.concs:
            self._note(row, c, wrk(issuer, path, c, self.args.duration, expect, auth))

    def _discovery(self) -> None:
        self._get_row("discovery", "/.well-known/openid-configuration", ['"issuer"', json.dumps(self.server.issuer)])

    def _userinfo(self) -> None:
        at = driver({**self.base, "mode": "mint-access-token", "concurrency": 1})
        if not at.get("ok"):
            self.record_failure(self.server.target, "userinfo", 0, at)
            return
        path = "/" + at["userinfo_endpoint"].split("/", 3)[3]
        self._get_row("userinfo", path, ['"sub"', json.dumps(at["sub"])], f"Bearer {at['access_token']}")

    def _token(self) -> None:
        args = self.args
        max_codes = 60000
        min_codes = int((args.warmup_ops + args.min_ops) * 1.2) + 100
        for c in self.concs:
            res = driver(
                {
                    **self.base,
                    "mode": "token",
                    "concurrency": c,
                    "mint_seconds": min(30, (args.warmup + args.duration) * 1.5 + 1),
                    "max_codes": max_codes,
                    # enough for the warm-up's and the recorded window's minimum counts
                    "min_codes": min_codes,
                }
            )
            self._note("token", c, res)
            if res.get("rate"):
                # the next (lower) concurrency needs at most this many codes
                window = max(args.duration, res.get("elapsed") or 0)
                max_codes = max(min_codes, int(res["rate"] * (args.warmup + window) * 1.3) + 100)

    def _sso(self) -> None:
        for c in self.concs:
            self._note("sso", c, driver({**self.base, "mode": "sso", "concurrency": c}))

    def _cas_sso(self) -> None:
        for c in self.concs:
            self._note("cas_sso", c, driver({**self.base, "mode": "cas-sso", "concurrency": c, "cas": self.server.cas}))

    def _full(self) -> None:
        for c in self.concs:
            if c == max(self.concs) and self.server.password_hash is not None:
                self._full_against_argon2(c)
            else:
                self._note("full", c, driver({**self.base, "mode": "full", "concurrency": c}))

    def _full_against_argon2(self, c: int) -> None:
        """The full-flow row held against argon2id alone on the same core, in alternating windows:
        argon2id alone, flows, argon2id alone, flows, ..., argon2id alone. This VM's speed drifts by
        10-20 % within seconds, so one figure taken before the row and one after it put that drift
        into the ratio (single runs scattered by 8 points); windows that alternate every couple of
        seconds sample the same drift, and the ratio is the pooled flow rate over the mean of the
        argon2id windows. Each flow window starts its own driver, which drains its flows before it
        returns, so an argon2id window never shares the core with the server's hashes."""
        server, args = self.server, self.args
        windows = FULL_WINDOWS_QUICK if args.quick else FULL_WINDOWS
        seconds = max(1.0, args.duration / 2)
        alone = [argon2_alone(server.password_hash, seconds)]
        parts = []
        for _ in range(windows):
            # windows of a fixed length, alternating with argon2id alone: no minimum count, and the
            # warm-up is the previous windows
            cfg = {**self.base, "mode": "full", "concurrency": c, "duration": seconds, "latencies": True}
            cfg.update(min_ops=0, warmup_ops=0)
            parts.append(driver(cfg))
            alone.append(argon2_alone(server.password_hash, seconds))
        res = self._note("full", c, pool_windows(parts))
        rates = [a for a in alone if a is not None]
        if len(rates) != len(alone) or not res.get("rate"):
            return
        mean = statistics.fmean(rates)
        self.out["argon2_alone"] = {"windows": rates, "flow_windows": [p.get("rate") for p in parts], "rate": mean}
        self.out["argon2_alone"]["full_ratio"] = res["rate"] / mean
        log(
            f"  {server.target:8s} argon2id alone {' '.join(f'{a:.1f}' for a in rates)}/s in {len(rates)} windows "
            f"between the flows' {len(parts)}: full flows at c={c} are {res['rate'] / mean * 100:.1f} % of their mean"
        )

    def finish(self) -> dict:
        """Stops sampling; the result: {row: {conc: result}, 'rss': {...}, ...}."""
        self.sampler.stop()
        self.out["rss"] = dict(self.sampler.peaks)
        if self.pg_cpu["wall_s"]:
            self.out["pg_cpu"] = self.pg_cpu
        if self.server.proc.poll() is not None:
            self.record_failure(
                self.server.target, "server", 0, {"error_samples": [f"server exited {self.server.proc.returncode}"]}
            )
        return self.out


def ceiling(workdir: Path, duration: float) -> dict:
    """The load generators' own ceiling on a trivial endpoint served from the server core."""
    port = free_port()
    res: dict = {}
    nginx = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)
    if nginx:
        prefix = workdir / "nginx"
        prefix.mkdir(exist_ok=True)
        conf = prefix / "nginx.conf"
        conf.write_text(f"""worker_processes 1;
daemon off;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  keepalive_requests 10000000;
  server {{ listen 127.0.0.1:{port}; location / {{ default_type text/plain; return 200 "ok\\n"; }} }}
}}
""")
        cmd = ["taskset", "-c", SERVER_CORE, nginx, "-c", str(conf), "-p", str(prefix)]
        res["server"] = "nginx (1 worker)"
    else:
        js = "require('http').createServer((q,s)=>{s.setHeader('content-type','text/plain');s.end('ok\\n')})"
        cmd = ["taskset", "-c", SERVER_CORE, "node", "-e", f"{js}.listen({port},'127.0.0.1')"]
        res["server"] = "node http (the server may be the limit)"
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_http(f"http://127.0.0.1:{port}/", proc, Path("/dev/null"), 10)
        url = f"http://127.0.0.1:{port}"
        wrk(url, "/", 32, 1, ["ok"])
        res["wrk"] = wrk(url, "/", 32, duration, ["ok"])
        res["driver"] = driver(
            {
                "mode": "get",
                "origin": url,
                "path": "/",
                "expect": "ok",
                "concurrency": 32,
                "warmup": 1,
                "duration": duration,
            }
        )
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(10)
    return res


# ------------------------------------------------------------------------------------------ report
def fmt_num(v: float | None, kind: str) -> str:
    if v is None:
        return "-"
    if kind == "ms":
        return f"{v:.2f}" if v < 100 else f"{v:.0f}"
    if kind == "mb":
        return f"{v:.0f}"
    if kind == "pct":
        return f"{v * 100:.1f} %"
    if kind == "us":
        return f"{v:,.0f}"
    return f"{v:,.0f}" if v >= 100 else f"{v:.1f}"


def pool_windows(parts: list[dict]) -> dict:
    """Driver results of consecutive windows of one row, as one result: the flows and seconds summed,
    percentiles over every latency, errors summed (ok only if every window was)."""
    lat = sorted(x for p in parts for x in p.get("latencies_ms") or [])
    count = sum(p.get("count") or 0 for p in parts)
    elapsed = sum(p.get("elapsed") or 0 for p in parts)

    def pct(q: float) -> float | None:
        return lat[min(len(lat) - 1, max(0, math.ceil(q / 100 * len(lat)) - 1))] if lat else None

    return {
        "mode": parts[0].get("mode") if parts else None,
        "concurrency": parts[0].get("concurrency") if parts else None,
        "windows": len(parts),
        "count": count,
        "elapsed": elapsed,
        "rate": count / elapsed if elapsed else None,
        "p50_ms": pct(50),
        "p99_ms": pct(99),
        "errors": sum(p.get("errors") or 0 for p in parts),
        "error_samples": [e for p in parts for e in p.get("error_samples") or []][:10],
        "ok": bool(parts) and all(p.get("ok") for p in parts),
    }


def med(values: list[float]) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def build_table(all_runs: dict, targets: list[str], args, meta: dict, failures: list) -> str:
    cols = [t for t in targets]
    short_name = {"sqlite": "SQLite", "postgres": "PG"}
    # (numerator, denominator, heading): each campusid target against node; with --compare-metrics
    # each target with metrics against its twin without (above 1.00x on a rate: metrics cost nothing)
    ratio_cols = [(t, "node", f"{short_name[t]}/node") for t in cols if t in short_name and "node" in cols]
    twins = "A/A" if TWIN_HAS_METRICS else "metrics/none"
    ratio_cols += [
        (t, t + NO_METRICS, f"{short_name[t]} {twins}") for t in cols if t in short_name and t + NO_METRICS in cols
    ]
    ratio_cols += [(t, t + BASE, f"{short_name[t]} new/base") for t in cols if t in short_name and t + BASE in cols]
    ratio_cols += [(t, "mama", f"{short_name[t]}/mama") for t in cols if t in short_name and "mama" in cols]
    header = ["metric"] + [TARGET_LABEL[t] for t in cols] + [heading for _, _, heading in ratio_cols]
    rows: list[list[str]] = []
    failed_cells = {(f[0], f[1], f[2]) for f in failures}

    def metric(target: str, row: str, conc: int, key: str) -> float | None:
        return med(
            [
                run.get(row, {}).get(conc, {}).get(key)
                for run in all_runs.get(target, [])
                if run.get(row, {}).get(conc, {}).get("ok")
            ]
        )

    def per_run(target: str, row: str, conc: int) -> list[float | None]:
        """The target's rate in each run (None where a run failed), in run order."""
        return [
            run.get(row, {}).get(conc, {}).get("rate") if run.get(row, {}).get(conc, {}).get("ok") else None
            for run in all_runs.get(target, [])
        ]

    def spread(label: str, row: str, conc: int) -> list[str]:
        """Each target's lowest and highest run, and each ratio's lowest and highest pair of the same
        run (the rows of one run are interleaved, so a run's pair shares the machine's state): how
        far the median stands from what one run alone could have said, node's spread beside ours."""
        line = [label]
        for t in cols:
            rates = [r for r in per_run(t, row, conc) if r is not None]
            line.append(f"{fmt_num(min(rates), 'rate')}-{fmt_num(max(rates), 'rate')}" if rates else "-")
        for t, other, _ in ratio_cols:
            pairs = [a / b for a, b in zip(per_run(t, row, conc), per_run(other, row, conc), strict=False) if a and b]
            line.append(f"{min(pairs):.2f}-{max(pairs):.2f}x" if pairs else "-")
        return line

    def add(label: str, getter, kind: str, ratio: bool = True) -> None:
        vals = {t: getter(t) for t in cols}
        line = [label] + [fmt_num(vals[t], kind) for t in cols]
        for t, other, _ in ratio_cols:
            a, b = vals[t], vals[other]
            line.append(f"{a / b:.2f}x" if ratio and a is not None and b else "-")
        rows.append(line)

    password = meta.get("password_label", {})
    for row in args.rows:
        title = ROW_TITLE[row]
        if row == "full":
            pw = password.get("sqlite") or password.get("postgres") or "argon2id"
            title = f"full flows/s with login (campusid: password form, {pw}; node: passwordless interaction)"
        rows.append([f"== {title}"])
        for conc in sorted(args.concurrency):
            for key, kind, lab in (
                ("rate", "rate", f"c={conc} per s"),
                ("p50_ms", "ms", f"c={conc} p50 ms"),
                ("p99_ms", "ms", f"c={conc} p99 ms"),
                ("server_cpu_us_per_op", "us", f"c={conc} server CPU us/op (lower is better)"),
            ):
                if key == "server_cpu_us_per_op" and row not in FLOW_ROWS:
                    continue

                def getter(t, row=row, conc=conc, key=key):
                    v = metric(t, row, conc, key)
                    return v

                add("  " + lab, getter, kind)
                for t in cols:
                    if (t, row, conc) in failed_cells:
                        idx = 1 + cols.index(t)
                        rows[-1][idx] += " FAIL"
                if key == "rate" and args.runs > 1:
                    rows.append(spread(f"  c={conc} per s, lowest-highest run", row, conc))
        if row == "full":

            def alone(t: str, key: str) -> float | None:
                return med([run.get("argon2_alone", {}).get(key) for run in all_runs.get(t, [])])

            top = max(args.concurrency)
            add("  argon2id alone on the server core, per s", lambda t: alone(t, "rate"), "rate", ratio=False)
            add(f"  c={top} full flows / argon2id alone", lambda t: alone(t, "full_ratio"), "pct", ratio=False)
    rows.append(["== server RSS, MB (peak under load)"])
    short = sorted(
        {
            f"{t} {row} c={conc}"
            for t in cols
            for run in all_runs.get(t, [])
            for row, by_conc in run.items()
            if isinstance(by_conc, dict)
            for conc, res in by_conc.items()
            if isinstance(res, dict) and res.get("short_of_min_ops")
        }
    )

    def rss(t: str, phases: tuple[str, ...] | None) -> float | None:
        vals = []
        for run in all_runs.get(t, []):
            peaks = run.get("rss", {})
            sel = [v for k, v in peaks.items() if phases is None or k in phases]
            if sel:
                vals.append(max(sel) / 1024)
        return med(vals)

    add("  all rows", lambda t: rss(t, None), "mb")
    add("  token + SSO rows (no password hashing)", lambda t: rss(t, ("token", "sso")), "mb")
    add("  CAS SSO row", lambda t: rss(t, ("cas_sso",)), "mb")

    widths = [max(len(r[i]) for r in rows + [header] if len(r) > 1) for i in range(len(header))]
    lines = []
    lines.append(f"campusid benchmark vs node-oidc-provider {meta['oidc_provider']} — {meta['date']}")
    pinning = f"server on core {SERVER_CORE}, load generator on core {LOAD_CORE}"
    if meta.get("postgres_pinning"):
        pinning += f", {meta['postgres_pinning']}"
    lines.append(
        f"machine: {meta['cpu']}, {os.cpu_count()} cores; {pinning}; "
        f"python {platform.python_version()}, node {meta['node']}"
    )
    pg_load = med([r["pg_cpu"]["cpu_s"] / r["pg_cpu"]["wall_s"] for r in all_runs.get("postgres", []) if "pg_cpu" in r])
    if pg_load is not None:
        lines.append(
            f"PostgreSQL server CPU during the PostgreSQL rows: {pg_load:.2f} core on average "
            f"(median of runs; the whole server, any other client included)"
        )
    lines.append(
        f"median of {args.runs} run(s); each row {args.duration:g} s after {args.warmup:g} s warm-up; "
        f"ratio = campusid / node (rates: >1 is faster; latencies and RSS: <1 is better)"
    )
    lines.append(
        f"client: {CLIENT_LABEL[args.client]}; every server gets the same warm-up (at least "
        f"{args.warmup:g} s and {args.warmup_ops} operations of the row's own kind); a driver row records "
        f"at least {args.min_ops} operations (growing up to {args.max_duration:g} s)"
        + (f"; short of that: {', '.join(short)}" if short else "")
    )
    ce = meta.get("ceiling") or {}
    if ce:
        w, d = ce.get("wrk", {}), ce.get("driver", {})
        lines.append(
            f"generator ceiling on a trivial endpoint ({ce.get('server')}, c=32): "
            f"wrk {fmt_num(w.get('rate'), 'rate')} req/s, flow driver (undici) "
            f"{fmt_num(d.get('rate'), 'rate')} req/s"
        )
    if meta.get("background"):
        lines.append(meta["background"])
    lines.append("")
    sep = "  "
    lines.append(sep.join(h.ljust(widths[i]) if i == 0 else h.rjust(widths[i]) for i, h in enumerate(header)))
    lines.append(sep.join("-" * w for w in widths))
    for r in rows:
        if len(r) == 1:
            lines.append(r[0])
            continue
        lines.append(sep.join(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(r)))
    lines.append("")
    if failures:
        lines.append(f"RESULT: FAILED — {len(failures)} failing row(s):")
        for t, row, conc, res in failures[:20]:
            lines.append(f"  {t} {row} c={conc}: {res.get('errors')} error(s) {res.get('error_samples', [])[:3]}")
    else:
        lines.append(
            "RESULT: OK — every response checked (status, code/state/iss in redirects, ID token RS256 "
            "signature against the JWKS, iss, aud, nonce, stable pairwise sub)"
        )
    return "\n".join(lines)


# ------------------------------------------------------------------------ token row during a purge
def seed_expired(server: Server, n: int) -> None:
    """n expired rows of each kind the purge deletes (sessions, interactions, spent grants, their
    refresh tokens), written straight into campusid's tables (COPY on PostgreSQL)."""
    now = int(time.time())
    old = now - 40 * 86400
    cid = server.clients[0]["client_id"]
    if database(server.target) == "postgres":
        uid = psql("SELECT id FROM users WHERE username = 'bench'", server.db_name)
    else:
        with sqlite3.connect(_sqlite_path(server)) as con:
            uid = con.execute("SELECT id FROM users WHERE username = 'bench'").fetchone()[0]
    tables = {
        "sessions (id_hash, user_id, auth_time, created_at, expires_at, sid, amr, acr)": (
            (f"bs{i}", uid, old, old, now - 100 - i % 1000, f"bsid{i}", "pwd", "a") for i in range(n)
        ),
        "interactions (id_hash, kind, params, created_at, expires_at)": (
            (f"bi{i}", "authorize", "{}", old, now - 1 - i % 5000) for i in range(n)
        ),
        "grants (id, code_hash, client_id, user_id, redirect_uri, code_challenge, scope, auth_time, created_at, "
        "code_expires_at, code_used_at)": (
            (f"bg{i}", f"bgc{i}", cid, uid, "https://rp.example/callback", "c", "openid", old, old, old + 60, old + 30)
            for i in range(n)
        ),
        "refresh_tokens (token_hash, grant_id, created_at, expires_at, used_at)": (
            (f"br{i}", f"bg{i}", old + 30, old + 30 + 30 * 86400, None) for i in range(n)
        ),
    }
    for table, rows in tables.items():
        write_rows(server, table, rows)


def _sqlite_path(server: Server) -> Path:
    return next(Path(server.env["CAMPUSID_DATA_DIR"]).rglob("campusid.db"))


def write_rows(server: Server, table: str, rows, chunk: int = 100_000) -> int:
    """Rows written straight into a campusid table ("name (col, ...)"), `chunk` rows per transaction:
    COPY through psql on PostgreSQL, executemany on SQLite. The number written."""
    it, total = iter(rows), 0
    con = None
    if database(server.target) != "postgres":
        con = sqlite3.connect(_sqlite_path(server), isolation_level=None)
        con.execute("PRAGMA cache_size=-1000000")  # the seeder's own connection: 1 GB for the random keys
    try:
        while batch := [row for _, row in zip(range(chunk), it, strict=False)]:
            total += len(batch)
            if con is None:
                data = "".join("\t".join("\\N" if v is None else str(v) for v in row) + "\n" for row in batch)
                r = subprocess.run(
                    ["psql", "-h", PG_ADMIN_URL, "-p", PG_PORT, "-U", PG_USER, "-d", server.db_name, "-XAtq", "-c",
                     f"COPY {table} FROM STDIN"],
                    input=data, capture_output=True, text=True,
                )  # fmt: skip
                if r.returncode:
                    raise RuntimeError(f"psql COPY: {r.stderr.strip()}")
            else:
                width = table.count(",") + 1
                con.execute("BEGIN")
                con.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * width)})", batch)
                con.execute("COMMIT")
    finally:
        if con is not None:
            con.close()
    return total


def token_during_purge(server: Server, bench: TargetBench, args, conc: int, whole_purge: bool = False) -> tuple:
    """The token row at `conc` before, during and after a `campusid db purge` run as the CLI on the
    server's core (as serve's own periodic purge would share that core): (before, during, after,
    purged per kind, the purge's seconds, the seconds of the row under it). With `whole_purge`, the
    row runs again and again until the purge ends, each window's (rate, p99) in during["windows"]."""
    target = server.target
    token = {"mode": "token", "concurrency": conc, "max_codes": 60000,
             "mint_seconds": min(30, (args.warmup + args.duration) * 1.5 + 1)}  # fmt: skip
    before = driver({**bench.base, **token})
    purge = subprocess.Popen(
        ["taskset", "-c", SERVER_CORE, campusid_bin(), "db", "purge", "--json"],
        env=server.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    p0 = time.monotonic()
    during = driver({**bench.base, **token})
    row_end = time.monotonic()
    if whole_purge:
        # further windows until the purge ends: the p99 of each, so the whole purge is sampled
        during["windows"] = [(during.get("rate") or 0, during.get("p99_ms") or 0)]
        while purge.poll() is None:
            res = driver({**bench.base, **token})
            during["ok"] = during.get("ok") and res.get("ok")
            during["windows"].append((res.get("rate") or 0, res.get("p99_ms") or 0))
            row_end = time.monotonic()
    out, errs = purge.communicate(timeout=3600)
    p1 = time.monotonic()
    if purge.returncode:
        raise RuntimeError(f"campusid db purge: {errs.strip()[-800:]}")
    after = driver({**bench.base, **token})
    purged = json.loads(out)["purged"]
    for label, res in (("before", before), ("during", during), ("after", after)):
        rate, p99 = res.get("rate") or 0, res.get("p99_ms") or 0
        failed = "" if res.get("ok") else f"  FAILED {res.get('error_samples', [])[:2]}"
        log(f"  {target:8s} token c={conc} {label:6s} {rate:8.1f}/s p99 {p99:7.2f} ms{failed}")
    log(f"  {target}: purge took {p1 - p0:.1f} s (the row under it: {row_end - p0:.1f} s); {purged}")
    return before, during, after, purged, p1 - p0, row_end - p0


def purge_load(args, targets: list[str]) -> int:
    """The token row at the highest concurrency before, during and after a `campusid db purge` of
    --purge-load N expired rows of each kind (4 N rows), its p99 side by side. The purge runs as
    the CLI on the server's core, as serve's own periodic purge would share that core."""
    conc = max(args.concurrency)
    workdir = Path(tempfile.mkdtemp(prefix="campusid-bench-purge-"))
    log(f"purge load: {args.purge_load:,} expired rows of each kind; work dir {workdir}")
    results = []
    for target in [t for t in targets if t != "node"]:
        server = start_campusid(target, workdir, 1)
        try:
            bench = TargetBench(server, args, lambda *a: None)
            if not bench.check():
                raise RuntimeError(f"{target}: the correctness check failed")
            t0 = time.monotonic()
            seed_expired(server, args.purge_load)
            log(f"  {target}: seeded {4 * args.purge_load:,} rows in {time.monotonic() - t0:.1f} s")
            before, during, after, purged, took, row = token_during_purge(server, bench, args, conc)
            results.append((target, before, during, after, purged, took, row))
        finally:
            server.stop()
    print(f"\ntoken row c={conc}, {args.duration:g} s, during `campusid db purge` of {args.purge_load:,} expired rows"
          " of each kind (sessions, interactions, grants, refresh tokens)")  # fmt: skip
    print("| target | p99 before | p99 during purge | p99 after | rate before / during | purge took |")
    print("|---|---|---|---|---|---|")
    ok = True
    for target, before, during, after, _purged, took, row in results:
        ok = ok and all(r.get("ok") for r in (before, during, after))
        print(f"| {TARGET_LABEL[target]} | {before.get('p99_ms') or 0:.1f} ms | {during.get('p99_ms') or 0:.1f} ms | "
              f"{after.get('p99_ms') or 0:.1f} ms | {before.get('rate') or 0:.0f} / {during.get('rate') or 0:.0f} /s | "
              f"{took:.1f} s (row: {row:.1f} s) |")  # fmt: skip
    return 0 if ok else 1


# ------------------------------------------------------------------------ growth: a grown database
SCALE_DIR = Path(os.environ.get("BENCH_SCALE_DIR", "/var/tmp/campusid-bench-scale"))
MIGRATIONS = ROOT / "src" / "campusid" / "idp" / "store" / "migrations" / "versions"
DAY = 86400


def scale_sizes(scale: float) -> dict[str, int]:
    """What --scale F seeds: F x 1,000,000 users, F x 1,000,000 live rows and F x 5,000,000 expired
    rows, each third sessions, grants and refresh tokens (one refresh token per grant)."""
    live, expired = round(1_000_000 * scale), round(5_000_000 * scale)
    return {
        "users": round(1_000_000 * scale),
        "live_grants": live // 3,
        "live_sessions": live - 2 * (live // 3),
        "expired_grants": expired // 3,
        "expired_sessions": expired - 2 * (expired // 3),
    }


def seed_grown(server: Server, scale: float) -> dict[str, int]:
    """The grown database: users, live and expired sessions, grants and their refresh tokens written
    straight into campusid's tables (write_rows, like --purge-load), keyed as campusid keys them
    (secrets by their SHA-256, grant ids led by their creation time, other ids random), created
    over the past year in time order. Every user
    has the bench user's argon2id hash; sessions and grants belong to random users, grants to the
    bench web client; every grant's refresh token references it. The counts written per table."""
    n = scale_sizes(scale)
    now = int(time.time())
    cid = server.clients[0]["client_id"]
    redirect = server.clients[0]["redirect_uris"][0]
    rnd = secrets.SystemRandom()
    uids = [secrets.token_hex(16) for _ in range(n["users"])] or ["none"]
    written = {"users": write_rows(
        server,
        "users (id, username, name, email, role, password_hash, created_at, source)",
        ((uid, f"s{i:07d}", f"Student {i}", f"s{i:07d}@campus.example", "student", server.password_hash,
          now - 400 * DAY, "local") for i, uid in enumerate(uids)),
    )}  # fmt: skip

    def when(i: int, count: int, live: bool) -> int:
        """The i-th of count rows' creation, in time order: the past 29 days (live), else 365 to 35 days ago."""
        start, span = (now - 29 * DAY, 29 * DAY) if live else (now - 365 * DAY, 330 * DAY)
        return start + (span * i) // max(count, 1)

    def session_rows(count: int, live: bool):
        for i in range(count):
            created = when(i, count, live)
            yield (secrets.token_hex(32), rnd.choice(uids), created, created, created + 30 * DAY,
                   secrets.token_urlsafe(32), "pwd", "urn:campusid:acr:pwd", "127.0.0.1", "bench", created)  # fmt: skip

    def grant_rows(count: int, live: bool, ids: list[str]):
        for i in range(count):
            created = when(i, count, live)
            ids.append(f"{created * 1000:012x}{secrets.randbits(80):020x}")  # as campusid.idp.oidc.rules.grant_ids
            yield (ids[-1], secrets.token_hex(32), cid, rnd.choice(uids), redirect, secrets.token_urlsafe(32),
                   secrets.token_urlsafe(16), "openid profile", created, created, created + 60, created + 5,
                   secrets.token_urlsafe(32), "pwd", "urn:campusid:acr:pwd")  # fmt: skip

    def refresh_rows(ids: list[str], live: bool):
        count = len(ids)
        for i, gid in enumerate(ids):
            created = when(i, count, live)
            yield secrets.token_hex(32), gid, created, created + 30 * DAY, None

    sessions_t = ("sessions (id_hash, user_id, auth_time, created_at, expires_at, sid, amr, acr, ip, user_agent, "
                  "last_seen_at)")  # fmt: skip
    grants_t = ("grants (id, code_hash, client_id, user_id, redirect_uri, code_challenge, nonce, scope, auth_time, "
                "created_at, code_expires_at, code_used_at, sid, amr, acr)")  # fmt: skip
    refresh_t = "refresh_tokens (token_hash, grant_id, created_at, expires_at, used_at)"
    for live in (False, True):
        kind = "live" if live else "expired"
        written[f"{kind}_sessions"] = write_rows(server, sessions_t, session_rows(n[f"{kind}_sessions"], live))
        ids: list[str] = []
        written[f"{kind}_grants"] = write_rows(server, grants_t, grant_rows(n[f"{kind}_grants"], live, ids))
        written[f"{kind}_refresh_tokens"] = write_rows(server, refresh_t, refresh_rows(ids, live))
    return written


def database_bytes(server: Server) -> int:
    if database(server.target) == "postgres":
        return int(psql(f"SELECT pg_database_size('{server.db_name}')"))
    return sum(p.stat().st_size for p in _sqlite_path(server).parent.glob("campusid.db*"))


def grown_template(target: str, scale: float, workdir: Path) -> dict:
    """The grown database for `target` at `scale`, built once and kept for every later run: SQLite's
    data directory under BENCH_SCALE_DIR (copied per run), PostgreSQL's as a database cloned per run
    with CREATE DATABASE ... TEMPLATE. Keyed by the newest migration: a schema change builds anew."""
    head = sorted(p.name for p in MIGRATIONS.glob("0*.py"))[-1][:4]
    key = f"{target}-{scale:g}-{head}"
    home = SCALE_DIR / key
    meta_path = home / "meta.json"
    if meta_path.exists():
        meta = json.loads(meta_path.read_text())
        if target == "sqlite" or psql(f"SELECT 1 FROM pg_database WHERE datname = '{meta['template']}'"):
            log(f"  {target}: reusing the grown database {key} (built {meta['built']} in {meta['seed_s']:.0f} s, "
                f"{meta['bytes'] / 1e9:.2f} GB)")  # fmt: skip
            return meta
    log(f"  {target}: building the grown database {key} (once; kept in {home})")
    server = start_campusid(target, workdir, 0)
    cleanup = list(server.cleanup)
    server.cleanup.clear()
    server.stop()  # the server only set up the users and clients; seeded with it stopped
    try:
        shutil.rmtree(home, ignore_errors=True)
        home.mkdir(parents=True)
        t0 = time.monotonic()
        counts = seed_grown(server, scale)
        if database(target) == "postgres":
            psql("VACUUM ANALYZE", server.db_name)  # what autovacuum would have done over the year
        else:
            with sqlite3.connect(_sqlite_path(server)) as con:
                con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        seed_s = time.monotonic() - t0
        meta = {"target": target, "scale": scale, "built": dt.datetime.now().strftime("%Y-%m-%d %H:%M"),
                "seed_s": seed_s, "counts": counts, "bytes": database_bytes(server), "clients": server.clients,
                "secret_key": server.env["CAMPUSID_SECRET_KEY"], "password_hash": server.password_hash}  # fmt: skip
        if database(target) == "postgres":
            meta["template"] = f"campusid_scale_{key.replace('.', '_').replace('-', '_')}"
            psql(f'DROP DATABASE IF EXISTS "{meta["template"]}"')
            psql(f'ALTER DATABASE "{server.db_name}" RENAME TO "{meta["template"]}"')
        else:
            shutil.move(server.env["CAMPUSID_DATA_DIR"], home / "data")
            meta["data_dir"] = str(home / "data")
        meta_path.write_text(json.dumps(meta, indent=1) + "\n")
    finally:
        for fn in cleanup:
            with contextlib.suppress(Exception):
                fn()
    log(f"  {target}: seeded {sum(counts.values()):,} rows in {seed_s:.0f} s ({counts}), {meta['bytes'] / 1e9:.2f} GB")
    return meta


def start_grown(meta: dict, workdir: Path, run_no: int) -> Server:
    """campusid over a fresh copy of the grown database (its own secret key and clients)."""
    target, cleanup = meta["target"], []
    env = {**os.environ, **RAISED_LIMITS, "CAMPUSID_SECRET_KEY": meta["secret_key"]}
    env.pop("CAMPUSID_DATABASE_URL", None)
    env.pop("CAMPUSID_REDIS_URL", None)
    data_dir = workdir / f"{target}-grown-run{run_no}"
    env["CAMPUSID_DATA_DIR"] = str(data_dir)
    db_name = None
    try:
        t0 = time.monotonic()
        if database(target) == "postgres":
            data_dir.mkdir()
            db_name = f"campusid_bench_{os.getpid()}_{run_no}_grown"
            psql(f'DROP DATABASE IF EXISTS "{db_name}"')
            cleanup.append(lambda: psql(f'DROP DATABASE IF EXISTS "{db_name}" WITH (FORCE)'))
            psql(f'CREATE DATABASE "{db_name}" TEMPLATE "{meta["template"]}"')
            env["CAMPUSID_DATABASE_URL"] = f"postgresql+psycopg://{PG_USER}@{PG_ADMIN_URL}:{PG_PORT}/{db_name}"
        else:
            cleanup.append(lambda: shutil.rmtree(data_dir, ignore_errors=True))
            shutil.copytree(meta["data_dir"], data_dir)
        log(f"  {target}: copied the grown database in {time.monotonic() - t0:.1f} s")
        return _launch_campusid(target, workdir, run_no, env, meta["clients"], meta["password_hash"], cleanup,
                                db_name, "-grown")  # fmt: skip
    except BaseException:
        for fn in reversed(cleanup):
            with contextlib.suppress(Exception):
                fn()
        raise


def scale_run(args, targets: list[str]) -> int:
    """--scale: the token and SSO rows at the highest concurrency on an empty and on a grown database
    side by side (the two servers up together, each row interleaved, the order alternating from
    run to run), then, in the last run, a purge of the grown database's expired rows with the token
    row's p99 taken in windows through the whole purge."""
    conc = max(args.concurrency)
    targets = [t for t in targets if t != "node"]
    workdir = Path(tempfile.mkdtemp(prefix="campusid-bench-scale-"))
    # serve's own housekeeping off (its first run is at start): the purge is the one measured below
    os.environ["CAMPUSID_PURGE_INTERVAL"] = "0"
    sizes = scale_sizes(args.scale)
    log(f"scale {args.scale:g}: {sizes}; work dir {workdir}")
    templates = {t: grown_template(t, args.scale, workdir) for t in targets}
    if args.build_only:
        return 0
    failures: list = []
    res: dict = {t: {w: {"token": [], "sso": []} for w in ("empty", "grown")} for t in targets}
    for t in targets:
        res[t]["purge"] = []
    pg = PostgresPin() if "postgres" in targets else None
    for run_no in range(1, args.runs + 1):
        for target in targets:
            on_pg = pg is not None and database(target) == "postgres"
            servers: dict[str, Server] = {}
            with pg.pinned() if on_pg else contextlib.nullcontext():
                try:
                    servers["empty"] = start_campusid(target, workdir, run_no)
                    servers["grown"] = start_grown(templates[target], workdir, run_no)
                    benches = {k: TargetBench(s, args, lambda *a: failures.append(a)) for k, s in servers.items()}
                    for bench in benches.values():
                        bench.concs = [conc]
                        if not bench.check():
                            raise RuntimeError(f"{target}: the correctness check failed")
                    order = ["empty", "grown"] if run_no % 2 else ["grown", "empty"]
                    for row in ("token", "sso"):
                        for which in order:
                            benches[which].row(row)
                            res[target][which][row].append(benches[which].out[row][conc])
                    if run_no == args.runs and not args.no_purge:  # once: 5,000,000 rows take many minutes
                        purge = token_during_purge(servers["grown"], benches["grown"], args, conc, whole_purge=True)
                        res[target]["purge"].append(purge)
                    for bench in benches.values():
                        bench.finish()
                finally:
                    for server in servers.values():
                        server.stop()

    def m(runs: list[dict], key: str) -> float:
        return med([r.get(key) or 0 for r in runs]) or 0

    print(f"\ngrowth, scale {args.scale:g}: {sizes['users']:,} users; live {sizes['live_sessions']:,} sessions, "
          f"{sizes['live_grants']:,} grants with a refresh token each; expired {sizes['expired_sessions']:,} sessions, "
          f"{sizes['expired_grants']:,} grants with a refresh token each; c={conc}, {args.duration:g} s rows, "
          f"median of {args.runs} run(s)")  # fmt: skip
    for t, meta in templates.items():
        print(f"  {TARGET_LABEL[t]}: grown database {meta['bytes'] / 1e9:.2f} GB, seeded {meta['built']} in "
              f"{meta['seed_s']:.0f} s")  # fmt: skip
    print("| target | row | empty /s | grown /s | grown / empty | p99 empty | p99 grown |")
    print("|---|---|---|---|---|---|---|")
    for t in targets:
        for row in ("token", "sso"):
            e, g = res[t]["empty"][row], res[t]["grown"][row]
            re_, rg = m(e, "rate"), m(g, "rate")
            print(f"| {TARGET_LABEL[t]} | {row} | {re_:,.0f} | {rg:,.0f} | {rg / re_ if re_ else 0:.2f} | "
                  f"{m(e, 'p99_ms'):.1f} ms | {m(g, 'p99_ms'):.1f} ms |")  # fmt: skip
    print("\n| target | purged | purge took | token p99 before | during (median / worst window) | after "
          "| rate before / during |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for t in targets:
        for before, during, after, purged, took, _row in res[t]["purge"]:
            p99s = [p for _, p in during.get("windows", [])] or [0]
            rates = [r for r, _ in during.get("windows", [])] or [0]
            print(f"| {TARGET_LABEL[t]} | {sum(purged.values()):,} | {took:.0f} s | "
                  f"{before.get('p99_ms') or 0:.1f} ms | {statistics.median(p99s):.1f} / {max(p99s):.1f} ms "
                  f"({len(p99s)} windows) | {after.get('p99_ms') or 0:.1f} ms | "
                  f"{before.get('rate') or 0:.0f} / {statistics.median(rates):.0f} /s |")  # fmt: skip
    rows = [r for t in targets for w in ("empty", "grown") for rs in res[t][w].values() for r in rs]
    ok = not failures and all(r.get("ok") for r in rows)
    if not ok:
        print(f"RESULT: FAILED {failures[:5]}")
    return 0 if ok else 1


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown cpu"


def main() -> int:
    # SIGTERM (e.g. from `timeout`) unwinds like Ctrl-C: servers stopped, databases dropped, PostgreSQL's
    # CPU affinity restored
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smoke run: 1 run, 2 s rows, 0.5 s warm-up")
    ap.add_argument(
        "--only",
        action="append",
        default=[],
        help=f"{' | '.join(ALL_TARGETS)} (repeatable, or a,b; default {','.join(TARGETS)})",
    )
    ap.add_argument(
        "--compare-metrics",
        nargs="?",
        const="off",
        choices=("off", "control"),
        help="also run each campusid target without /metrics (its -nometrics twin), rows interleaved; "
        "'control': the twin with /metrics too (an A/A run, the method's own floor)",
    )
    ap.add_argument(
        "--baseline",
        metavar="BIN",
        help="also run each campusid target with this other build's campusid command (e.g. the code before a "
        "change, installed in a venv of its own), rows interleaved: its '-base' targets, and a new/base ratio",
    )
    ap.add_argument("--runs", type=int, default=None, help="runs per target (default 3; --quick 1)")
    ap.add_argument("--duration", type=float, default=None, help="seconds per row (default 8; --quick 2)")
    ap.add_argument("--warmup", type=float, default=None, help="warm-up seconds per row (default 3; --quick 0.5)")
    ap.add_argument(
        "--warmup-ops",
        type=int,
        default=None,
        help="the warm-up of a driver row also lasts until this many operations completed, the same for "
        "every server (default 1000; --quick 100)",
    )
    ap.add_argument(
        "--min-ops",
        type=int,
        default=None,
        help="a driver row's recorded window also lasts until this many operations (default 1500; --quick 0)",
    )
    ap.add_argument(
        "--max-duration",
        type=float,
        default=None,
        help="the longest a recorded window may grow to reach --min-ops, seconds (default 15)",
    )
    ap.add_argument(
        "--client",
        choices=("pool", "oneby1"),
        default="pool",
        help="pool: wrk for the GET rows, and the flow driver's shared keep-alive pool; oneby1: every row "
        "through the flow driver, each virtual user on its own connection, one request written per turn",
    )
    ap.add_argument("--rows", default=",".join(ROWS), help=f"subset of {','.join(ROWS)}")
    ap.add_argument("--concurrency", default="1,32", help="concurrency levels (default 1,32)")
    ap.add_argument("--no-ceiling", action="store_true", help="skip the generator-ceiling measurement")
    ap.add_argument(
        "--save",
        nargs="?",
        const="",
        default=None,
        help="write the table (and raw JSON) to bench/results/<date>-<HHMM>.txt or the given path",
    )
    ap.add_argument(
        "--purge-load",
        type=int,
        default=0,
        metavar="N",
        help="instead of the table: seed N expired rows of each kind, and measure the token row before, "
        "during and after `campusid db purge` deletes them",
    )
    ap.add_argument(
        "--scale",
        type=float,
        default=0,
        metavar="F",
        help="instead of the table: the token and SSO rows on an empty and on a grown database (F x 1,000,000 "
        "users, F x 1,000,000 live and F x 5,000,000 expired rows, built once and kept in BENCH_SCALE_DIR), then a "
        "purge of the expired rows with the token row's p99 during it",
    )
    ap.add_argument("--build-only", action="store_true", help="with --scale: only build (or find) the grown databases")
    ap.add_argument("--no-purge", action="store_true", help="with --scale: the rows only, no purge after them")
    args = ap.parse_args()
    args.runs = args.runs or (1 if args.quick else 3)
    args.duration = args.duration or (2.0 if args.quick else 8.0)
    args.warmup = args.warmup if args.warmup is not None else (0.5 if args.quick else 3.0)
    args.warmup_ops = args.warmup_ops if args.warmup_ops is not None else (100 if args.quick else 1000)
    args.min_ops = args.min_ops if args.min_ops is not None else (0 if args.quick else 1500)
    args.max_duration = args.max_duration if args.max_duration is not None else 15.0
    args.rows = [r for r in ROWS if r in args.rows.split(",")]
    args.concurrency = [int(c) for c in args.concurrency.split(",")]
    chosen = ",".join(args.only).split(",") if args.only else list(TARGETS)
    if args.compare_metrics:
        global TWIN_HAS_METRICS
        TWIN_HAS_METRICS = args.compare_metrics == "control"
        if TWIN_HAS_METRICS:
            for t in ("sqlite", "postgres"):
                TARGET_LABEL[t + NO_METRICS] = TARGET_LABEL[t] + ", its twin (metrics too)"
        chosen += [t + NO_METRICS for t in chosen if t in ("sqlite", "postgres")]
    if args.baseline:
        global BASELINE_BIN
        BASELINE_BIN = str(Path(args.baseline).resolve())
        chosen += [t + BASE for t in chosen if t in ("sqlite", "postgres")]
    targets = [t for t in ALL_TARGETS if t in chosen]
    if not targets or any(t and t not in ALL_TARGETS for t in chosen):
        ap.error(f"--only takes {', '.join(ALL_TARGETS)}")

    preflight(targets)
    if args.scale:
        return scale_run(args, targets)
    if args.purge_load:
        return purge_load(args, targets)
    workdir = Path(tempfile.mkdtemp(prefix="campusid-bench-"))
    log(f"work dir and server logs: {workdir}")
    node_version = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    op_pkg = json.loads((NODE_OP / "node_modules" / "oidc-provider" / "package.json").read_text())
    meta: dict = {
        "date": dt.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "cpu": cpu_model(),
        "node": node_version,
        "oidc_provider": op_pkg["version"],
        "password_label": {},
    }
    if not args.no_ceiling:
        log("generator ceiling (nginx on the server core)")
        meta["ceiling"] = ceiling(workdir, min(args.duration, 4))
        log(
            f"  wrk {meta['ceiling']['wrk'].get('rate', 0):,.0f} req/s, "
            f"driver {meta['ceiling']['driver'].get('rate', 0):,.0f} req/s"
        )

    failures: list = []

    def record_failure(target: str, row: str, conc: int, res: dict) -> None:
        failures.append((target, row, conc, res))

    all_runs: dict[str, list[dict]] = {t: [] for t in targets}
    started = time.monotonic()
    cpu = CpuAccount()
    pg = PostgresPin() if any(database(t) == "postgres" for t in targets) else None
    for run_no in range(1, args.runs + 1):
        # every target's server runs for the whole run (idle but for its own rows); each row goes
        # through the targets in turn, and the order rotates from run to run
        k = (run_no - 1) % len(targets)
        order = list(targets[k:] + targets[:k])
        log(f"run {run_no}/{args.runs}: rows interleaved, targets in the order {', '.join(order)}")
        cpu.mark()
        # PostgreSQL on the load-generator core for the run (restored on any exit); idle outside its rows
        with pg.pinned() if pg is not None else contextlib.nullcontext():
            pg_cpu0 = pg.cpu_seconds() if pg is not None else None
            servers: list[Server] = []
            benches: dict[str, TargetBench] = {}
            try:
                for target in order:
                    try:
                        starts = {"node": start_node, "mama": start_mama}
                        server = starts.get(target, start_campusid)(
                            *((target,) if target not in starts else ()), workdir, run_no
                        )
                    except Exception as exc:  # noqa: BLE001 - a target that cannot start fails the run, others go on
                        record_failure(target, "start", 0, {"errors": 1, "error_samples": [str(exc)[:1500]]})
                        log(f"  {target} did not start: {str(exc)[:1500]}")
                        continue
                    servers.append(server)
                    meta["password_label"][target] = server.password_label
                    benches[target] = TargetBench(server, args, record_failure)
                for target in order:
                    if target in benches and not benches[target].check():
                        all_runs[target].append(benches.pop(target).finish())
                for row in args.rows:
                    for target in order:
                        bench = benches.get(target)
                        if bench is None:
                            continue
                        on_pg = pg is not None and database(target) == "postgres"
                        t0, c0 = time.monotonic(), pg.cpu_seconds() if on_pg else None
                        bench.row(row)
                        c1 = pg.cpu_seconds() if on_pg else None
                        if c0 is not None and c1 is not None:
                            bench.pg_cpu["cpu_s"] += c1 - c0
                            bench.pg_cpu["wall_s"] += time.monotonic() - t0
                for target, bench in benches.items():
                    result = bench.finish()
                    all_runs[target].append(result)
                    if "pg_cpu" in result:
                        used, wall = result["pg_cpu"]["cpu_s"], result["pg_cpu"]["wall_s"]
                        log(
                            f"  PostgreSQL used {used:.1f} s CPU over {wall:.1f} s of PostgreSQL rows "
                            f"({used / wall:.2f} core; the whole server, any other client included)"
                        )
            finally:
                for server in servers:
                    server.stop()
                pg_cpu1 = pg.cpu_seconds() if pg is not None else None
                cpu.sample(pg_cpu1 - pg_cpu0 if pg_cpu0 is not None and pg_cpu1 is not None else 0.0)
    log(f"done in {time.monotonic() - started:.0f} s")
    meta["background"] = cpu.summary()
    meta["postgres_pinning"] = pg.summary() if pg else ""

    table = build_table(all_runs, targets, args, meta, failures)
    print(table)
    if args.save is not None:
        # named by the run's start, as in the table's header: a second run on one day keeps the first
        stamp = meta["date"].replace(" ", "-").replace(":", "")
        path = Path(args.save) if args.save else BENCH / "results" / f"{stamp}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(table + "\n")
        raw = {
            "meta": meta,
            "args": {k: v for k, v in vars(args).items()},
            "runs": all_runs,
            "failures": [(t, r, c, x) for t, r, c, x in failures],
        }
        path.with_suffix(".json").write_text(json.dumps(raw, indent=1, default=str) + "\n")
        log(f"saved {path}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
