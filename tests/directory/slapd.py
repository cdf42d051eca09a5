"""A real OpenLDAP slapd for the tests: Debian's binary with a configuration of our own.

Each instance gets its own cn=config (loaded with slapadd from the LDIF below), its own mdb data
directory, a free port on 127.0.0.1 and runs as the current user in the foreground; it is seeded
with tests/directory/directory.ldif. The system's slapd is never touched. With a certificate and
key it also listens on ldaps:// and offers StartTLS on ldap://.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.conftest import stop_process

SLAPD = "/usr/sbin/slapd"
SLAPADD = "/usr/sbin/slapadd"
SUFFIX = "dc=example,dc=edu"
ROOT_DN = f"cn=admin,{SUFFIX}"
ROOT_PW = "root-pw"
SERVICE_DN = f"cn=campusid,ou=services,{SUFFIX}"
SERVICE_PW = "service-pw"
PEOPLE = f"ou=people,{SUFFIX}"
GROUPS = f"ou=groups,{SUFFIX}"
ADMINS = f"cn=campusid-admins,{GROUPS}"
DEVELOPERS = f"cn=campusid-developers,{GROUPS}"
SEED = Path(__file__).with_name("directory.ldif")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _config(run: Path, data: Path, tls: tuple[Path, Path] | None) -> str:
    tls_lines = ""
    if tls is not None:
        tls_lines = f"olcTLSCertificateFile: {tls[0]}\nolcTLSCertificateKeyFile: {tls[1]}\n"
    return f"""dn: cn=config
objectClass: olcGlobal
cn: config
olcPidFile: {run}/slapd.pid
olcArgsFile: {run}/slapd.args
{tls_lines}
dn: cn=module{{0}},cn=config
objectClass: olcModuleList
cn: module{{0}}
olcModulePath: /usr/lib/ldap
olcModuleLoad: back_mdb

dn: cn=schema,cn=config
objectClass: olcSchemaConfig
cn: schema

include: file:///etc/ldap/schema/core.ldif
include: file:///etc/ldap/schema/cosine.ldif
include: file:///etc/ldap/schema/inetorgperson.ldif

dn: olcDatabase={{0}}config,cn=config
objectClass: olcDatabaseConfig
olcDatabase: {{0}}config
olcAccess: to * by * none

dn: olcDatabase={{1}}mdb,cn=config
objectClass: olcDatabaseConfig
objectClass: olcMdbConfig
olcDatabase: {{1}}mdb
olcDbDirectory: {data}
olcSuffix: {SUFFIX}
olcRootDN: {ROOT_DN}
olcRootPW: {ROOT_PW}
olcDbMaxSize: 67108864
olcDbIndex: objectClass eq
olcDbIndex: uid eq
olcDbIndex: member eq
olcLimits: dn.exact="{SERVICE_DN}" size.soft=unlimited size.hard=unlimited size.prtotal=unlimited
olcAccess: to attrs=userPassword by self write by anonymous auth by * none
olcAccess: to * by users read by * none
"""


@dataclass
class Slapd:
    root: Path
    tls: tuple[Path, Path] | None = None  # (certificate, key) in PEM
    port: int = 0
    tls_port: int = 0
    debug: str = "0"  # slapd -d: "stats" logs each operation (and its filter) into slapd.log
    proc: subprocess.Popen | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"ldap://127.0.0.1:{self.port}"

    @property
    def ldaps_url(self) -> str:
        return f"ldaps://127.0.0.1:{self.tls_port}"

    def setup(self) -> Slapd:
        conf, data, run = self.root / "slapd.d", self.root / "data", self.root / "run"
        for d in (conf, data, run):
            d.mkdir(parents=True, exist_ok=True)
        config = self.root / "config.ldif"
        config.write_text(_config(run, data, self.tls))
        subprocess.run([SLAPADD, "-n0", "-F", str(conf), "-l", str(config)], check=True, capture_output=True)
        subprocess.run([SLAPADD, "-F", str(conf), "-b", SUFFIX, "-l", str(SEED)], check=True, capture_output=True)
        return self

    def start(self, timeout: float = 20.0) -> Slapd:
        if not self.port:
            self.port = _free_port()
        urls = self.url + "/"
        if self.tls is not None:
            if not self.tls_port:
                self.tls_port = _free_port()
            urls += " " + self.ldaps_url + "/"
        self.proc = subprocess.Popen(
            [SLAPD, "-d", self.debug, "-F", str(self.root / "slapd.d"), "-h", urls],
            stdout=subprocess.DEVNULL,
            stderr=open(self.root / "slapd.log", "ab"),  # noqa: SIM115 - the child keeps it
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"slapd exited: {(self.root / 'slapd.log').read_text()[-2000:]}")
            if self._answers():
                return self
            time.sleep(0.05)
        raise RuntimeError("slapd did not answer in time")

    def _answers(self) -> bool:
        proc = subprocess.run(
            ["ldapwhoami", "-x", "-H", self.url, "-D", SERVICE_DN, "-w", SERVICE_PW],
            capture_output=True,
            timeout=10,
        )
        return proc.returncode == 0

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)
        self.proc = None

    def modify(self, ldif: str) -> None:
        """Change the directory as its administrator would (ldapmodify as the root DN)."""
        subprocess.run(
            ["ldapmodify", "-x", "-H", self.url, "-D", ROOT_DN, "-w", ROOT_PW],
            input=ldif.encode(),
            check=True,
            capture_output=True,
            timeout=20,
        )

    def add_person(self, uid: str, password: str, *, cn: str | None = None, mail: str | None = None) -> str:
        dn = f"uid={uid},{PEOPLE}"
        self.modify(
            f"dn: {dn}\nchangetype: add\nobjectClass: inetOrgPerson\nuid: {uid}\ncn: {cn or uid.title()}\n"
            f"sn: {uid.title()}\nmail: {mail or uid + '@example.edu'}\nuserPassword: {password}\n"
        )
        return dn

    @property
    def log(self) -> str:
        return (self.root / "slapd.log").read_text(errors="replace")

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


def slapd_available() -> bool:
    return Path(SLAPD).exists() and shutil.which("ldapwhoami") is not None
