"""Error descriptions that quote the request stay within RFC 6749 5.2's character set, in the JSON
body and in RFC 6750's WWW-Authenticate header (found by tests/fuzz/test_fuzz_idp.py: a parameter
named with non-ASCII characters put them into userinfo's WWW-Authenticate header)."""

from __future__ import annotations

import re

from campusid.idp.oidc.errors import InvalidRequest

NQSCHAR = re.compile(r"^[\x20\x21\x23-\x5b\x5d-\x7e]*$")


def test_description_text_keeps_only_what_rfc6749_allows():
    from campusid.idp.errors import description_text

    assert description_text("parameter 'scope' is given more than once") == "parameter 'scope' is given more than once"
    assert description_text('a "quoted" \\ ê\r\n') == "a ?quoted? ? ???"
    assert len(description_text("x" * 5000)) == 200
    assert InvalidRequest("naïve").body() == {"error": "invalid_request", "error_description": "na?ve"}


def test_a_hostile_parameter_name_never_reaches_a_header_raw(idp, browser):
    names = ["ê\U000190f9", 'a"b', "c\\d", "e\x7ff"]
    for name in names:
        body = f"{name}=1&{name}=2".encode()
        r = browser.post("/oauth/userinfo", content=body, headers={"content-type": "application/x-www-form-urlencoded"})
        assert r.status_code == 400 and r.json()["error"] == "invalid_request"
        challenge = r.headers["www-authenticate"]
        assert challenge.startswith('Bearer realm="campusid", error="invalid_request"')
        description = re.search(r'error_description="([^"]*)"$', challenge).group(1)
        assert NQSCHAR.match(description) and NQSCHAR.match(r.json()["error_description"]), challenge
    r = browser.post("/oauth/token", data={"grant_type": "authorization_code", "ê": "1"}, headers={})
    assert r.status_code in (400, 401) and NQSCHAR.match(r.json().get("error_description", ""))
