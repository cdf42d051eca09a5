"""/cas/login and /cas/p3/serviceValidate end to end in process: the login page, the ticket, its
validation with the attributes the review granted; SSO both ways with OIDC."""

from __future__ import annotations

from tests.idp.cas.helpers import SERVICE, login_url, service_ticket, sign_in, success, ticket_of, validate


def test_a_student_signs_in_and_the_service_validates_the_ticket(idp, browser, portal):
    r = sign_in(browser)
    assert r.status_code == 303
    assert r.headers["location"].startswith(SERVICE + "?ticket=ST-")
    ticket = ticket_of(r.headers["location"])
    r = validate(browser, ticket)
    assert r.status_code == 200 and r.headers["content-type"] == "application/xml; charset=UTF-8"
    user, attrs = success(r.text)
    assert user == "alice"
    assert attrs["displayName"] == ["Alice Zhang"]
    assert attrs["isFromNewLogin"] == ["true"]
    assert attrs["longTermAuthenticationRequestTokenUsed"] == ["false"]
    assert "studentNumber" not in attrs  # not asked, not granted


def test_with_a_session_no_page_at_all(idp, browser, portal):
    service_ticket(browser)
    r = browser.get(login_url())
    assert r.status_code == 302
    ticket = ticket_of(r.headers["location"])
    user, attrs = success(validate(browser, ticket).text)
    assert user == "alice" and attrs["isFromNewLogin"] == ["false"]
