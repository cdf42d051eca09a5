#!/usr/bin/env python3
"""What the request layer (request id, duration histogram, request line) costs per request, in
process: a hot request (GET /oauth/userinfo without a token: 401) through the app with the layer
and straight to the app inside it, interleaved, median of `--repeats` x `--requests`. Run with
the figures in memory (as `campusid serve` keeps them with one worker) and in prometheus-client's
multiprocess files (as with `--workers N`).

    .venv/bin/python bench/observe_cost.py [--requests 20000] [--repeats 7]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time


def measure(requests: int, repeats: int) -> dict:
    from campusid.idp.app import create_app
    from campusid.idp.settings import load_settings

    data = tempfile.mkdtemp(prefix="campusid-observe-")
    env = {"CAMPUSID_DATA_DIR": data, "CAMPUSID_SECRET_KEY": "k" * 48, "CAMPUSID_LOG_FORMAT": "text"}
    app = create_app(load_settings(env))
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": "/oauth/userinfo",
        "raw_path": b"/oauth/userinfo",
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1:8000")],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        if message["type"] == "http.response.start":
            assert message["status"] == 401, message["status"]

    async def run(entry) -> float:
        started = time.process_time()
        for _ in range(requests):
            await entry(dict(scope), receive, send)
        return (time.process_time() - started) / requests * 1e6

    async def main():
        await app.state.ctx.keys.load()
        layered, bare = [], []
        for _ in range(repeats):
            layered.append(await run(app.__call__))
            bare.append(await run(app._dispatch))
        return statistics.median(layered), statistics.median(bare)

    with_layer, without = asyncio.run(main())
    return {"with": with_layer, "without": without}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        result = measure(args.requests, args.repeats)
        print(f"{result['with']:.1f} {result['without']:.1f}")
        return
    for label, multiproc in (("one worker (in memory)", False), ("several workers (multiprocess files)", True)):
        env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
        if multiproc:
            env["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="campusid-observe-metrics-")
        out = subprocess.run(
            [sys.executable, __file__, "--child", "--requests", str(args.requests), "--repeats", str(args.repeats)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        with_layer, without = float(out[0]), float(out[1])
        print(f"{label}: {with_layer:.1f} us with the layer, {without:.1f} us without: +{with_layer - without:.1f} us")


if __name__ == "__main__":
    main()
