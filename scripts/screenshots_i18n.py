#!/usr/bin/env python3
"""Screenshots of the pages a student and an administrator see, in English and in Simplified
Chinese, under a university's brand: the login, consent, second-factor, account and error pages.

Starts a `campusid demo` of its own (on a free port, branded "Example University" / "示例大学" with a
logo and a colour, CAMPUSID_BRAND_*), then drives Debian's Chromium through Playwright (the launch of
tests/conftest.py) with the browser's language set to each one — the pages choose by Accept-Language,
as they do for a student's own browser — and saves docs/screenshots/i18n-<page>-<language>.png.
The second factor is an authenticator app the script sets up for the demo admin on the way.

    .venv/bin/python scripts/screenshots_i18n.py [--out docs/screenshots]

Chinese needs a CJK font in the system (Debian: apt-get install fonts-noto-cjk); the script says so
rather than save pictures of empty boxes.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlencode

import pyotp
from desktop_screenshots import start_demo  # the script beside this one: a demo on a free port

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"  # as tests/conftest.py launches it
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
LANGUAGES = {"en": "en-US", "zh-CN": "zh-CN"}  # the file suffix -> the browser's locale
VIEWPORT = {"width": 1100, "height": 760}
LOGO = """<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64" width="64" height="64">
<path d="M32 3 L58 12 V30 C58 46 46 57 32 61 C18 57 6 46 6 30 V12 Z" fill="#8b0012"/>
<path d="M32 9 L52 16 V30 C52 42 43 51 32 55 C21 51 12 42 12 30 V16 Z" fill="none" stroke="#f3d27a" stroke-width="2"/>
<path d="M18 26 L32 20 L46 26 L32 32 Z M22 29 V38 C26 42 38 42 42 38 V29 L32 34 Z" fill="#f3d27a"/>
</svg>
"""


def start_branded_demo(data_dir: Path) -> tuple[subprocess.Popen[str], dict]:
    data_dir.mkdir(parents=True, exist_ok=True)
    logo = data_dir / "logo.svg"
    logo.write_text(LOGO)
    return start_demo(
        data_dir,
        CAMPUSID_BRAND_NAME="Example University",
        CAMPUSID_BRAND_NAME_ZH_CN="示例大学",
        CAMPUSID_BRAND_LOGO=str(logo),
        CAMPUSID_BRAND_COLOR="#8b0012",
    )


def authorize_url(issuer: str, client: dict) -> str:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    params = {
        "client_id": client["client_id"],
        "redirect_uri": client["redirect_uris"][0],
        "response_type": "code",
        "scope": "openid profile grades.read",
        "state": secrets.token_urlsafe(16),
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }
    return f"{issuer}/oauth/authorize?{urlencode(params)}"


class Shooter:
    def __init__(self, browser, info: dict, out: Path) -> None:
        self.browser, self.info, self.out = browser, info, out
        self.issuer = info["issuer"]
        self.users = {u["username"]: u for u in info["users"]}
        self.totp: pyotp.TOTP | None = None

    def save(self, page, name: str, suffix: str) -> None:
        path = self.out / f"i18n-{name}-{suffix}.png"
        page.screenshot(path=str(path), full_page=True)
        print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)

    def window(self, locale: str):
        context = self.browser.new_context(locale=locale, viewport=VIEWPORT)
        context.set_default_timeout(15_000)
        return context, context.new_page()

    def sign_in(self, page, username: str) -> None:
        page.fill("#login-form input[name=username]", username)
        page.fill("#login-form input[name=password]", self.users[username]["password"])
        with page.expect_navigation():
            page.click("#login-form button[type=submit]")

    def set_up_authenticator(self) -> None:
        """The demo admin must use a second factor: set one up once, for the second-factor pages."""
        context, page = self.window("en-US")
        page.goto(self.issuer + "/login?next=/account")
        self.sign_in(page, "admin")
        page.wait_for_selector("#totp-secret")
        self.totp = pyotp.TOTP(page.inner_text("#totp-secret").strip())
        page.fill("#totp-enrol-form input[name=code]", self.totp.now())
        with page.expect_navigation():
            page.click("#totp-enrol-form button[type=submit]")
        page.wait_for_selector("#totp-enrolled")
        context.close()

    def shoot(self, suffix: str, locale: str) -> None:
        web = next(c for c in self.info["clients"] if c["type"] == "web")
        context, page = self.window(locale)
        # login, with the app it continues to; then the consent page of that app
        page.goto(authorize_url(self.issuer, web))
        page.wait_for_selector("#login-form")
        self.save(page, "login", suffix)
        self.sign_in(page, "alice")
        page.wait_for_selector("#consent-form")
        self.save(page, "consent", suffix)
        # the account page, signed in
        page.goto(self.issuer + "/account")
        page.wait_for_selector("#sessions")
        self.save(page, "account", suffix)
        # an error page: an app that is not registered sent the student here
        page.goto(self.issuer + "/oauth/authorize?client_id=an-unregistered-app&response_type=code")
        self.save(page, "error", suffix)
        context.close()
        # the second factor: the admin signs in with a password, then the code
        context, page = self.window(locale)
        page.goto(self.issuer + "/login?next=/admin")
        self.sign_in(page, "admin")
        page.wait_for_selector("#mfa-form")
        self.save(page, "second-factor", suffix)
        context.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    args = parser.parse_args()
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"{CHROMIUM} is missing: apt-get install chromium")
    if shutil.which("fc-list") and not subprocess.run(["fc-list", ":lang=zh"], capture_output=True, text=True).stdout:
        raise SystemExit("no Chinese font: apt-get install fonts-noto-cjk (the Chinese pages would show empty boxes)")
    from playwright.sync_api import sync_playwright

    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="campusid-i18n-shots-") as tmp:
        demo, info = start_branded_demo(Path(tmp) / "idp")
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                shooter = Shooter(browser, info, args.out)
                shooter.set_up_authenticator()
                for suffix, locale in LANGUAGES.items():
                    shooter.shoot(suffix, locale)
                browser.close()
        finally:
            demo.terminate()
            demo.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
