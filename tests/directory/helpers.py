"""Signing in through the real login form against the directory, and reading what came out."""

from __future__ import annotations

import secrets
import subprocess

from tests.directory.slapd import PEOPLE, SERVICE_DN, SERVICE_PW
from tests.idp.conftest import WEB_REDIRECT
from tests.idp.helpers import auth_params, basic, code_exchange, id_claims, login_through_pages


def new_uid(prefix: str) -> str:
    return f"{prefix}{secrets.token_hex(4)}"


def entry_uuid(slapd, uid: str) -> str:
    out = subprocess.run(
        [
            "ldapsearch",
            "-x",
            "-LLL",
            "-H",
            slapd.url,
            "-D",
            SERVICE_DN,
            "-w",
            SERVICE_PW,
            "-b",
            PEOPLE,
            f"(uid={uid})",
            "entryUUID",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=20,
    ).stdout
    return next(line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("entryUUID: "))


def web_sign_in(idp, username: str, password: str, scope: str = "openid profile email") -> dict:
    """authorize → login form → consent → code → tokens for the web app; the token response's JSON
    with the verified ID token's claims under "claims"."""
    with idp.client() as browser:
        flow = auth_params(idp.web_id, WEB_REDIRECT, scope=scope)
        code = login_through_pages(browser, idp.issuer, flow, username, password)["code"]
        response = browser.post(
            "/oauth/token", data=code_exchange(flow, code, WEB_REDIRECT), headers=basic(idp.web_id, idp.web_secret)
        )
        return {**response.json(), "claims": id_claims(idp, response)}
