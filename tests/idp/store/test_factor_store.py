"""The store's second-factor methods on the suite's database (SQLite, or PostgreSQL with its pool,
where concurrent calls really overlap): of many workers presenting one TOTP step, one recovery
code or one passkey counter at once, exactly one is accepted."""

from __future__ import annotations

import asyncio
import time

import pytest

from campusid.idp.second_factors import SecondFactors
from campusid.idp.store import open_store
from campusid.idp.store.factors import PASSKEY
from campusid.idp.store.rows import Factor
from tests.idp.helpers import make_user, run


@pytest.fixture
def store(database_url, tmp_path):
    s = open_store(database_url, tmp_path / "data")
    yield s
    s.close()


def test_one_totp_step_one_recovery_code_and_one_counter_value_are_each_accepted_once(store):
    user = make_user(store, "alice")
    factors = SecondFactors(store, "k" * 48, "campusid")
    now = int(time.time())

    async def scenario():
        enrolment = await factors.start_totp(user)
        import pyotp

        codes = await factors.confirm_totp(user.id, enrolment.factor_id, pyotp.TOTP(enrolment.secret).at(now))
        assert codes is not None and len(codes) == 10
        (totp,) = await store.factors.list(user.id)
        step = now // 30 + 1
        steps = await asyncio.gather(*(store.factors.use_totp_step(totp.id, step, now) for _ in range(8)))
        earlier = await store.factors.use_totp_step(totp.id, step - 1, now)
        digest = factors._digests.digest(codes[0].replace("-", ""))
        recoveries = await asyncio.gather(*(store.factors.use_recovery_code(user.id, digest, now) for _ in range(8)))
        passkey = Factor("p1", user.id, PASSKEY, "Passkey", None, "cred-1", b"pk", 5, None, now, now, None)
        await store.factors.add_passkey(passkey)
        uses = await asyncio.gather(*(store.factors.use_passkey("p1", 5, 6, now) for _ in range(8)))
        return steps, earlier, recoveries, uses, await store.factors.recovery_codes_left(user.id)

    steps, earlier, recoveries, uses, left = run(store, scenario())
    assert sorted(steps) == [False] * 7 + [True]
    assert earlier is False  # an earlier step than the last accepted one
    assert sorted(recoveries) == [False] * 7 + [True] and left == 9
    assert sorted(uses) == [False] * 7 + [True]


def test_reset_removes_every_factor_and_code(store):
    user = make_user(store, "bob")
    factors = SecondFactors(store, "k" * 48, "campusid")

    async def scenario():
        enrolment = await factors.start_totp(user)
        import pyotp

        await factors.confirm_totp(user.id, enrolment.factor_id, pyotp.TOTP(enrolment.secret).now())
        kinds = await store.factors.reset(user.id)
        return kinds, await store.factors.list(user.id), await store.factors.recovery_codes_left(user.id)

    assert run(store, scenario()) == (["totp"], [], 0)
