"""Set-Cookie headers written directly (web/cookies.py): what a browser's parser reads back."""

from http.cookies import SimpleCookie

import pytest
from starlette.responses import Response

from campusid.idp.crypto import new_token
from campusid.idp.web import cookies


def _parsed(response: Response) -> list:
    out = []
    for name, value in response.raw_headers:
        if name == b"set-cookie":
            jar = SimpleCookie()
            jar.load(value.decode("latin-1"))
            out.append(next(iter(jar.values())))
    return out


def test_a_session_cookie_carries_every_attribute():
    response, value = Response(), new_token(32)
    cookies.set_cookie(response, "__Host-campusid_session", value, 3600, secure=True)
    (morsel,) = _parsed(response)
    assert (morsel.key, morsel.value) == ("__Host-campusid_session", value)
    assert morsel["max-age"] == "3600" and morsel["path"] == "/" and morsel["samesite"] == "lax"
    assert morsel["httponly"] is True and morsel["secure"] is True
    assert not morsel["domain"]


def test_secure_only_when_asked():
    response = Response()
    cookies.set_cookie(response, "campusid_session", "abc", 60, secure=False)
    raw = response.raw_headers[-1][1].decode()
    assert "secure" not in raw.lower()
    assert raw == "campusid_session=abc; Max-Age=60; Path=/; SameSite=lax; HttpOnly"


def test_a_cleared_cookie_is_empty_and_expired_with_the_same_scope():
    response = Response()
    cookies.clear_cookie(response, "campusid_interaction", secure=True)
    (morsel,) = _parsed(response)
    assert morsel.value == "" and morsel["max-age"] == "0" and "1970" in morsel["expires"]
    assert morsel["path"] == "/" and morsel["httponly"] is True and morsel["secure"] is True


@pytest.mark.parametrize(
    ("name", "value"),
    [("a b", "x"), ("a;b", "x"), ("", "x"), ("a", "x;y"), ("a", 'x"'), ("a", "x y"), ("a", "x\\y"), ("a", "é")],
)
def test_what_would_need_quoting_is_refused(name, value):
    with pytest.raises(ValueError):
        cookies.set_cookie(Response(), name, value, 60, secure=False)
