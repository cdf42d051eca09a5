"""The long fuzz run's driver (long_run.py) in a short pass: the same deployment (nginx →
`campusid serve --workers 2` → PostgreSQL + Redis), the same mix of fuzzed requests, stateful
sequences and slow clients, for a few hundred requests. `make fuzz-long` runs it for a million."""

from __future__ import annotations

import argparse

import pytest

from tests.fuzz.corpus import ENDPOINTS
from tests.fuzz.long_run import execute

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]


def test_a_short_long_run_behind_nginx_has_no_5xx_no_traceback_and_no_protocol_violation(tmp_path):
    args = argparse.Namespace(total=600, seconds=60, concurrency=6, slow=3, seed=28)
    run, elapsed, report = execute(tmp_path, args)
    print(report)
    t = run.tally
    assert t.requests >= args.total, report  # it ran to its count, not out of time
    assert t.server_errors == [] and t.tracebacks == [] and t.violations == [], report
    assert run.ok, report  # nor a 5xx in nginx's log, a traceback in campusid's, an upstream error in nginx's
    assert t.sequences["signed in"] > 0 and sum(t.slow.values()) > 0, report
    reached = {key for key in t.per_endpoint if key in {f"{m} {p}" for m, p in ENDPOINTS}}
    assert len(reached) >= len(ENDPOINTS) // 2, sorted(reached)  # 600 requests spread over the list
