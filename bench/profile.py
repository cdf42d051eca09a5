#!/usr/bin/env python3
"""Profile campusid under the benchmark's load with py-spy (sampling, no code change).

    python bench/profile.py                       # SQLite, token row then SSO row, c=32, 10 s each
    python bench/profile.py --db postgres --rows sso --seconds 15

Needs py-spy (`.venv/bin/pip install py-spy`; it samples through ptrace, so run as root or with
ptrace allowed). For each row it prints the top functions by own ("self") time and by inclusive
time, as % of the samples taken while the server was busy, and keeps the collapsed stacks
(py-spy "raw" format, readable by speedscope or flamegraph.pl) in the work directory.
"""

from __future__ import annotations

import argparse
import collections
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as bench  # noqa: E402 - the benchmark's own server setup and driver


def py_spy() -> str:
    venv = bench.ROOT / ".venv" / "bin" / "py-spy"
    if venv.exists():
        return str(venv)
    found = shutil.which("py-spy")
    if not found:
        sys.exit("py-spy not found: .venv/bin/pip install py-spy")
    return found


IDLE_LEAVES = (
    "Condition.wait (threading",
    "Event.wait (threading",
    "Queue.get (queue",
    "select (selectors",
    "_worker (concurrent",
    "wait (threading",
)


def _frame_name(frame: str) -> str:
    """ "function (path/module.py:123)" -> "function (module path)" without the line number."""
    frame = frame.strip()
    if frame.endswith(")") and ":" in frame:
        frame = frame.rsplit(":", 1)[0] + ")"
    for prefix in (
        str(bench.ROOT / ".venv" / "lib" / "python3.11" / "site-packages") + "/",
        str(bench.ROOT / "src") + "/",
    ):
        frame = frame.replace(prefix, "")
    return frame


def summarise(raw: Path, top: int) -> str:
    own: collections.Counter[str] = collections.Counter()
    incl: collections.Counter[str] = collections.Counter()
    total = idle = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        n = int(count)
        names = [_frame_name(f) for f in stack.split(";") if f.strip()]
        if not names:
            continue
        if any(names[-1].startswith(leaf) for leaf in IDLE_LEAVES):
            idle += n  # a thread-pool thread waiting for work, not CPU
            continue
        total += n
        own[names[-1]] += n
        for name in set(names):
            if "(campusid/" in name:
                incl[name] += n
    if not total:
        return "  (no samples)"
    out = [f"  {total} busy samples ({idle} idle thread samples left out)"]
    out.append("  self time (% of busy samples):")
    out += [f"    {c / total * 100:5.1f}%  {name}" for name, c in own.most_common(top)]
    out.append("  inclusive time of campusid functions:")
    out += [f"    {c / total * 100:5.1f}%  {name}" for name, c in incl.most_common(top)]
    return "\n".join(out)


def _driver_load(cfg: dict):
    """The flow driver started; returns once its timed phase begins (sessions and codes are made
    first, unsampled), with a function that waits for its result."""
    proc = subprocess.Popen(
        ["taskset", "-c", bench.LOAD_CORE, "node", str(bench.LOADGEN / "driver.mjs"), json.dumps(cfg)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    for line in proc.stderr:
        if line.startswith("phase: recording"):
            break

    def collect() -> dict:
        out, _ = proc.communicate()
        lines = [ln for ln in out.splitlines() if ln.startswith("{")]
        return json.loads(lines[-1]) if lines else {}

    return collect


def _userinfo_load(base: dict, server, args):
    """wrk on the userinfo endpoint with one access token (as bench/run.py's row), started in a
    thread; sampling begins after a second of it."""
    at = bench.driver({**base, "mode": "mint-access-token", "concurrency": 1})
    if not at.get("ok"):
        sys.exit(f"minting an access token failed: {at.get('error_samples')}")
    path = "/" + at["userinfo_endpoint"].split("/", 3)[3]
    box: dict = {}
    expect = ['"sub"', json.dumps(at["sub"])]
    auth = f"Bearer {at['access_token']}"
    thread = threading.Thread(
        target=lambda: box.update(bench.wrk(server.issuer, path, args.concurrency, args.seconds, expect, auth))
    )
    thread.start()
    time.sleep(1)

    def collect() -> dict:
        thread.join()
        return box

    return collect


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    ap.add_argument("--rows", default="token,sso", help="token, sso, full, userinfo (comma-separated)")
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--top", type=int, default=15)
    args = ap.parse_args()
    spy = py_spy()
    bench.preflight([args.db])
    workdir = Path(tempfile.mkdtemp(prefix="campusid-profile-"))
    bench.log(f"work dir: {workdir}")
    server = bench.start_campusid(args.db, workdir, 1)
    try:
        base = {"issuer": server.issuer, "clients": server.clients, "user": server.user, "warmup": 1}
        chk = bench.driver({**base, "mode": "check", "concurrency": 1})
        if not chk.get("ok"):
            sys.exit(f"check failed: {chk.get('error_samples')}")
        for row in args.rows.split(","):
            raw = workdir / f"{row}.txt"
            cfg = {**base, "concurrency": args.concurrency, "duration": args.seconds}
            if row == "userinfo":  # wrk with one access token, as the benchmark's row
                collect = _userinfo_load(base, server, args)
            else:
                cfg.update(mode=row)
                if row == "token":
                    cfg.update(mint_seconds=args.seconds + 2)
                collect = _driver_load(cfg)
            subprocess.run(
                [
                    spy,
                    "record",
                    "--pid",
                    str(server.proc.pid),
                    "--duration",
                    str(max(1, int(args.seconds - 1))),
                    "--rate",
                    "250",
                    "--format",
                    "raw",
                    "--output",
                    str(raw),
                    "--nonblocking",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=False,
            )
            result = collect()
            print(
                f"== {row} (c={args.concurrency}, {args.db}): {result.get('rate', 0):.1f}/s while sampled, "
                f"ok={result.get('ok')}"
            )
            if raw.exists():
                print(summarise(raw, args.top))
            else:
                print("  py-spy produced no output (ptrace not permitted?)")
            print(json.dumps({k: result.get(k) for k in ("rate", "p50_ms", "p99_ms", "errors")}))
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
