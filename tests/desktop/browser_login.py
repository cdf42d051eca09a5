#!/usr/bin/env python3
"""A stand-in for the system browser, used through the BROWSER environment variable.

``browser_login.py URL``: opens the authorization URL, signs in on the IdP's login form
(``form#login-form``: username, password and its hidden CSRF field, submitted as a browser would),
allows the consent form (``form#consent-form``, ``decision=allow``) and follows the redirects to
the app's loopback callback.

Environment: CAMPUSID_TEST_USERNAME / CAMPUSID_TEST_PASSWORD (the demo student),
CAMPUSID_TEST_BROWSER_LOG (a file that gets one JSON line per run, written before anything else,
saying whether this process inherited APP_BRIDGE_TOKEN).
"""

from __future__ import annotations

import json
import os
import sys
from html.parser import HTMLParser
from urllib.parse import urljoin

import httpx


class _Forms(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.forms: dict[str, dict] = {}
        self._current: dict | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form":
            self._current = {"action": a.get("action", ""), "fields": {}, "buttons": []}
            self.forms[a.get("id", "")] = self._current
        elif self._current is not None and tag == "input" and a.get("name"):
            if a.get("type") == "submit":
                self._current["buttons"].append((a["name"], a.get("value", "")))
            else:
                self._current["fields"][a["name"]] = a.get("value", "")
        elif self._current is not None and tag == "button" and a.get("name"):
            self._current["buttons"].append((a["name"], a.get("value", "")))

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._current = None


def _log_run(url: str) -> None:
    path = os.environ.get("CAMPUSID_TEST_BROWSER_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as log:
            log.write(
                json.dumps({"saw_bridge_token": "APP_BRIDGE_TOKEN" in os.environ, "authorize": url.split("?", 1)[0]})
                + "\n"
            )


def sign_in(url: str) -> int:
    username = os.environ.get("CAMPUSID_TEST_USERNAME", "")
    password = os.environ.get("CAMPUSID_TEST_PASSWORD", "")
    with httpx.Client(timeout=20) as client:
        response = client.get(url)
        for _ in range(12):
            if response.is_redirect:
                response = client.get(urljoin(str(response.url), response.headers["location"]))
                continue
            parser = _Forms()
            parser.feed(response.text)
            if "login-form" in parser.forms:
                form = parser.forms["login-form"]
                data = {**form["fields"], "username": username, "password": password}
            elif "consent-form" in parser.forms:
                form = parser.forms["consent-form"]
                data = {**form["fields"], "decision": "allow"}
            else:
                return 0 if response.status_code == 200 else 1  # the loopback callback's page
            response = client.post(urljoin(str(response.url), form["action"] or str(response.url)), data=data)
    return 1


if __name__ == "__main__":
    _log_run(sys.argv[1])
    sys.exit(sign_in(sys.argv[1]))
