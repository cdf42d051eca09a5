"""Stateful fuzzing: hypothesis chooses sequences of steps on one IdP — sign in, get a code with
the session, redeem a code (as it is or mutated, once or again), refresh (the newest token, an old
one or a mutated one), call userinfo, revoke, sign out — and after every step checks what must
always hold: no 5xx, no traceback; a code gives tokens at most once (RFC 6749 4.1.2); a refresh
token that was rotated or revoked never works again, and reusing a rotated one ends its family
(RFC 9700 4.14.2); an access token of an ended grant is refused at userinfo (RFC 7009 2.1).
`make fuzz` runs many more sequences (CAMPUSID_FUZZ_SEQUENCES)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from tests.fuzz.test_fuzz_idp import MUTATION, mutate
from tests.idp.conftest import NATIVE_REDIRECT, IdP
from tests.idp.helpers import PASSWORD, auth_params, callback_params, code_exchange, form_fields

SEQUENCES = int(os.environ.get("CAMPUSID_FUZZ_SEQUENCES", "100"))
# The suite's short pass runs the same sequences every time (so it cannot pass or fail by chance);
# `make fuzz` explores new ones at each run.
DERANDOMIZE = "CAMPUSID_FUZZ_SEQUENCES" not in os.environ
PICK = st.integers(0, 10**6)  # an item of a pool, taken modulo its size (see MUTATION)


class IdPSteps(RuleBasedStateMachine):
    idp: IdP  # set by the test
    counts: dict[str, int] = {}  # noqa: RUF012 - the test's tally across sequences

    def __init__(self) -> None:
        super().__init__()
        self.browser = self.idp.client()
        self.signed_in = False
        self.codes: list[tuple[str, object]] = []  # (code, flow) not yet redeemed
        self.redeemed: list[tuple[str, object]] = []
        # {"refresh": newest, "old": [rotated], "access", "code", "session", "alive": True, False or None}
        # (None: not known, after signing out of the session it was issued in; the next refresh says)
        self.grants: list[dict] = []
        self.session = 0
        self.last = None

    def _seen(self, r):
        self.last = r
        key = f"{r.request.method} {r.request.url.path} {r.status_code}"
        IdPSteps.counts[key] = IdPSteps.counts.get(key, 0) + 1
        assert r.status_code < 500, (r.request.method, r.request.url.path, r.status_code, r.text[:300])
        assert "Traceback" not in r.text
        return r

    @rule()
    def sign_in(self):
        flow = auth_params(self.idp.native_id, NATIVE_REDIRECT, scope="openid profile offline_access")
        page = self._seen(self.browser.get("/oauth/authorize", params=flow.params))
        if 'id="login-form"' not in page.text:
            return
        action, fields = form_fields(page.text, "login-form")
        r = self._seen(self.browser.post(action, data={**fields, "username": "alice", "password": PASSWORD}))
        if r.status_code == 303 and r.headers["location"].startswith("/consent"):
            page = self._seen(self.browser.get(r.headers["location"]))
            action, fields = form_fields(page.text, "consent-form")
            r = self._seen(self.browser.post(action, data={**fields, "decision": "allow"}))
        if r.status_code in (302, 303) and r.headers["location"].startswith(NATIVE_REDIRECT):
            self.session += 1
            self.codes.append((callback_params(r.headers["location"])["code"], flow))
            self.signed_in = True

    @rule()
    def code_with_the_session(self):
        if not self.signed_in:
            return
        flow = auth_params(self.idp.native_id, NATIVE_REDIRECT, scope="openid profile offline_access")
        r = self._seen(self.browser.get("/oauth/authorize", params=flow.params))
        if r.status_code in (302, 303) and "code=" in r.headers.get("location", ""):
            self.codes.append((callback_params(r.headers["location"])["code"], flow))

    @rule(pick=PICK, spec=MUTATION)
    def redeem(self, pick, spec):
        pool = self.codes + self.redeemed
        if not pool:
            return
        code, flow = pool[pick % len(pool)]
        sent = mutate(code, spec)
        r = self._seen(
            self.idp.client().post("/oauth/token", data=code_exchange(flow, sent, NATIVE_REDIRECT, self.idp.native_id))
        )
        first_time = (code, flow) in self.codes
        if r.status_code == 200:
            assert sent == code and first_time, "a code gave tokens twice, or a mutated code worked"
            self.codes.remove((code, flow))
            self.redeemed.append((code, flow))
            body = r.json()
            self.grants.append(
                {
                    "refresh": body["refresh_token"],
                    "old": [],
                    "access": body["access_token"],
                    "code": code,
                    "session": self.session,
                    "alive": True,
                }
            )
        else:
            assert r.json()["error"] in ("invalid_grant", "invalid_request"), r.text
            if sent == code and first_time:
                raise AssertionError(f"a fresh, unmutated code was refused: {r.text}")
            if sent == code and not first_time:  # a replay: what the code gave is revoked (RFC 6749 4.1.2)
                for grant in self.grants:
                    if grant["code"] == code:
                        grant["alive"] = False

    @rule(pick=PICK, which=st.sampled_from(["newest", "old", "mutated"]), spec=MUTATION)
    def refresh(self, pick, which, spec):
        if not self.grants:
            return
        grant = self.grants[pick % len(self.grants)]
        token = {
            "newest": grant["refresh"],
            "old": grant["old"][-1] if grant["old"] else grant["refresh"],
            "mutated": mutate(grant["refresh"], spec),
        }[which]
        if token == grant["refresh"]:
            which = "newest"
        form = {"grant_type": "refresh_token", "refresh_token": token, "client_id": self.idp.native_id}
        r = self._seen(self.idp.client().post("/oauth/token", data=form))
        if r.status_code == 200:
            assert which == "newest" and grant["alive"] is not False, (
                f"a {which} refresh token, or one of an ended grant, worked"
            )
            grant["alive"] = True
            grant["old"].append(grant["refresh"])
            grant["refresh"], grant["access"] = r.json()["refresh_token"], r.json()["access_token"]
        else:
            assert r.json()["error"] in ("invalid_grant", "invalid_request"), r.text
            if which == "newest":
                assert grant["alive"] is not True, f"the newest refresh token of a live grant was refused: {r.text}"
                grant["alive"] = False
            if which == "old":
                grant["alive"] = False  # reuse of a rotated token ends the family (RFC 9700 4.14.2)

    @rule(pick=PICK)
    def userinfo(self, pick):
        if not self.grants:
            return
        grant = self.grants[pick % len(self.grants)]
        r = self._seen(self.idp.client().get("/oauth/userinfo", headers={"Authorization": f"Bearer {grant['access']}"}))
        if grant["alive"] is False:
            assert r.status_code == 401, "an access token of an ended grant was accepted"

    @rule(pick=PICK)
    def revoke(self, pick):
        if not self.grants:
            return
        grant = self.grants[pick % len(self.grants)]
        form = {"token": grant["refresh"], "token_type_hint": "refresh_token", "client_id": self.idp.native_id}
        r = self._seen(self.idp.client().post("/oauth/revoke", data=form))
        assert r.status_code == 200, r.text
        grant["alive"] = False

    @rule()
    def sign_out(self):
        if not self.signed_in:
            return
        page = self._seen(self.browser.get("/logout"))
        if 'id="logout-form"' in page.text:
            action, fields = form_fields(page.text, "logout-form")
            self._seen(self.browser.post(action, data=fields))
        self.signed_in = False
        self.codes = []  # codes of the ended session are not followed further
        for grant in self.grants:
            if grant["session"] == self.session and grant["alive"]:
                grant["alive"] = None  # signing out may end the session's grants

    @invariant()
    def never_a_server_error(self):
        assert self.last is None or self.last.status_code < 500


def test_stateful_sequences_keep_the_protocol_rules(idp):
    IdPSteps.idp = idp
    machine = IdPSteps.TestCase
    machine.settings = settings(
        max_examples=SEQUENCES,
        stateful_step_count=12,
        derandomize=DERANDOMIZE,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.generate],
    )
    machine().runTest()
    total = sum(IdPSteps.counts.values())
    print(f"stateful fuzz: {SEQUENCES} sequences, {total} requests: {dict(sorted(IdPSteps.counts.items()))}")
    redeemed = sum(n for k, n in IdPSteps.counts.items() if k == "POST /oauth/token 200")
    assert total >= SEQUENCES and redeemed > 0  # the sequences reached codes and tokens
