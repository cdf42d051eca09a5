"""What the fuzzers send, shared by the suite's hypothesis fuzzer (test_fuzz_idp.py), the stateful
machine (test_fuzz_stateful.py) and the long run's driver (long_run.py): every endpoint and page
of the IdP, the parameter names they read, and how a real value is mutated. The hypothesis
fuzzers draw from these with strategies; the long run draws with a seeded `random.Random`, which
is many times faster per request."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from urllib.parse import quote, quote_from_bytes, urlencode

# Every route of idp/app.py, the account pages, the portal and the console included; a
# {placeholder} is filled with a real or mutated value.
ENDPOINTS = [
    ("GET", "/oauth/authorize"),
    ("POST", "/oauth/authorize"),
    ("POST", "/oauth/token"),
    ("GET", "/oauth/userinfo"),
    ("POST", "/oauth/userinfo"),
    ("POST", "/oauth/revoke"),
    ("POST", "/oauth/introspect"),
    ("POST", "/oauth/device_authorization"),
    ("GET", "/login"),
    ("POST", "/login"),
    ("GET", "/login/mfa"),
    ("POST", "/login/mfa"),
    ("POST", "/passkey/options"),
    ("POST", "/passkey"),
    ("GET", "/consent"),
    ("POST", "/consent"),
    ("GET", "/logout"),
    ("POST", "/logout"),
    ("GET", "/device"),
    ("POST", "/device"),
    ("GET", "/account"),
    ("POST", "/account/sessions/end"),
    ("POST", "/account/sessions/others"),
    ("POST", "/account/apps/revoke"),
    ("GET", "/account/security/totp"),
    ("POST", "/account/security/totp"),
    ("POST", "/account/security/factor/remove"),
    ("POST", "/account/security/recovery-codes"),
    ("POST", "/account/security/password"),
    ("GET", "/records/v1/grades"),
    ("GET", "/.well-known/openid-configuration"),
    ("GET", "/oauth/jwks"),
    ("GET", "/"),
    ("GET", "/healthz"),
    ("GET", "/readyz"),
    ("GET", "/developer"),
    ("GET", "/developer/apps/new"),
    ("POST", "/developer/apps"),
    ("GET", "/developer/apps/{client_id}"),
    ("GET", "/developer/apps/{client_id}/edit"),
    ("POST", "/developer/apps/{client_id}/edit"),
    ("POST", "/developer/apps/{client_id}/submit"),
    ("POST", "/developer/apps/{client_id}/rotate-secret"),
    ("GET", "/admin"),
    ("GET", "/admin/apps"),
    ("GET", "/admin/apps/{client_id}"),
    ("POST", "/admin/apps/{client_id}/approve"),
    ("POST", "/admin/apps/{client_id}/suspend"),
    ("GET", "/admin/audit"),
    ("GET", "/admin/events"),
    ("GET", "/admin/users"),
    ("POST", "/admin/users/{username}/role"),
    ("GET", "/api/v1/me"),
    ("GET", "/api/v1/apps"),
    ("POST", "/api/v1/apps"),
    ("GET", "/api/v1/apps/{client_id}"),
    ("PATCH", "/api/v1/apps/{client_id}"),
    ("POST", "/api/v1/apps/{client_id}/revision"),
    ("POST", "/api/v1/apps/{client_id}/submit"),
    ("POST", "/api/v1/apps/{client_id}/approve"),
    ("GET", "/api/v1/apps/{client_id}/events"),
    ("GET", "/api/v1/reviews"),
    ("GET", "/api/v1/audit"),
    ("GET", "/api/v1/users"),
    ("PUT", "/api/v1/users/{username}/role"),
    ("GET", "/api/v1/openapi.json"),
    ("GET", "/cas/login"),
    ("GET", "/cas/logout"),
    ("GET", "/cas/validate"),
    ("GET", "/cas/serviceValidate"),
    ("POST", "/cas/serviceValidate"),
    ("GET", "/cas/p3/serviceValidate"),
    ("GET", "/cas/proxyValidate"),
    ("GET", "/cas/p3/proxyValidate"),
    ("POST", "/cas/p3/proxyValidate"),
    ("GET", "/cas/proxy"),
]
# CAS's validation and proxy endpoints: every answer is a 200 with the protocol's body (Apereo CAS
# Protocol 3.0.3 2.5.2), a refusal included; another method gets 405.
CAS_ANSWERS = {
    "/cas/validate", "/cas/serviceValidate", "/cas/p3/serviceValidate", "/cas/proxyValidate",
    "/cas/p3/proxyValidate", "/cas/proxy",
}  # fmt: skip
# Where an error is the protocol's JSON (RFC 6749 5.2, RFC 7009 2.2.1, RFC 8628 3.2).
JSON_ERRORS = {"/oauth/token", "/oauth/revoke", "/oauth/introspect", "/oauth/device_authorization"}
NAMES = [
    "client_id", "redirect_uri", "response_type", "scope", "state", "nonce", "code_challenge",
    "code_challenge_method", "prompt", "max_age", "grant_type", "code", "code_verifier", "refresh_token",
    "token", "token_type_hint", "device_code", "user_code", "username", "password", "csrf_token", "decision",
    "interaction", "next", "response_mode", "request", "request_uri", "login_hint", "id_token_hint", "ui_locales",
    "claims", "acr_values", "client_secret", "assertion", "otp", "recovery_code", "factor", "session", "role",
    "name", "redirect_uris", "type", "before", "grant_scopes", "new_password", "current_password",
    "service", "ticket", "renew", "gateway", "format", "pgtUrl", "pgt", "targetService", "url", "services",
]  # fmt: skip
SUFFIXES = ["\x00", "%00", "'", '"><script>', "\r\nX: y", "\ud7ff", "\u202e", " ", "=", "A" * 5000]
SPECIAL = ["", " ", "-1", "99999999999999999999", "1e309", "NaN", "true", "[]", "{}", "null"]
CONTENT_TYPES = [
    "application/x-www-form-urlencoded", "application/json", "text/plain", "multipart/form-data",
    "application/x-www-form-urlencoded; charset=latin-1", "",
]  # fmt: skip
GRANT_TYPES = [
    "authorization_code", "refresh_token", "urn:ietf:params:oauth:grant-type:device_code", "client_credentials",
    "password", "urn:ietf:params:oauth:grant-type:token-exchange",
]  # fmt: skip
SAFE = "&=%+;/?:@!$'()*,~"  # a request line has no raw controls


def mutate(value: str, spec: tuple[int, int, str, str]) -> str:
    """The value itself, cut, doubled, with a character changed, or with something hostile added.
    `spec` is (kind 0-4, position, character, suffix)."""
    kind, position, char, suffix = spec
    if kind == 1:
        return value[: position % (len(value) + 1)]
    if kind == 2:
        return value + value
    if kind == 3 and value:
        at = position % len(value)
        return value[:at] + char + value[at + 1 :]
    if kind == 4:
        return value + suffix
    return value


def fill(path: str, value: str) -> str:
    """The path with its {placeholder} replaced by `value`, percent-encoded."""
    if "{" not in path:
        return path
    head, _, rest = path.partition("{")
    return head + quote(value.encode("utf-8", "surrogatepass"), safe="") + rest.partition("}")[2]


@dataclass
class Request:
    method: str
    path: str  # with the query, percent-encoded
    body: bytes
    headers: list[tuple[str, bytes]]


class Draw:
    """The long run's draws: the same choices as the hypothesis strategies of test_fuzz_idp.py,
    made with a seeded random.Random."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def char(self) -> str:
        r = self.rng.random()
        if r < 0.5:
            return chr(self.rng.randint(32, 126))
        if r < 0.9:
            return chr(self.rng.randint(0x80, 0xD7FF))
        return chr(self.rng.choice([0, 9, 10, 13, 0x202E, 0xFEFF, 0x10FFFF, 0xE000]))

    def spec(self) -> tuple[int, int, str, str]:
        return (self.rng.randint(0, 4), self.rng.randint(0, 10**6), self.char(), self.rng.choice(SUFFIXES))

    def mutated(self, value: str) -> str:
        return mutate(value, self.spec())

    def text(self) -> str:
        r = self.rng.random()
        if r < 0.5:
            return "".join(self.char() for _ in range(self.rng.randint(0, 40)))
        if r < 0.95:
            return self.rng.choice(SPECIAL)
        return "A" * self.rng.randint(1000, 70000)  # oversized

    def value(self, real: list[str]) -> str:
        return self.mutated(self.rng.choice(real)) if real and self.rng.random() < 0.6 else self.text()

    def request(self, real: list[str], placeholders: dict[str, list[str]], cookies: dict[str, str]) -> Request:
        """A fuzzed request to one of ENDPOINTS: real values (codes, tokens, client ids, CSRF tokens)
        mixed in and mutated, parameters duplicated, non-UTF-8 bytes, bodies of the wrong type or
        cut mid-JSON, hostile Authorization headers, the session's cookies mutated."""
        rng = self.rng
        method, path = rng.choice(ENDPOINTS)
        if "{" in path:
            name = path[path.index("{") + 1 : path.index("}")]
            path = fill(path, self.value(placeholders.get(name, [])))
        pairs = [(rng.choice(NAMES) if rng.random() < 0.9 else self.text()[:10], self.value(real))
                 for _ in range(rng.randint(0, 12))]  # fmt: skip
        if path == "/oauth/token" and rng.random() < 0.5:
            pairs.insert(0, ("grant_type", rng.choice(GRANT_TYPES)))
        if pairs and rng.random() < 0.5:  # a parameter sent twice (RFC 6749 3.1: must not be)
            pairs.append(rng.choice(pairs))
        encoded = urlencode(
            [(k.encode("utf-8", "surrogatepass"), v.encode("utf-8", "surrogatepass")) for k, v in pairs]
        )
        encoded = encoded.encode()
        if rng.randint(0, 5) == 0:  # non-UTF-8: raw bytes, or percent-encoded invalid sequences
            junk = rng.randbytes(rng.randint(1, 40))
            encoded += b"&" + rng.choice([b"x=" + quote_from_bytes(junk).encode(), junk])
        content_type = rng.choice(CONTENT_TYPES)
        body = encoded
        if content_type == "application/json" and rng.random() < 0.5:
            as_json = json.dumps({k: v for k, v in pairs}).encode()
            body = as_json[: rng.randint(0, 4000)]  # possibly cut mid-JSON
        headers: list[tuple[str, bytes]] = []
        if content_type:
            headers.append(("content-type", content_type.encode()))
        auth = rng.choice(["", "bearer", "basic", "junk"])
        if auth == "bearer":
            token = self.value([v for v in real if v.isascii()])
            headers.append(("authorization", b"Bearer " + token.encode("utf-8", "surrogatepass")))
        elif auth == "basic":
            headers.append(
                ("authorization", b"Basic " + rng.choice([b"", b"!!!", b"Zm9v", b"YTpi" * 3000, b"w4k6w4k="]))
            )
        elif auth == "junk":
            headers.append(("authorization", bytes(rng.randint(32, 126) for _ in range(rng.randint(0, 60)))))
        if rng.random() < 0.3:
            headers.append(("x-csrf-token", self.value(real).encode("utf-8", "surrogatepass")))
        if cookies and rng.random() < 0.6:
            jar = "; ".join(f"{k}={self.mutated(v) if rng.random() < 0.3 else v}" for k, v in cookies.items())
            headers.append(("cookie", jar.encode("utf-8", "surrogatepass")))
        headers = [(k, v.replace(b"\r", b"").replace(b"\n", b"").replace(b"\x00", b"")) for k, v in headers]
        if method == "GET":
            return Request(method, path + "?" + quote_from_bytes(encoded[:8000], safe=SAFE), b"", headers)
        return Request(method, path, body, headers)
