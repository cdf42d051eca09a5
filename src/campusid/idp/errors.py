"""A refused request as an exception that carries everything its answer needs.

`RequestError` is the root every protocol face's errors share (OAuth 2.0's in idp/oidc/errors.py):
the HTTP status, a machine code (`error`), a human `description`, and the response headers the
refusal implies — an authentication challenge (`challenge`, RFC 6749 5.2 Basic, RFC 6750 3
Bearer) and `Retry-After` (RFC 9110 10.2.3) when the refusal is a limit or an outage. Handlers
raise; the few places that answer (idp/web/answers.py, and the authorization endpoint's own)
read these and never decide a status or a header themselves.
"""

from __future__ import annotations

import re

# RFC 6749 5.2 and 4.1.2.1, RFC 6750 3: error_description is NQSCHAR only, %x20-21 / %x23-5B / %x5D-7E.
_NOT_NQSCHAR = re.compile(r"[^\x20\x21\x23-\x5b\x5d-\x7e]")
DESCRIPTION_MAX = 200


def description_text(text: str) -> str:
    """An error description as RFC 6749 5.2 allows it (printable ASCII without '"' and '\\'),
    each other character '?', at most DESCRIPTION_MAX characters. A description may quote what
    the request sent, which is anyone's bytes; in a header (RFC 6750 3's WWW-Authenticate) a
    non-ASCII byte or a quote would break the header or be read as a new parameter."""
    return _NOT_NQSCHAR.sub("?", text[:DESCRIPTION_MAX])


class RequestError(Exception):
    """A request refused with `status` and the code `error`; `retry_after` seconds when it may
    succeed later (a limit, an outage). `description` is the protocol's error_description (ASCII,
    RFC 6749 5.2); `message` the same text for a page, which shows it in the reader's language
    when it was marked for translation (campusid.i18n.N_)."""

    status = 400
    error = "invalid_request"

    def __init__(
        self,
        description: str = "",
        *,
        error: str | None = None,
        status: int | None = None,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(description)
        self.message = description
        self.description = description_text(description)
        if error is not None:
            self.error = error
        if status is not None:
            self.status = status
        self.retry_after = retry_after

    def challenge(self) -> str | None:
        """The WWW-Authenticate value this refusal carries, if it is an authentication failure."""
        return None

    @property
    def headers(self) -> dict[str, str]:
        """The response headers this refusal implies."""
        out = {}
        challenge = self.challenge()
        if challenge is not None:
            out["WWW-Authenticate"] = challenge
        if self.retry_after is not None:
            out["Retry-After"] = str(max(0, int(self.retry_after)))
        return out

    def body(self) -> dict:
        out = {"error": self.error}
        if self.description:
            out["error_description"] = self.description
        return out


class BodyTooLarge(RequestError):
    status = 413


class TooManyRequests(RequestError):
    """Over a limit that only sheds load (RFC 6585 4): 429 with Retry-After."""

    status = 429
    error = "slow_down"
