"""A hypothesis-driven fuzzer for the IdP's endpoints and pages (tests/fuzz/corpus.py's list, which
the long run's driver uses too): authorize (GET and POST), token, userinfo, revoke, introspect,
device authorization, login, the second factor, consent, logout, /device, the account pages, the
records API, the console, the portal and the management API, with malformed, duplicated,
oversized and non-UTF-8 parameters, bodies, headers and cookies. Real values are mixed in and
mutated (a real code fetched fresh with the browser's session,
a real access and refresh token, the real client_id, redirect_uri, session and CSRF token), so the
fuzzer reaches past the first check. Every answer: no 5xx, no traceback in the body or the logs, and
an OAuth endpoint's error is the protocol's JSON (RFC 6749 5.2, RFC 6750 3, RFC 7009 2.2.1).

The suite runs a short pass (CAMPUSID_FUZZ_EXAMPLES, default 250 requests); `make fuzz` a long one."""

from __future__ import annotations

import json
import logging
import os
import re
from urllib.parse import quote_from_bytes, urlencode

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.fuzz.corpus import CAS_ANSWERS, ENDPOINTS, JSON_ERRORS, NAMES, SAFE, SPECIAL, SUFFIXES, fill, mutate
from tests.idp.cas.helpers import SERVICE, cas_app, ticket_of
from tests.idp.conftest import NATIVE_REDIRECT
from tests.idp.helpers import PASSWORD, auth_params, callback_params, code_exchange, form_fields

EXAMPLES = int(os.environ.get("CAMPUSID_FUZZ_EXAMPLES_IDP", os.environ.get("CAMPUSID_FUZZ_EXAMPLES", "250")))


class Real:
    """Values the fuzzer mixes in: the real ones of a signed-in browser and a redeemed code."""

    def __init__(self, idp) -> None:
        self.idp = idp
        self.browser = idp.client()
        flow = auth_params(idp.native_id, NATIVE_REDIRECT, scope="openid profile offline_access")
        page = self.browser.get("/oauth/authorize", params=flow.params)
        action, fields = form_fields(page.text, "login-form")
        r = self.browser.post(action, data={**fields, "username": "alice", "password": PASSWORD})
        if r.status_code == 303 and r.headers["location"].startswith("/consent"):
            page = self.browser.get(r.headers["location"])
            action, fields = form_fields(page.text, "consent-form")
            self.csrf = fields.get("csrf_token", "")
            r = self.browser.post(action, data={**fields, "decision": "allow"})
        code = callback_params(r.headers["location"])["code"]
        tokens = self.browser.post(
            "/oauth/token", data=code_exchange(flow, code, NATIVE_REDIRECT, idp.native_id)
        ).json()
        self.access, self.refresh = tokens["access_token"], tokens["refresh_token"]
        self.session = dict(self.browser.cookies)
        cas_app(idp)  # a CAS app, whose service and tickets are mixed in too

    def fresh_ticket(self) -> str:
        """A new CAS service ticket from the browser's session (SSO)."""
        r = self.browser.get("/cas/login", params={"service": SERVICE})
        return ticket_of(r.headers["location"]) if r.status_code == 302 else "ST-none"

    def fresh_code(self) -> tuple[str, str]:
        """A new code from the browser's session (SSO) and its verifier."""
        flow = auth_params(self.idp.native_id, NATIVE_REDIRECT, scope="openid profile offline_access")
        r = self.browser.get("/oauth/authorize", params=flow.params)
        params = callback_params(r.headers.get("location", ""))
        return params.get("code", ""), flow.verifier

    def values(self) -> list[str]:
        return [
            self.idp.native_id, self.idp.web_id, NATIVE_REDIRECT, "code", "openid profile", "S256",
            "authorization_code", "refresh_token", self.access, self.refresh, "none", "login consent", "0", "allow",
            "deny", SERVICE, "true", "JSON", "https://portal.example.edu/portal/pgt",
        ]  # fmt: skip


# How to mutate a value, drawn the same way whatever the value is (hypothesis replays choice
# sequences and requires that a replay draws the same kinds of choices): applied by `mutate`.
MUTATION = st.tuples(st.integers(0, 4), st.integers(0, 10**6), st.characters(codec="utf-8"), st.sampled_from(SUFFIXES))


def mutations(value: str) -> st.SearchStrategy[str]:
    return MUTATION.map(lambda spec: mutate(value, spec))


def text_values() -> st.SearchStrategy[str]:
    return st.one_of(
        st.text(max_size=40),
        st.text(alphabet=st.characters(codec="utf-8"), max_size=40),
        st.sampled_from(SPECIAL),
        st.integers(1000, 70000).map(lambda n: "A" * n),  # oversized
    )


@st.composite
def requests(draw, real: Real):
    method, path = draw(st.sampled_from(ENDPOINTS))
    value = st.one_of(text_values(), st.tuples(st.sampled_from(real.values()), MUTATION).map(lambda t: mutate(*t)))
    path = fill(path, draw(value))
    pairs = draw(st.lists(st.tuples(st.sampled_from(NAMES) | st.text(max_size=10), value), max_size=12))
    if draw(st.booleans()) and pairs:  # a parameter sent twice (RFC 6749 3.1: must not be)
        pairs.append(draw(st.sampled_from(pairs)))
    if path == "/oauth/token" and draw(st.booleans()):
        code, verifier = real.fresh_code()  # a real, unused code, mutated or not
        base = [
            ("grant_type", "authorization_code"),
            ("code", draw(mutations(code))),
            ("redirect_uri", NATIVE_REDIRECT),
            ("client_id", real.idp.native_id),
            ("code_verifier", verifier),
        ]
        pairs = base + pairs[: draw(st.integers(0, 3))]
    if path in CAS_ANSWERS and path != "/cas/proxy" and draw(st.booleans()):
        ticket = real.fresh_ticket()  # a real, unused ticket, mutated or not, with the real service
        pairs = [("service", SERVICE), ("ticket", draw(mutations(ticket)))] + pairs[: draw(st.integers(0, 3))]
    encoded = urlencode(pairs).encode()
    if draw(st.integers(0, 5)) == 0:  # non-UTF-8: raw bytes, or percent-encoded invalid sequences
        junk = draw(st.binary(min_size=1, max_size=40))
        encoded += b"&" + draw(st.sampled_from([b"x=" + quote_from_bytes(junk).encode(), junk]))
    content_type = draw(
        st.sampled_from(
            ["application/x-www-form-urlencoded", "application/json", "text/plain", "multipart/form-data",
             "application/x-www-form-urlencoded; charset=latin-1", ""]
        )
    )  # fmt: skip
    body = encoded
    if content_type == "application/json" and draw(st.booleans()):
        body = json.dumps(dict(pairs)).encode()[: draw(st.integers(0, 4000))]  # possibly cut mid-JSON
    headers = {"content-type": content_type} if content_type else {}
    auth = draw(st.sampled_from(["", "bearer", "basic", "junk"]))
    if auth == "bearer":
        headers["authorization"] = "Bearer " + draw(mutations(real.access) | text_values().filter(str.isascii))
    elif auth == "basic":
        headers["authorization"] = "Basic " + draw(st.sampled_from(["", "!!!", "Zm9v", "YTpi" * 3000, "w4k6w4k="]))
    elif auth == "junk":
        headers["authorization"] = draw(
            st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=60)
        )
    cookies = {}
    if draw(st.booleans()):
        cookies = {name: draw(mutations(v)) for name, v in real.session.items()}
        cookies = {k: v for k, v in cookies.items() if v.isascii() and ";" not in v and "\r" not in v and "\n" not in v}
    return method, path, encoded, body, headers, cookies


@pytest.fixture
def real(idp):
    return Real(idp)


def test_fuzzed_requests_get_protocol_answers_never_a_5xx(idp, real, caplog):
    counts: dict[int, int] = {}
    client = idp.client()

    # No shrinking: each example is a real request; the failing one is reported as it was.
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.generate],
    )
    @given(st.data())
    def check(data):
        method, path, query, body, headers, cookies = data.draw(requests(real))
        # a request line longer than nginx's 8 KB buffers never reaches campusid (nginx answers 414:
        # tests/fuzz/long_run.py), and httpx refuses to send a URL over 64 KB: the path is cut at 8 KB
        path = path[:8000]
        # raw bytes, non-ASCII too; CR, LF and NUL cannot be sent in a header (the HTTP parser refuses them)
        headers = {k: re.sub("[\r\n\x00]", "", v).encode("utf-8", "surrogatepass") for k, v in headers.items()}
        client.cookies.clear()
        for name, value in cookies.items():
            client.cookies.set(name, value)
        if method == "GET":  # a URL is cut at 8 KB, as nginx's large_client_header_buffers would
            target = quote_from_bytes(query[:8000], safe=SAFE)
            r = client.request("GET", path + "?" + target, headers=headers)
        else:
            r = client.request(method, path, content=body, headers=headers)
        counts[r.status_code] = counts.get(r.status_code, 0) + 1
        shown = {k: v[:200] for k, v in headers.items()}
        assert r.status_code < 500, (method, path, query[:300], body[:300], shown, r.status_code, r.text[:500])
        assert "Traceback" not in r.text
        if path in JSON_ERRORS and r.status_code in (400, 401):
            assert "error" in r.json(), r.text[:300]
        if path in CAS_ANSWERS and r.status_code != 405:  # the protocol's answer, a refusal included
            assert r.status_code == 200 and (
                "<cas:serviceResponse" in r.text
                or '"serviceResponse"' in r.text
                or r.text in ("no\n\n", "yes\nalice\n")
            ), (path, r.status_code, r.text[:300])
        if path == "/oauth/userinfo" and r.status_code == 401:
            assert r.headers["www-authenticate"].startswith("Bearer")

    with caplog.at_level(logging.WARNING):
        check()
    print(f"IdP fuzz: {sum(counts.values())} requests, answers per status {dict(sorted(counts.items()))}")
    tracebacks = [rec for rec in caplog.records if rec.exc_info or "Traceback" in rec.getMessage()]
    assert not tracebacks, [rec.getMessage() for rec in tracebacks[:5]]
    assert set(counts) - {200, 201, 302, 303, 400, 401, 403, 404, 405, 409, 413, 415, 422, 429} == set(), counts
