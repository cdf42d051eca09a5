"""Real CAS clients written by others against `campusid serve` (docs/cas.md): Apache's mod_auth_cas
(Debian's libapache2-mod-auth-cas) protecting a page through /serviceValidate and through
/p3/serviceValidate, with a CASRenew location; the python-cas library; phpCAS (Debian's php-cas)
on PHP's built-in server. Each signs a student in through the real login form, receives the
attributes the review granted, and is signed out by single logout when the session ends.

A browser is httpx following the redirects itself and answering the login form, as a person would.
The IdP runs behind Apache's TLS with a certificate from the test's own CA (mod_auth_cas validates
over https only)."""

from __future__ import annotations

import json
import os
import shutil
import ssl
import subprocess
import time
from urllib.parse import urljoin

import httpx
import pytest

from tests.conftest import free_port, run_cli, start_server, stop_process
from tests.e2e.cas_stack import Apache, make_pki, need_apache, workdir
from tests.idp.helpers import PASSWORD, form_fields

pytestmark = pytest.mark.e2e


def cas_app(env: dict, client_id: str, *services: str, scopes=("profile", "email", "student_number")) -> None:
    args = ["apps", "create", "--name", client_id, "--type", "cas", "--owner", "dev", "--client-id", client_id]
    for service in services:
        args += ["--service", service]
    for scope in scopes:
        args += ["--scope", scope]
    run_cli(env, *args)
    for step in (["submit"], ["approve", "--by", "admin"], ["activate"]):
        run_cli(env, "apps", step[0], client_id, *step[1:])


def users(env: dict) -> None:
    for name, role, extra in (
        ("alice", "student", ["--given-name", "Alice", "--family-name", "Zhang", "--email", "alice@example.edu",
                              "--student-number", "2024001"]),
        ("dev", "developer", []),
        ("admin", "admin", []),
    ):  # fmt: skip
        full = "Alice Zhang & <Co>" if name == "alice" else name.title()
        run_cli(env, "users", "add", name, "--name", full, "--role", role, *extra, "--password-stdin",
                stdin=PASSWORD + "\n")  # fmt: skip


def browse(client: httpx.Client, url: str, password: str = PASSWORD, stop_at_login: bool = False) -> httpx.Response:
    """GET `url` and follow every redirect, answering the IdP's login form as alice would; the
    first page that is not a redirect nor the login form (or the login form, with stop_at_login)."""
    r = client.get(url)
    for _ in range(12):
        if r.status_code in (301, 302, 303):
            r = client.get(urljoin(str(r.url), r.headers["location"]))
            continue
        if 'id="login-form"' in r.text:
            if stop_at_login:
                return r
            action, fields = form_fields(r.text, "login-form")
            r = client.post(urljoin(str(r.url), action), data={**fields, "username": "alice", "password": password})
            continue
        return r
    raise AssertionError("too many redirects")


def seen(page: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in page.splitlines() if "=" in line)


@pytest.fixture
def campus(idp_env):
    need_apache()
    root = workdir()
    ca = make_pki(root)
    idp_port = free_port()
    apache = Apache(root, idp_port)
    env = {
        **idp_env,
        "CAMPUSID_ISSUER": apache.idp,
        "CAMPUSID_TRUSTED_PROXIES": "127.0.0.1",
        "CAMPUSID_CAS_PROXY_CA_FILE": str(ca),
    }
    users(env)
    cas_app(env, "apache-v2", apache.app("v2", "/protected/"), apache.app("v2", "/renew/"))
    cas_app(env, "apache-p3", apache.app("p3", "/protected/"), apache.app("p3", "/renew/"), scopes=("profile",))
    server = start_server(env, port=idp_port)
    yield apache, env, ca
    server.stop()
    apache.stop()
    shutil.rmtree(root, ignore_errors=True)


def test_mod_auth_cas_signs_in_through_both_validations_and_is_signed_out_by_single_logout(campus):
    apache, env, ca = campus
    with httpx.Client(verify=ssl.create_default_context(cafile=str(ca)), timeout=10) as browser:
        v2 = browse(browser, apache.app("v2"))
        assert v2.status_code == 200, (v2.status_code, v2.text[:300], apache.error_log()[-2000:])
        got = seen(v2.text)
        assert got["REMOTE_USER"] == "alice" and got["HTTP_CAS_USER"] == "alice"
        assert got["HTTP_CAS_DISPLAYNAME"] == "Alice Zhang & <Co>"  # escaped in XML, whole again here
        assert got["HTTP_CAS_MAIL"] == "alice@example.edu" and got["HTTP_CAS_STUDENTNUMBER"] == "2024001"
        assert got["HTTP_CAS_GIVENNAME"] == "Alice" and got["HTTP_CAS_SN"] == "Zhang"
        # the p3 vhost: SSO (no password asked), and only what its review granted
        p3 = browse(browser, apache.app("p3"), password="wrong: no form may be shown")
        got = seen(p3.text)
        assert got["REMOTE_USER"] == "alice" and got["HTTP_CAS_DISPLAYNAME"] == "Alice Zhang & <Co>"
        assert "HTTP_CAS_MAIL" not in got and "HTTP_CAS_STUDENTNUMBER" not in got
        # the renew location asks for the password again despite the session
        r = browse(browser, apache.app("v2", "/renew/echo.cgi"), stop_at_login=True)
        assert 'id="login-form"' in r.text and "renew=true" in str(r.url)
        r = browse(browser, apache.app("v2", "/renew/echo.cgi"))
        assert seen(r.text)["REMOTE_USER"] == "alice"
        # signing out at the IdP reaches both vhosts by single logout: their sessions end
        r = browser.get(f"{apache.idp}/cas/logout")
        assert r.status_code == 200
        deadline = time.monotonic() + 10
        signed_out = set()
        while time.monotonic() < deadline and len(signed_out) < 2:
            for which in ("v2", "p3"):
                r = browser.get(apache.app(which))  # mod_auth_cas's own cookie, no redirect followed
                if r.status_code == 302 and "/cas/login" in r.headers["location"]:
                    signed_out.add(which)
            time.sleep(0.1)
        assert signed_out == {"v2", "p3"}, apache.error_log()[-3000:]
    events = json.loads(run_cli(env, "events", "list", "--type", "cas_ticket_validated", "--json").stdout)["events"]
    assert {e["client_id"] for e in events} == {"apache-v2", "apache-p3"}


def test_python_cas_signs_in_reads_attributes_and_parses_single_logout(campus, tmp_path):
    cas = pytest.importorskip("cas")
    from tests.idp.oidc.logout_helpers import Receiver

    apache, env, ca = campus
    receiver = Receiver()
    try:
        service = receiver.url("/django/accounts/login/?next=%2Fgrades")
        cas_app(env, "python-cas", receiver.url("/django/"))
        client = cas.CASClient(
            version=3, service_url=service, server_url=apache.idp + "/cas/", verify_ssl_certificate=str(ca)
        )
        with httpx.Client(verify=ssl.create_default_context(cafile=str(ca)), timeout=10) as browser:
            r = browser.get(client.get_login_url())
            assert 'id="login-form"' in r.text
            action, fields = form_fields(r.text, "login-form")
            r = browser.post(urljoin(str(r.url), action), data={**fields, "username": "alice", "password": PASSWORD})
            assert r.status_code == 303 and r.headers["location"].startswith(service + "&ticket=ST-")
            ticket = r.headers["location"].rsplit("ticket=", 1)[1]
            user, attributes, pgtiou = client.verify_ticket(ticket)
            assert user == "alice" and pgtiou is None
            assert attributes["displayName"] == "Alice Zhang & <Co>" and attributes["studentNumber"] == "2024001"
            assert attributes["isFromNewLogin"] == "true"
            assert client.verify_ticket(ticket) == (None, {}, None)  # used once
            browser.get(f"{apache.idp}/cas/logout")
        receiver.wait_for(1, timeout=10)
        [(path, fields)] = receiver.received
        assert path == "/django/accounts/login/?next=%2Fgrades"
        slos = cas.CASClientV3.get_saml_slos(fields["logoutRequest"])
        assert [s.text for s in slos] == [ticket]
        assert cas.CASClientV3.verify_logout_request(fields["logoutRequest"], ticket)
    finally:
        receiver.close()


PHP_APP = r"""<?php
require_once '/usr/share/php/CAS.php';
session_save_path('%(sessions)s');
phpCAS::client(CAS_VERSION_3_0, 'localhost', %(tls_port)d, '/cas', '%(base)s');
phpCAS::setCasServerCACert('%(ca)s');
phpCAS::handleLogoutRequests(false);
phpCAS::forceAuthentication();
header('Content-Type: text/plain');
echo "user=" . phpCAS::getUser() . "\n";
foreach (phpCAS::getAttributes() as $k => $v) { echo "attr_$k=" . (is_array($v) ? implode(',', $v) : $v) . "\n"; }
"""


def test_phpcas_signs_in_and_is_signed_out(campus):
    apache, env, ca = campus
    if not shutil.which("php") or not os.path.exists("/usr/share/php/CAS.php"):
        pytest.skip("Debian's php-cli and php-cas are not installed")
    port = free_port()
    root = apache.root / "php"
    (root / "sessions").mkdir(parents=True)
    base = f"http://127.0.0.1:{port}"
    (root / "index.php").write_text(
        PHP_APP % {"sessions": root / "sessions", "tls_port": apache.tls_port, "base": base, "ca": ca}
    )
    cas_app(env, "phpcas", base + "/")
    php = subprocess.Popen(
        ["php", "-S", f"127.0.0.1:{port}", "-t", str(root)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                httpx.get(base + "/nothing", timeout=1)
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, "php -S did not start"
                time.sleep(0.05)
        with httpx.Client(verify=ssl.create_default_context(cafile=str(ca)), timeout=10) as browser:
            r = browse(browser, base + "/index.php")
            got = seen(r.text)
            assert got.get("user") == "alice", (r.status_code, r.text[:800])
            assert got["attr_displayName"] == "Alice Zhang & <Co>" and got["attr_mail"] == "alice@example.edu"
            assert browser.get(base + "/index.php").status_code == 200  # its own session now
            browser.get(f"{apache.idp}/cas/logout")
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                r = browser.get(base + "/index.php")
                if r.status_code in (302, 303) and "/cas/login" in r.headers["location"]:
                    break
                time.sleep(0.1)
            assert r.status_code in (302, 303) and "/cas/login" in r.headers["location"]
    finally:
        stop_process(php)
