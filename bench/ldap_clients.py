"""Which LDAP client library for directory sign-in: measured against a real slapd.

    .venv/bin/python bench/ldap_clients.py [--duration 5] [--concurrency 32] [--libs ldap3,python-ldap,bonsai]

Starts Debian's slapd with the tests' own configuration and people (tests/directory), then for each
library that is installed measures directory sign-ins per second at the given concurrency. One
sign-in is what campusid does: a search for the username over a reused service-account connection,
then a simple bind as the found DN with the password (on a reused connection kept for user binds).

Then the same for campusid's own Directory (python-ldap in its bounded pool: the `directory` row)
and, beside it, a local account's argon2id check at campusid's default parameters.

Blocking libraries (ldap3, python-ldap) run in a bounded thread pool driven from an asyncio loop,
as the server would run them; bonsai runs natively on asyncio. For each, a ticker task on the
loop records the worst delay of a 5 ms sleep: the event loop's stall while sign-ins are under way.
It also reports how long one sign-in blocks the loop when called directly on it (blocking libs).
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.directory.slapd import PEOPLE, SERVICE_DN, SERVICE_PW, Slapd  # noqa: E402

USERS = [("mei", "mei-pw"), ("tom", "tom-pw"), ("ada", "ada-pw"), ("axb", "axb-pw")]


class Ldap3Worker:
    def __init__(self, url: str) -> None:
        import ldap3

        self.ldap3 = ldap3
        server = ldap3.Server(url)
        self.search_conn = ldap3.Connection(server, SERVICE_DN, SERVICE_PW, auto_bind=True)
        self.bind_conn = ldap3.Connection(server)
        self.bind_conn.open()

    def sign_in(self, username: str, password: str) -> bool:
        from ldap3.utils.conv import escape_filter_chars

        self.search_conn.search(
            PEOPLE, f"(uid={escape_filter_chars(username)})", attributes=["entryUUID", "cn", "mail"]
        )
        if len(self.search_conn.entries) != 1:
            return False
        return self._bind(self.search_conn.entries[0].entry_dn, password)

    def _bind(self, dn: str, password: str) -> bool:
        try:
            return bool(self.bind_conn.rebind(user=dn, password=password))
        except self.ldap3.core.exceptions.LDAPBindError:
            return False


class PythonLdapWorker:
    def __init__(self, url: str) -> None:
        import ldap
        import ldap.filter

        self.ldap = ldap
        self.search_conn = ldap.initialize(url)
        self.search_conn.simple_bind_s(SERVICE_DN, SERVICE_PW)
        self.bind_conn = ldap.initialize(url)

    def sign_in(self, username: str, password: str) -> bool:
        ldap = self.ldap
        f = f"(uid={ldap.filter.escape_filter_chars(username)})"
        found = self.search_conn.search_s(PEOPLE, ldap.SCOPE_SUBTREE, f, ["entryUUID", "cn", "mail"])
        if len(found) != 1:
            return False
        try:
            self.bind_conn.simple_bind_s(found[0][0], password)
            return True
        except ldap.INVALID_CREDENTIALS:
            return False


async def bench_threads(factory, url: str, concurrency: int, duration: float) -> dict:
    """Sign-ins through a bounded thread pool (one worker = one pair of connections per thread)."""
    local = threading.local()

    def sign_in(i: int) -> bool:
        worker = getattr(local, "worker", None)
        if worker is None:
            worker = local.worker = factory(url)
        return worker.sign_in(*USERS[i % len(USERS)])

    pool = concurrent.futures.ThreadPoolExecutor(max_workers=concurrency)
    loop = asyncio.get_running_loop()
    # direct call on the loop: how long one sign-in blocks it
    direct = factory(url)
    t = time.perf_counter()
    for i in range(50):
        assert direct.sign_in(*USERS[i % len(USERS)])
    blocked_ms = (time.perf_counter() - t) / 50 * 1000

    async def one(i: int) -> bool:
        return await loop.run_in_executor(pool, sign_in, i)

    result = await _drive(one, concurrency, duration)
    pool.shutdown(wait=True)
    result["direct_call_blocks_ms"] = round(blocked_ms, 2)
    return result


async def bench_bonsai(url: str, concurrency: int, duration: float) -> dict:
    import bonsai

    client = bonsai.LDAPClient(url)
    client.set_credentials("SIMPLE", user=SERVICE_DN, password=SERVICE_PW)
    searchers = [await client.connect(is_async=True) for _ in range(concurrency)]
    free = asyncio.Queue()
    for c in searchers:
        free.put_nowait(c)

    async def one(i: int) -> bool:
        username, password = USERS[i % len(USERS)]
        conn = await free.get()
        try:
            found = await conn.search(
                PEOPLE,
                bonsai.LDAPSearchScope.SUBTREE,
                f"(uid={bonsai.escape_filter_exp(username)})",
                ["entryUUID", "cn", "mail"],
            )
        finally:
            free.put_nowait(conn)
        if len(found) != 1:
            return False
        user_client = bonsai.LDAPClient(url)
        user_client.set_credentials("SIMPLE", user=str(found[0].dn), password=password)
        try:
            user_conn = await user_client.connect(is_async=True)
        except bonsai.AuthenticationError:
            return False
        user_conn.close()
        return True

    result = await _drive(one, concurrency, duration)
    for c in searchers:
        c.close()
    result["direct_call_blocks_ms"] = 0.0
    return result


async def _drive(one, concurrency: int, duration: float) -> dict:
    lags: list[float] = []
    stop = False

    async def ticker() -> None:
        while not stop:
            t = time.perf_counter()
            await asyncio.sleep(0.005)
            lags.append((time.perf_counter() - t - 0.005) * 1000)

    counter = 0
    failures = 0

    async def worker(w: int) -> None:
        nonlocal counter, failures
        i = w
        while not stop:
            ok = await one(i)
            counter += 1
            failures += not ok
            i += concurrency

    warm = [asyncio.create_task(one(i)) for i in range(concurrency)]
    await asyncio.gather(*warm)
    tick = asyncio.create_task(ticker())
    t0 = time.perf_counter()
    tasks = [asyncio.create_task(worker(w)) for w in range(concurrency)]
    await asyncio.sleep(duration)
    stop = True
    await asyncio.gather(*tasks)
    elapsed = time.perf_counter() - t0
    await tick
    return {
        "sign_ins_per_s": round(counter / elapsed, 1),
        "failures": failures,
        "loop_lag_p50_ms": round(statistics.median(lags), 2) if lags else None,
        "loop_lag_max_ms": round(max(lags), 2) if lags else None,
    }


async def bench_campusid(url: str, concurrency: int, duration: float) -> dict:
    """What the server runs: campusid's Directory (python-ldap in its bounded pool of threads)."""
    from campusid.idp.directory import Directory
    from campusid.idp.directory_settings import DirectorySettings

    directory = Directory(
        DirectorySettings(urls=(url,), user_base=PEOPLE, bind_dn=SERVICE_DN, bind_password=SERVICE_PW)
    )

    async def one(i: int) -> bool:
        return await directory.authenticate(*USERS[i % len(USERS)]) is not None

    try:
        result = await _drive(one, concurrency, duration)
    finally:
        directory.close()
    result["direct_call_blocks_ms"] = 0.0
    return result


async def bench_argon2(concurrency: int, duration: float) -> dict:
    """For comparison: a local account's password check, argon2id at campusid's defaults."""
    from campusid.idp.passwords import Passwords

    passwords = Passwords()
    stored = passwords.hash("mei-pw")

    async def one(i: int) -> bool:
        return await passwords.verify_async(stored, "mei-pw")

    try:
        result = await _drive(one, concurrency, duration)
    finally:
        passwords.close()
    result["direct_call_blocks_ms"] = 0.0
    return result


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=float, default=5.0)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--libs", default="ldap3,python-ldap,bonsai,campusid,argon2id")
    args = ap.parse_args()
    slapd = Slapd(Path(tempfile.mkdtemp(prefix="bench-slapd-"))).setup().start()
    try:
        for lib in args.libs.split(","):
            try:
                if lib == "ldap3":
                    res = asyncio.run(bench_threads(Ldap3Worker, slapd.url, args.concurrency, args.duration))
                elif lib == "python-ldap":
                    res = asyncio.run(bench_threads(PythonLdapWorker, slapd.url, args.concurrency, args.duration))
                elif lib == "bonsai":
                    res = asyncio.run(bench_bonsai(slapd.url, args.concurrency, args.duration))
                elif lib == "campusid":
                    res = asyncio.run(bench_campusid(slapd.url, args.concurrency, args.duration))
                elif lib == "argon2id":
                    res = asyncio.run(bench_argon2(args.concurrency, args.duration))
                else:
                    raise SystemExit(f"unknown library {lib!r}")
            except ImportError as exc:
                print(f"{lib:12} not installed ({exc})")
                continue
            print(f"{lib:12} c={args.concurrency} {res}")
    finally:
        slapd.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
