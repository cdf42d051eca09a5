"""Helpers of the second-factor tests: the settings of an IdP whose policy asks admins for a factor,
drivers of the sign-in pages that also answer the second-factor page (on tests/idp/helpers.py's
browser), and TOTP enrolment through the pages."""

from __future__ import annotations

import html
import re
import time
from urllib.parse import urlencode

import pyotp
from joserfc import jwt

from tests.idp.conftest import ISSUER, WEB_REDIRECT, IdP
from tests.idp.helpers import PASSWORD, answer_pages, code_exchange, follow, form_fields, post_login, run

MFA_FOR_ADMINS = {"CAMPUSID_MFA_REQUIRED_ROLES": "admin"}  # as `idp_settings`: the policy asks admins


def mfa_idp(idp_env: dict, roles: str = "admin") -> IdP:
    return IdP({**idp_env, "CAMPUSID_ISSUER": ISSUER, "CAMPUSID_MFA_REQUIRED_ROLES": roles})


def sign_in(client, flow, username: str, code=None, password: str = PASSWORD, consent: str = "allow"):
    """authorize → login → (second factor: `code()` gives the code) → consent → the callback's
    parameters; or the response of the first page it cannot get past."""
    r = client.get(f"/oauth/authorize?{urlencode(flow.params)}")
    return answer_pages(client, r, username, password, consent, code)


def local_sign_in(client, username: str, next_path: str = "/account", code=None):
    """Sign in on the IdP's own login page, then go to `next_path`; the last response."""
    r = follow(client, post_login(client, username, next_path=next_path))
    if code is not None and 'id="mfa-form"' in r.text:
        action, fields = form_fields(r.text, "mfa-form")
        r = follow(client, client.post(action, data={**fields, "code": code()}))
    return r


def secret_of(page: str) -> str:
    match = re.search(r'<code id="totp-secret">([A-Z2-7]+)</code>', page)
    assert match, page[:1000]
    return match.group(1)


def recovery_codes_of(page: str) -> list[str]:
    return [html.unescape(c) for c in re.findall(r'<code class="recovery-code">([^<]+)</code>', page)]


def enrol_totp(client, page_text: str, at: float | None = None) -> tuple[str, list[str], object]:
    """Confirm the enrolment shown on `page_text` with the current code: (secret, recovery codes,
    the confirming response)."""
    secret = secret_of(page_text)
    action, fields = form_fields(page_text, "totp-enrol-form")
    code = pyotp.TOTP(secret).at(at if at is not None else time.time())
    r = client.post(action, data={**fields, "code": code})
    assert r.status_code == 200, r.text[:500]
    codes = recovery_codes_of(r.text)
    assert len(codes) == 10
    return secret, codes, r


def id_token_claims(idp: IdP, client, flow, callback: dict) -> dict:
    r = client.post(
        "/oauth/token", auth=(idp.web_id, idp.web_secret), data=code_exchange(flow, callback["code"], WEB_REDIRECT)
    )
    assert r.status_code == 200, r.text
    return jwt.decode(r.json()["id_token"], run(idp.store, idp.ctx.keys.verification_keys())).claims
