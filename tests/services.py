"""Real parts a test starts for itself and stops afterwards: nginx with a site from deploy/ and a
certificate from a CA the test makes, a Redis of its own and a PostgreSQL cluster of its own on
spare ports (so stopping one disturbs no other test), and a fresh database on the shared
PostgreSQL. Each runs as the current user (PostgreSQL as `postgres` when that is root: initdb
refuses root) in a temporary directory, with its own pid file and log."""

from __future__ import annotations

import contextlib
import datetime
import getpass
import ipaddress
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from tests.conftest import free_port, stop_process

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
SHARED_PG = "postgresql://postgres@127.0.0.1:5432"
_PLACEHOLDER = re.compile(r"\$\{([A-Z_][A-Z0-9_]*)\}")


def render(template: str, values: dict[str, str]) -> str:
    """Put `values` in the template's ${NAME} placeholders, as `envsubst '${NAME} ...'` does in
    docs/deployment.md; every placeholder must be given (nginx's own $variables have no braces)."""
    missing = sorted({m.group(1) for m in _PLACEHOLDER.finditer(template)} - set(values))
    assert not missing, f"no value for {missing}"
    return _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), template)


def wait_port(port: int, seconds: float = 30.0, host: str = "127.0.0.1", proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"exited with status {proc.returncode} before listening on {port}")
        try:
            with socket.create_connection((host, port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"nothing listens on {host}:{port} after {seconds} s")


# -- TLS ----------------------------------------------------------------------------------------
def make_tls(directory: Path) -> dict[str, Path]:
    """A CA and a server certificate it signs for 127.0.0.1 and localhost: ca.pem (what the client
    trusts), server.pem and server.key (what nginx serves)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "campusid test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    directory.mkdir(parents=True, exist_ok=True)
    paths = {"ca": directory / "ca.pem", "cert": directory / "server.pem", "key": directory / "server.key"}
    paths["ca"].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths["cert"].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths["key"].write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    paths["key"].chmod(0o600)
    return paths


# -- nginx --------------------------------------------------------------------------------------
class Nginx:
    """Debian's nginx running deploy/nginx/campusid.conf (rendered, otherwise as it is) inside a
    minimal main configuration like Debian's own nginx.conf: `include` of the site in `http`."""

    def __init__(self, directory: Path, upstream_port: int, tls: dict[str, Path], access_format: str = "") -> None:
        """`access_format`: an nginx log_format for the access log (the default's when empty)."""
        self.dir = directory
        self.port = free_port()
        directory.mkdir(parents=True, exist_ok=True)
        site = render(
            (DEPLOY / "nginx" / "campusid.conf").read_text(),
            {
                "SERVER_NAME": "127.0.0.1 localhost",
                "LISTEN": f"127.0.0.1:{self.port}",
                "TLS_CERT": str(tls["cert"]),
                "TLS_KEY": str(tls["key"]),
                "CAMPUSID_UPSTREAM": f"127.0.0.1:{upstream_port}",
            },
        )
        (directory / "campusid.conf").write_text(site)
        user = f"user {getpass.getuser()};\n" if os.geteuid() == 0 else ""
        temp = "".join(
            f"    {kind}_temp_path {directory / kind};\n"
            for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
        )
        (directory / "nginx.conf").write_text(
            f"{user}daemon off;\nworker_processes 1;\npid {directory / 'nginx.pid'};\n"
            f"error_log {directory / 'error.log'} warn;\n"
            "events { worker_connections 1024; }\n"
            "http {\n"
            + (f"    log_format test '{access_format}';\n" if access_format else "")
            + f"    access_log {directory / 'access.log'}{' test' if access_format else ''};\n{temp}"
            f"    include {directory / 'campusid.conf'};\n"
            "}\n"
        )
        self.proc = subprocess.Popen(
            [shutil.which("nginx") or "/usr/sbin/nginx", "-p", str(directory), "-c", str(directory / "nginx.conf")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            wait_port(self.port, proc=self.proc)
        except AssertionError:
            self.stop()
            raise AssertionError(f"nginx did not start: {self.proc.stderr.read()} {self.error_log()}") from None

    def error_log(self) -> str:
        path = self.dir / "error.log"
        return path.read_text() if path.exists() else ""

    def stop(self) -> None:
        stop_process(self.proc)


# -- Redis --------------------------------------------------------------------------------------
class Redis:
    """A redis-server of the test's own, in memory only, on a spare port; stop() and start() again
    on the same port."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen | None = None
        self.start()

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                shutil.which("redis-server") or "/usr/bin/redis-server",
                "--bind",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_port(self.port)

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)


# -- PostgreSQL ---------------------------------------------------------------------------------
def _pg_bin(name: str) -> str:
    found = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"))
    assert found, f"no {name} under /usr/lib/postgresql"
    return str(found[-1])


class Postgres:
    """A PostgreSQL cluster of the test's own (initdb + pg_ctl) on a spare port in a temporary
    directory; restart() stops it fast (as an operator's restart does) and starts it again."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="campusid-pg-"))
        self.port = free_port()
        self.data = self.dir / "data"
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self._as_owner = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if self._as_owner:
            shutil.chown(self.dir, "postgres")
        self._run(_pg_bin("initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
        self.start()

    def _run(self, *cmd: str) -> None:
        proc = subprocess.run([*self._as_owner, *cmd], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, f"{' '.join(cmd)}: {proc.stdout} {proc.stderr}"

    def start(self) -> None:
        options = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100"
        self._run(
            _pg_bin("pg_ctl"),
            "-D",
            str(self.data),
            "-o",
            options,
            "-l",
            str(self.dir / "log"),
            "-w",
            "-t",
            "60",
            "start",
        )

    def stop(self) -> None:
        self._run(_pg_bin("pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "-t", "60", "stop")

    def destroy(self) -> None:
        with contextlib.suppress(AssertionError):
            self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def new_database(self) -> str:
        return create_database(self.url.rpartition("/")[0])


def create_database(server: str = SHARED_PG) -> str:
    """A fresh database on `server`; its SQLAlchemy URL."""
    import psycopg

    name = f"campusid_t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server + "/postgres", autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return f"postgresql+psycopg://{server.split('://', 1)[1]}/{name}"


def drop_database(url: str) -> None:
    import psycopg

    base, _, name = url.replace("postgresql+psycopg://", "postgresql://").rpartition("/")
    with psycopg.connect(base + "/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# -- systemd unit -------------------------------------------------------------------------------
def unit_environment(overrides: dict[str, str]) -> dict[str, str]:
    """deploy/systemd/campusid.env as systemd reads it (KEY=VALUE lines, # comments), with the
    test's own ports, paths and secrets put in place of the example's."""
    values = {}
    for line in (DEPLOY / "systemd" / "campusid.env").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip()
    unknown = set(overrides) - set(values)
    assert not unknown, f"the example environment file has no {sorted(unknown)}"
    return {**values, **overrides}


def unit_commands(environment: dict[str, str]) -> list[list[str]]:
    """The unit's ExecStartPre and ExecStart command lines, with ${NAME} expanded from the
    environment file as systemd does."""
    import shlex

    commands = []
    for line in (DEPLOY / "systemd" / "campusid.service").read_text().splitlines():
        key, _, value = line.partition("=")
        if key in ("ExecStartPre", "ExecStart"):
            commands.append(shlex.split(render(value, environment)))
    assert commands and commands[-1][1:3] == ["serve", "--host"], commands
    return commands
