"""Settings from the environment (docs/configuration.md); a TOML file named by CAMPUSID_CONFIG may set the same keys.

Keys in the file are the variable names without the `CAMPUSID_` prefix, lower-case
(`issuer = "https://login.example.edu"`). The environment wins over the file.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import secrets
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

import platformdirs
from limits import parse as parse_rate

from campusid import i18n
from campusid.idp.brand import BrandSettings, BrandSettingsError, load_brand_settings
from campusid.idp.directory_settings import DirectorySettings, DirectorySettingsError, load_directory_settings
from campusid.idp.issuer import Issuer, canonical_issuer

log = logging.getLogger("campusid.settings")

DEFAULT_PORT = 8000
_MIN_SECRET = 32


class SettingsError(ValueError):
    """A setting cannot be used; the message says which and how to fix it."""


@dataclass(frozen=True)
class Settings:
    issuer: Issuer
    database_url: str
    secret_key: str
    data_dir: Path
    redis_url: str | None = None
    limit_failed_per_account: str = "5/15 minutes"
    limit_attempts_per_ip: str = "30/15 minutes"
    limit_logins_per_user_client: str = "30/hour"
    limit_token_per_client: str = "600/minute"
    trusted_proxies: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = ()
    code_ttl: int = 60
    access_token_ttl: int = 900
    id_token_ttl: int = 900
    refresh_token_ttl: int = 30 * 86400
    session_ttl: int = 12 * 3600
    interaction_ttl: int = 900
    device_code_ttl: int = 600
    jwks_max_age: int = 300
    metrics_token: str | None = None  # /metrics is off (404) without it
    log_format: str = "text"  # or "json": one JSON object per log line
    purge_interval: int = 3600  # seconds between housekeeping runs in `serve`; 0: never
    key_rotation_days: int = 90  # age of the newest signing key that makes serve add one; 0: by hand only
    events_retention_days: int = 90
    argon2_time_cost: int = 2
    argon2_memory_cost: int = 19 * 1024
    argon2_parallelism: int = 1
    directory: DirectorySettings | None = None  # CAMPUSID_LDAP_*: sign-in against LDAP / AD
    # Roles that must sign in with a second factor (docs/mfa.md); empty: none.
    mfa_required_roles: tuple[str, ...] = ("admin",)
    # CAS (docs/cas.md): service and proxy tickets' lifetime; PEM CAs trusted for proxy callbacks
    # beside the system's.
    cas_ticket_ttl: int = 60
    cas_proxy_ca_file: str | None = None
    brand: BrandSettings = field(default_factory=BrandSettings)  # CAMPUSID_BRAND_*: the university's face
    extra: dict = field(default_factory=dict)

    @property
    def secure_cookies(self) -> bool:
        return self.issuer.scheme == "https"

    @property
    def max_token_lifetime(self) -> int:
        return max(self.access_token_ttl, self.id_token_ttl)

    def with_(self, **changes) -> Settings:
        return replace(self, **changes)


def default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir("campusid", appauthor=False))


def _read_file(path: str | None) -> dict:
    if not path:
        return {}
    try:
        with open(path, "rb") as fh:
            return {str(k).lower(): v for k, v in tomllib.load(fh).items()}
    except FileNotFoundError:
        raise SettingsError(f"CAMPUSID_CONFIG names {path}, which does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"CAMPUSID_CONFIG file {path} is not valid TOML: {exc}") from None


def _secret_key(value: str | None, data_dir: Path) -> str:
    if value:
        if len(value) < _MIN_SECRET:
            raise SettingsError(
                f"CAMPUSID_SECRET_KEY must be at least {_MIN_SECRET} characters; make one with "
                "python -c 'import secrets; print(secrets.token_urlsafe(48))'"
            )
        return value
    path = data_dir / "secret_key"
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    data_dir.mkdir(parents=True, exist_ok=True)
    key = secrets.token_urlsafe(48)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(key)
    log.warning(
        "CAMPUSID_SECRET_KEY is not set: generated one into %s. Set CAMPUSID_SECRET_KEY for "
        "deployments with several workers or hosts.",
        path,
    )
    return key


def _proxies(value: str | list | None) -> tuple:
    if not value:
        return ()
    items = value if isinstance(value, list) else value.replace(",", " ").split()
    nets = []
    for item in items:
        try:
            nets.append(ipaddress.ip_network(str(item).strip(), strict=False))
        except ValueError:
            raise SettingsError(
                f"CAMPUSID_TRUSTED_PROXIES has {item!r}, which is not an IP address or network"
            ) from None
    return tuple(nets)


LOG_FORMATS = ("text", "json")


def _metrics_token(value: str | None) -> str | None:
    if value and len(value) < _MIN_SECRET:
        raise SettingsError(
            f"CAMPUSID_METRICS_TOKEN must be at least {_MIN_SECRET} characters (or unset, which turns /metrics "
            "off); make one with python -c 'import secrets; print(secrets.token_urlsafe(32))'"
        )
    return value or None


def log_format(value: str | None) -> str:
    """CAMPUSID_LOG_FORMAT: `text` (the default) or `json`."""
    chosen = (value or "text").strip().lower()
    if chosen not in LOG_FORMATS:
        raise SettingsError(f"CAMPUSID_LOG_FORMAT={value!r} must be one of: {', '.join(LOG_FORMATS)}")
    return chosen


def _ca_file(value: str | None) -> str | None:
    """CAMPUSID_CAS_PROXY_CA_FILE: a PEM file of CAs trusted for CAS proxy callbacks (beside the system's)."""
    if not value:
        return None
    if not Path(value).is_file():
        raise SettingsError(f"CAMPUSID_CAS_PROXY_CA_FILE names {value}, which is not a readable file")
    return str(value)


def _roles(value: str | list) -> tuple[str, ...]:
    """CAMPUSID_MFA_REQUIRED_ROLES: comma-separated roles (a list in the TOML file); "" = none."""
    items = value if isinstance(value, list) else str(value).split(",")
    return tuple(sorted({str(r).strip() for r in items if str(r).strip()}))


def _rate(name: str, value: str) -> str:
    try:
        parse_rate(value)
    except ValueError:
        raise SettingsError(f"{name}={value!r} is not a rate; write it like '5/15 minutes' or '600/minute'") from None
    return value


def _int(name: str, value, minimum: int = 1) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise SettingsError(f"{name}={value!r} must be a whole number") from None
    if number < minimum:
        raise SettingsError(f"{name} must be at least {minimum}")
    return number


def load_settings(env: dict[str, str] | None = None, *, port: int | None = None) -> Settings:
    """Read settings from `env` (default: os.environ) and the optional TOML file."""
    env = dict(os.environ if env is None else env)
    filed = _read_file(env.get("CAMPUSID_CONFIG"))

    def get(key: str, default=None):
        name = f"CAMPUSID_{key.upper()}"
        if name in env and env[name] != "":
            return env[name]
        return filed.get(key.lower(), default)

    data_dir = Path(get("data_dir") or default_data_dir()).expanduser()
    issuer = canonical_issuer(get("issuer") or f"http://127.0.0.1:{port or DEFAULT_PORT}")
    database_url = get("database_url") or f"sqlite:///{data_dir / 'campusid.db'}"
    if database_url.startswith("postgresql://") or database_url.startswith("postgres://"):
        database_url = "postgresql+psycopg://" + database_url.split("://", 1)[1]
    values = {}
    for key in (
        "limit_failed_per_account",
        "limit_attempts_per_ip",
        "limit_logins_per_user_client",
        "limit_token_per_client",
    ):
        if get(key):
            values[key] = _rate(f"CAMPUSID_{key.upper()}", str(get(key)))
    for key in (
        "code_ttl",
        "access_token_ttl",
        "id_token_ttl",
        "refresh_token_ttl",
        "session_ttl",
        "device_code_ttl",
        "jwks_max_age",
        "argon2_time_cost",
        "argon2_memory_cost",
        "argon2_parallelism",
        "cas_ticket_ttl",
    ):
        if get(key) is not None:
            values[key] = _int(f"CAMPUSID_{key.upper()}", get(key))
    for key in ("purge_interval", "key_rotation_days", "events_retention_days"):  # 0 turns the first two off
        if get(key) is not None:
            values[key] = _int(f"CAMPUSID_{key.upper()}", get(key), minimum=1 if key == "events_retention_days" else 0)
    try:
        values["directory"] = load_directory_settings(get)
    except DirectorySettingsError as exc:
        raise SettingsError(str(exc)) from None
    try:
        values["brand"] = load_brand_settings(get, i18n.locales())
    except BrandSettingsError as exc:
        raise SettingsError(str(exc)) from None
    return Settings(
        issuer=issuer,
        database_url=database_url,
        secret_key=_secret_key(get("secret_key"), data_dir),
        data_dir=data_dir,
        redis_url=get("redis_url") or None,
        trusted_proxies=_proxies(get("trusted_proxies")),
        metrics_token=_metrics_token(get("metrics_token")),
        log_format=log_format(get("log_format")),
        cas_proxy_ca_file=_ca_file(get("cas_proxy_ca_file")),
        # Set but empty means no role (get() would read an empty value as unset).
        mfa_required_roles=_roles(
            env["CAMPUSID_MFA_REQUIRED_ROLES"]
            if "CAMPUSID_MFA_REQUIRED_ROLES" in env
            else filed.get("mfa_required_roles", "admin")
        ),
        **values,
    )
