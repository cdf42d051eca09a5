"""What a CAS validation or proxy request may carry, and its error codes in the order they are
checked (Apereo CAS Protocol 3.0.3 2.4-2.7 and Appendix A, with campusid's stricter reading of
INVALID_REQUEST, docs/cas.md):

1. INVALID_REQUEST — a required parameter missing or empty, any parameter given twice, `service`,
   `pgtUrl` or `targetService` over 2,048 characters, `ticket` or `pgt` over 256, a value that is
   not UTF-8 (or holds NUL), an unknown `format`. Nothing is consumed.
2. INVALID_TICKET_SPEC — a ticket of a kind the endpoint does not validate (a PT at
   /serviceValidate, a PGT anywhere, no known prefix).
3. INVALID_TICKET — unknown, expired, used, `renew` not met, its app no longer active.
4. INVALID_SERVICE — the service differs from the one the ticket was issued for.
5. UNAUTHORIZED_SERVICE_PROXY — a pgtUrl from an app whose review did not grant `cas_proxy`.
6. INVALID_PROXY_CALLBACK — the pgtUrl is not https, not one of the app's services, or its
   callback failed.
7. INTERNAL_ERROR — the store cannot be reached (the answer is still a 200 with this body).
/proxy has its own: INVALID_REQUEST, INVALID_TICKET (the PGT), UNAUTHORIZED_SERVICE (a
targetService that no active CAS app registered).
"""

from __future__ import annotations

from dataclasses import dataclass

from campusid.idp.cas.rules.services import MAX_SERVICE
from campusid.idp.cas.rules.tickets import PGT, PT, ST, kind_of
from campusid.idp.errors import RequestError
from campusid.idp.web.params import MAX_PARAMS, decode_component

INVALID_REQUEST = "INVALID_REQUEST"
INVALID_TICKET_SPEC = "INVALID_TICKET_SPEC"
INVALID_TICKET = "INVALID_TICKET"
INVALID_SERVICE = "INVALID_SERVICE"
UNAUTHORIZED_SERVICE_PROXY = "UNAUTHORIZED_SERVICE_PROXY"
INVALID_PROXY_CALLBACK = "INVALID_PROXY_CALLBACK"
INTERNAL_ERROR = "INTERNAL_ERROR"
UNAUTHORIZED_SERVICE = "UNAUTHORIZED_SERVICE"
# The order they are checked in (a request failing two gets the first).
ORDER = (
    INVALID_REQUEST,
    INVALID_TICKET_SPEC,
    INVALID_TICKET,
    INVALID_SERVICE,
    UNAUTHORIZED_SERVICE_PROXY,
    INVALID_PROXY_CALLBACK,
    INTERNAL_ERROR,
)
CODES = (*ORDER, UNAUTHORIZED_SERVICE)

MAX_TICKET_PARAM = 256
MAX_OTHER = 4096  # any other parameter: nothing a client sends is longer
XML, JSON = "XML", "JSON"
_LIMITS = {"service": MAX_SERVICE, "pgtUrl": MAX_SERVICE, "targetService": MAX_SERVICE, "ticket": 256, "pgt": 256}


class CasFailure(Exception):
    """A refused validation or proxy request: its CAS code and a description for people."""

    def __init__(self, code: str, description: str) -> None:
        super().__init__(description)
        self.code, self.description = code, description


def read_params(raw: bytes) -> dict[str, list[str]]:
    """Every parameter of a query string or form body with all its values; INVALID_REQUEST for
    one that is not UTF-8, holds NUL, or is too long, or for too many."""
    out: dict[str, list[str]] = {}
    pairs = [p for p in raw.split(b"&") if p]
    if len(pairs) > MAX_PARAMS:
        raise CasFailure(INVALID_REQUEST, "too many parameters")
    for pair in pairs:
        k, _, v = pair.partition(b"=")
        try:
            key, value = decode_component(k, "a parameter name"), decode_component(v, "a parameter")
        except RequestError as exc:
            raise CasFailure(INVALID_REQUEST, exc.description) from None
        if len(value) > _LIMITS.get(key, MAX_OTHER):
            raise CasFailure(INVALID_REQUEST, f"parameter {key[:40]!r} is too long")
        out.setdefault(key, []).append(value)
    return out


def response_format(params: dict[str, list[str]]) -> str:
    """`format` (CAS 3.0 2.5.1: XML or JSON, case-insensitive, XML by default). What an answer is
    written in: a duplicated or unknown format is an INVALID_REQUEST answered in XML."""
    values = params.get("format")
    if not values:
        return XML
    if len(values) == 1 and values[0].upper() in (XML, JSON):
        return values[0].upper()
    return XML


def check_request(params: dict[str, list[str]], required: tuple[str, ...]) -> dict[str, str]:
    """INVALID_REQUEST unless every parameter is given once and each of `required` is non-empty
    (and `format`, when given, is XML or JSON); the single values."""
    twice = [k for k, v in params.items() if len(v) > 1]
    if twice:
        raise CasFailure(INVALID_REQUEST, f"parameter {twice[0][:40]!r} is given more than once")
    single = {k: v[0] for k, v in params.items()}
    for name in required:
        if not single.get(name):
            raise CasFailure(INVALID_REQUEST, f"'{name}' is required")
    if "format" in single and single["format"].upper() not in (XML, JSON):
        raise CasFailure(INVALID_REQUEST, "format must be XML or JSON")
    return single


def renew_asked(params: dict[str, str]) -> bool:
    """`renew=true` (CAS 3.0 2.5.1): only a ticket from a new login (a password typed for it) passes."""
    return params.get("renew", "").lower() == "true"


@dataclass(frozen=True)
class Endpoint:
    """A validation endpoint: the ticket kinds it validates, whether it may answer with attributes
    and proxies, whether it is CAS 1.0's text `/validate`."""

    name: str
    kinds: tuple[str, ...]
    text: bool = False


VALIDATE = Endpoint("validate", (ST,), text=True)
SERVICE_VALIDATE = Endpoint("serviceValidate", (ST,))
P3_SERVICE_VALIDATE = Endpoint("p3/serviceValidate", (ST,))
PROXY_VALIDATE = Endpoint("proxyValidate", (ST, PT))
P3_PROXY_VALIDATE = Endpoint("p3/proxyValidate", (ST, PT))
ENDPOINTS = (VALIDATE, SERVICE_VALIDATE, P3_SERVICE_VALIDATE, PROXY_VALIDATE, P3_PROXY_VALIDATE)


def check_ticket_spec(endpoint: Endpoint, ticket: str) -> str:
    """INVALID_TICKET_SPEC for a ticket this endpoint does not validate (CAS 3.0 2.5: a PT at
    /serviceValidate; 2.4: /validate never a PT; a PGT or PGTIOU is never validated); its kind."""
    kind = kind_of(ticket)
    if kind not in endpoint.kinds:
        what = "a proxy ticket" if kind == PT else "not a ticket this endpoint validates"
        raise CasFailure(INVALID_TICKET_SPEC, f"the ticket is {what}")
    return kind


def burns(kind: str | None) -> bool:
    """Whether presenting it consumes it: an ST or PT is single use whatever the outcome (CAS 3.0
    3.1.1, 3.2.1); a PGT is not consumed by a wrong presentation."""
    return kind in (ST, PT)


__all__ = ["PGT", "PT", "ST"]
