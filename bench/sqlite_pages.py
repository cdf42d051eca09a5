#!/usr/bin/env python3
"""What SQLite's page cache and memory map do for a grown database (issue 28), measured in ways the
machine's load does not move: bytes and read calls through the kernel per operation (/proc/self/io),
beside CPU time per operation (interleaved rounds, median).

    .venv/bin/python bench/sqlite_pages.py /var/tmp/campusid-bench-scale/sqlite-0.1-0010/data/campusid.db

The database is one that `bench/run.py --scale F --build-only --only sqlite` built; it is copied
first, so the kept one is not written. One operation is what the SSO and token rows ask of the
database: the authorization's session + consent lookup (one random live session), the grant's
INSERT, the code's redemption (UPDATE ... RETURNING by its hash), each statement committing on its
own, as campusid's store runs them (store/grants.py). Each configuration is a new connection
with the server's pragmas (store/sqlite.py) plus the cache and map sizes named.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CONFIGS = {
    "default (2 MB cache, no map)": (None, 0),
    "cache 64 MB": (-65536, 0),
    "map 1 GB": (None, 1 << 30),
    "cache 64 MB + map 1 GB": (-65536, 1 << 30),
}


def io() -> tuple[int, int]:
    fields = dict(line.split(": ") for line in Path("/proc/self/io").read_text().splitlines())
    return int(fields["rchar"]), int(fields["syscr"])


def connect(path: Path, cache: int | None, mmap: int) -> sqlite3.Connection:
    con = sqlite3.connect(path, isolation_level=None)
    for pragma in ("busy_timeout=10000", "synchronous=NORMAL", "foreign_keys=ON"):
        con.execute(f"PRAGMA {pragma}")
    if cache is not None:
        con.execute(f"PRAGMA cache_size={cache}")
    con.execute(f"PRAGMA mmap_size={mmap}")
    return con


def operations(con: sqlite3.Connection, sessions: list[str], cid: str, n: int, now: int) -> None:
    for _ in range(n):
        h = sessions[int.from_bytes(os.urandom(4)) % len(sessions)]
        row = con.execute(
            "SELECT c.client_id, s.user_id, s.auth_time, s.sid, k.scope FROM clients c "
            "LEFT JOIN sessions s ON s.id_hash = ? AND s.expires_at > ? "
            "LEFT JOIN consents k ON k.user_id = s.user_id AND k.client_id = c.client_id WHERE c.client_id = ?",
            (h, now, cid),
        ).fetchone()
        code = hashlib.sha256(os.urandom(32)).hexdigest()
        con.execute(
            "INSERT INTO grants (id, code_hash, client_id, user_id, redirect_uri, code_challenge, nonce, scope, "
            "auth_time, created_at, code_expires_at, sid, amr, acr) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (os.urandom(16).hex()[:22], code, cid, row[1], "https://rp.example/callback", "c" * 43, "n",
             "openid profile", now, now, now + 60, row[3], "pwd", "urn:campusid:acr:pwd"),
        )  # fmt: skip
        con.execute(
            "UPDATE grants SET code_used_at = ? WHERE code_hash = ? AND client_id = ? AND code_used_at IS NULL "
            "AND code_expires_at > ? AND revoked_at IS NULL RETURNING *",
            (now, code, cid, now),
        ).fetchall()


def one(db: Path, name: str, ops: int) -> None:
    """One configuration in this process alone (as one server worker): warm up, then one window."""
    now = int(time.time())
    con = connect(db, *CONFIGS[name])
    sessions = [r[0] for r in con.execute("SELECT id_hash FROM sessions WHERE expires_at > ?", (now,))]
    cid = con.execute("SELECT client_id FROM clients WHERE type = 'web'").fetchone()[0]
    operations(con, sessions, cid, ops, now)
    (r0, s0), c0 = io(), time.process_time()
    operations(con, sessions, cid, ops, now)
    (r1, s1), c1 = io(), time.process_time()
    print(json.dumps([(r1 - r0) / ops, (s1 - s0) / ops, (c1 - c0) / ops * 1e6]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("db", type=Path)
    ap.add_argument("--ops", type=int, default=3000, help="operations per measured window (as many warm it up)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        one(args.db, args.one, args.ops)
        return
    work = Path(tempfile.mkdtemp(prefix="campusid-pages-"))
    db = work / "campusid.db"
    shutil.copy(args.db, db)
    print(f"{db.stat().st_size / 1e6:.0f} MB; {args.ops} operations a window, after as many unmeasured")
    got: dict[str, list] = {name: [] for name in CONFIGS}
    for _ in range(args.rounds):
        for name in CONFIGS:  # one process per window, the configurations interleaved
            out = subprocess.run([sys.executable, __file__, str(db), "--one", name, "--ops", str(args.ops)],
                                 capture_output=True, text=True, check=True).stdout  # fmt: skip
            got[name].append(json.loads(out))
    print("| connection | bytes read / op | read calls / op | CPU µs / op (median) |")
    print("|---|---|---|---|")
    for name, rows in got.items():
        print(f"| {name} | {statistics.median(r[0] for r in rows):,.0f} | "
              f"{statistics.median(r[1] for r in rows):.1f} | "
              f"{statistics.median(r[2] for r in rows):.0f} |")  # fmt: skip
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
