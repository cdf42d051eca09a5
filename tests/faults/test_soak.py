"""The soak: `campusid serve --workers 2` on PostgreSQL and Redis under mixed load (SSO, a code
redeemed by two clients at once, refresh, userinfo, a password login every second) for
CAMPUSID_SOAK_SECONDS (`make soak`: 1800), the workers' resident memory sampled every 10 s.

It passes when no sample after the first sixth of the run (the first 5 minutes of 30) exceeds that
part's peak by more than 10 %, every answer was a protocol answer with no transport error, the log
holds no traceback, no code was redeemed twice and no grant was lost. It prints every sample.
Skipped unless CAMPUSID_SOAK_SECONDS is set: it is a long run, not part of the suite."""

from __future__ import annotations

import asyncio
import collections
import os
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.test_e2e_serve_workers import workers
from tests.faults.load import CLEAN, Answer, Load
from tests.faults.test_faults import Deployment

SECONDS = int(os.environ.get("CAMPUSID_SOAK_SECONDS", "0") or 0)
SAMPLE_EVERY = 10.0
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.serial,
    pytest.mark.skipif(SECONDS <= 0, reason="a long run: set CAMPUSID_SOAK_SECONDS (make soak)"),
]


@dataclass
class SoakLoad(Load):
    """The fault tests' load, counting answers instead of keeping each (a soak makes millions)."""

    def __post_init__(self) -> None:
        self.counts: collections.Counter = collections.Counter()
        self.bad: list[Answer] = []
        self.received = 0

    async def _call(self, kind, coro):
        r = await super()._call(kind, coro)
        answer = self.answers.pop()
        self.counts[answer.status] += 1
        unclean = isinstance(answer.status, str) or answer.status not in CLEAN
        if unclean or (answer.status == 503 and not answer.retry_after):
            self.bad.append(answer)
        return r

    async def _received(self, id_token: str) -> None:
        self.received += 1


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


@pytest.mark.timeout(0)
def test_thirty_minutes_of_mixed_load_keep_memory_flat_and_every_answer_clean(tmp_path):
    deployment = Deployment(tmp_path)
    load = SoakLoad(deployment.issuer, deployment.client_id)
    samples: list[tuple[float, dict[int, int]]] = []
    started = time.monotonic()

    async def during() -> None:
        while (elapsed := time.monotonic() - started) < SECONDS:
            pids = workers(deployment.proc.pid)
            samples.append((elapsed, {pid: rss_kib(pid) for pid in sorted(pids)}))
            rss = [round(k / 1024, 1) for k in samples[-1][1].values()]
            print(f"[soak] t={elapsed:6.0f} s  requests {sum(load.counts.values()):8d}  RSS MiB: {rss}")
            await asyncio.sleep(SAMPLE_EVERY)

    try:
        asyncio.run(load.run(during, sso_loops=3))
        lost = asyncio.run(load.grants_lost())
        log = deployment.log()
    finally:
        deployment.stop()

    totals = [(t, sum(by_pid.values())) for t, by_pid in samples]
    warm = [kib for t, kib in totals if t <= SECONDS / 6]
    later = [kib for t, kib in totals if t > SECONDS / 6]
    peak = max(warm)
    print(f"[soak] requests: {sum(load.counts.values())}; answers: {dict(sorted(load.counts.items(), key=str))}")
    print(f"[soak] first-sixth peak {peak / 1024:.1f} MiB; later max {max(later, default=0) / 1024:.1f} MiB")
    assert later, "the run was too short to sample after its first sixth"
    # the load ran the whole time (a loop that died would leave the workers idle and flat)
    assert load.codes_issued >= SECONDS and load.received >= SECONDS / 2, (load.codes_issued, load.received)
    assert max(later) <= peak * 1.10, totals
    assert load.bad == [], load.bad[:20]
    assert "Traceback" not in log
    assert load.codes_redeemed_twice == 0
    assert lost == 0
