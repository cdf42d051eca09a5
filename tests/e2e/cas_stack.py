"""A campus in miniature for the CAS clients' end-to-end tests: `campusid serve` behind Apache's TLS
(mod_auth_cas validates tickets over https only, as its README says: "CAS Ticket Validation can
only be performed over an SSL connection"), with a certificate from a CA the test makes, and
Apache vhosts that protect pages with Debian's mod_auth_cas (one through /serviceValidate, one
through /p3/serviceValidate; each with a `CASRenew` location). Every process is the test's own:
its own ServerRoot, ports, logs and cache in a directory of its own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import free_port, stop_process
from tests.idp.cas.tls import make_ca_and_server

APACHE = "/usr/sbin/apache2"
MODULES = Path("/usr/lib/apache2/modules")
ECHO_CGI = """#!/usr/bin/python3
import os
print("Content-Type: text/plain; charset=utf-8")
print()
for name in sorted(os.environ):
    if name == "REMOTE_USER" or name.startswith("HTTP_CAS_"):
        print(f"{name}={os.environ[name]}")
"""


def need_apache() -> None:
    if not (os.path.exists(APACHE) and (MODULES / "mod_auth_cas.so").exists()):
        pytest.skip("Debian's apache2 and libapache2-mod-auth-cas are not installed (scripts/ensure-test-services.sh)")


def workdir() -> Path:
    """A directory Apache's www-data workers can read (pytest's tmp_path is root's alone)."""
    root = Path(tempfile.mkdtemp(prefix="campusid-cas-", dir="/tmp"))
    root.chmod(0o755)
    return root


def _vhost(port: int, validate_url: str, idp: str, root: Path, name: str) -> str:
    cache = root / f"cache-{name}"
    cache.mkdir()
    shutil.chown(cache, "www-data", "www-data")
    return f"""
Listen 127.0.0.1:{port}
<VirtualHost 127.0.0.1:{port}>
  ServerName 127.0.0.1
  CASLoginURL {idp}/cas/login
  CASValidateURL {validate_url}
  CASCertificatePath {root}/pki/ca.pem
  CASCookiePath {cache}/
  CASAttributePrefix CAS-
  CASSSOEnabled On
  CASDebug On
  ScriptAlias /protected/ {root}/cgi/
  ScriptAlias /renew/ {root}/cgi/
  <Location /protected/>
    AuthType CAS
    CASAuthNHeader CAS-User
    CASScope /protected/
    Require valid-user
  </Location>
  <Location /renew/>
    AuthType CAS
    CASAuthNHeader CAS-User
    CASRenew /renew/
    Require valid-user
  </Location>
</VirtualHost>
"""


class Apache:
    """Apache with a TLS reverse proxy to the IdP (`tls_port`) and two mod_auth_cas vhosts:
    `v2` validates through /cas/serviceValidate, `p3` through /cas/p3/serviceValidate."""

    def __init__(self, root: Path, idp_port: int) -> None:
        self.root = root
        self.tls_port, self.v2_port, self.p3_port = free_port(), free_port(), free_port()
        self.idp = f"https://localhost:{self.tls_port}"
        (root / "cgi").mkdir()
        echo = root / "cgi" / "echo.cgi"
        echo.write_text(ECHO_CGI)
        echo.chmod(0o755)
        (root / "logs").mkdir()
        modules = [
            ("mpm_prefork_module", "mod_mpm_prefork.so"),
            ("authz_core_module", "mod_authz_core.so"),
            ("authn_core_module", "mod_authn_core.so"),
            ("authz_user_module", "mod_authz_user.so"),
            ("auth_cas_module", "mod_auth_cas.so"),
            ("alias_module", "mod_alias.so"),
            ("cgi_module", "mod_cgi.so"),
            ("mime_module", "mod_mime.so"),
            ("ssl_module", "mod_ssl.so"),
            ("socache_shmcb_module", "mod_socache_shmcb.so"),
            ("proxy_module", "mod_proxy.so"),
            ("proxy_http_module", "mod_proxy_http.so"),
            ("headers_module", "mod_headers.so"),
            ("log_config_module", "mod_log_config.so"),
            ("unixd_module", "mod_unixd.so"),
        ]
        loads = "\n".join(f"LoadModule {m} {MODULES / f}" for m, f in modules if (MODULES / f).exists())
        conf = f"""
ServerRoot {root}
PidFile {root}/apache.pid
ErrorLog {root}/logs/error.log
LogLevel warn auth_cas:debug
User www-data
Group www-data
ServerName 127.0.0.1
{loads}
TypesConfig /etc/mime.types
Mutex file:{root}
SSLSessionCache shmcb:{root}/ssl_cache(512000)
LogFormat "%h %r %>s" plain
CustomLog {root}/logs/access.log plain

Listen 127.0.0.1:{self.tls_port}
<VirtualHost 127.0.0.1:{self.tls_port}>
  ServerName localhost
  SSLEngine on
  SSLCertificateFile {root}/pki/server.pem
  SSLCertificateKeyFile {root}/pki/server.key
  ProxyPass / http://127.0.0.1:{idp_port}/
  ProxyPassReverse / http://127.0.0.1:{idp_port}/
</VirtualHost>
{_vhost(self.v2_port, f"{self.idp}/cas/serviceValidate", self.idp, root, "v2")}
{_vhost(self.p3_port, f"{self.idp}/cas/p3/serviceValidate", self.idp, root, "p3")}
"""
        (root / "apache.conf").write_text(conf)
        self.proc = subprocess.Popen(
            [APACHE, "-d", str(root), "-f", str(root / "apache.conf"), "-DFOREGROUND"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            # a session of its own: prefork's shutdown signals its whole process group (killpg)
            start_new_session=True,
        )
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"apache exited: {self.proc.stdout.read()} {self.error_log()}")
            try:
                httpx.get(f"http://127.0.0.1:{self.v2_port}/", timeout=1)
                return
            except httpx.HTTPError:
                time.sleep(0.05)
        raise AssertionError("apache did not start: " + self.error_log())

    def app(self, which: str, path: str = "/protected/echo.cgi") -> str:
        return f"http://127.0.0.1:{self.v2_port if which == 'v2' else self.p3_port}{path}"

    def error_log(self) -> str:
        log = self.root / "logs" / "error.log"
        return log.read_text() if log.exists() else ""

    def stop(self) -> None:
        stop_process(self.proc)


def make_pki(root: Path) -> Path:
    """The CA, and a certificate for localhost and 127.0.0.1; the CA's file."""
    ca, _, _ = make_ca_and_server(root / "pki", hosts=("localhost", "127.0.0.1"))
    for f in (root / "pki").iterdir():
        f.chmod(0o644)
    (root / "pki").chmod(0o755)
    return ca
