"""The university directory's settings (CAMPUSID_LDAP_*; docs/directory.md).

Unset CAMPUSID_LDAP_URL: no directory, only local accounts. Set: every other value is checked
here, at start, so a typo fails `campusid serve` with a message rather than the first sign-in.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROLES = ("admin", "developer", "student")
_PLACEHOLDER = "{username}"
# The attribute a filter compares the username with: `(uid={username})` → uid.
_LOGIN_ATTRIBUTE = re.compile(r"\(\s*([A-Za-z][A-Za-z0-9-]*)\s*=\s*\{username\}\s*\)")


class DirectorySettingsError(ValueError):
    """A CAMPUSID_LDAP_* value cannot be used; the message says which and why."""


@dataclass(frozen=True)
class DirectorySettings:
    urls: tuple[str, ...]
    user_base: str
    user_filter: str = "(uid={username})"
    bind_dn: str | None = None
    bind_password: str | None = None
    start_tls: bool = False
    ca_file: str | None = None
    attr_id: str = "entryUUID"
    attr_name: str = "cn"
    attr_given_name: str = "givenName"
    attr_family_name: str = "sn"
    attr_email: str = "mail"
    attr_student_number: str = "employeeNumber"
    role_groups: tuple[tuple[str, str], ...] = ()  # (role, group DN), first match wins
    timeout: float = 5.0

    @property
    def login_attribute(self) -> str:
        """The attribute the filter matches the username against; its value is the local username."""
        match = _LOGIN_ATTRIBUTE.search(self.user_filter)
        assert match is not None  # checked when loaded
        return match.group(1)


def _bool(name: str, value) -> bool:
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise DirectorySettingsError(f"{name}={value!r} must be true or false")


def _urls(value: str) -> tuple[str, ...]:
    urls = tuple(value.split())
    for url in urls:
        if not re.fullmatch(r"ldaps?://[^\s/]+/?", url, flags=re.IGNORECASE):
            raise DirectorySettingsError(
                f"CAMPUSID_LDAP_URL has {url!r}; write ldap://host[:port] or ldaps://host[:port], "
                "several separated by spaces"
            )
    return urls


def _role_groups(value: str) -> tuple[tuple[str, str], ...]:
    out = []
    for part in value.split(";"):
        if not part.strip():
            continue
        role, sep, dn = part.partition("=")
        role, dn = role.strip(), dn.strip()
        if not sep or role not in ROLES[:2] or not dn:
            raise DirectorySettingsError(
                f"CAMPUSID_LDAP_ROLE_GROUPS has {part.strip()!r}; write admin=<group DN>;developer=<group DN>"
            )
        out.append((role, dn))
    return tuple(out)


def load_directory_settings(get: Callable[[str], object]) -> DirectorySettings | None:
    """Read CAMPUSID_LDAP_* through `get(key)` (the settings' lookup: environment, then file)."""
    url = get("ldap_url")
    if not url:
        return None
    if importlib.util.find_spec("ldap") is None:
        raise DirectorySettingsError(
            "CAMPUSID_LDAP_URL is set but python-ldap is not installed: pip install 'campusid[directory]' "
            "(it builds against libldap: on Debian, apt-get install libldap2-dev libsasl2-dev first)"
        )
    urls = _urls(str(url))
    base = get("ldap_user_base")
    if not base:
        raise DirectorySettingsError(
            "CAMPUSID_LDAP_USER_BASE is required with CAMPUSID_LDAP_URL (the search base for people)"
        )
    user_filter = str(get("ldap_user_filter") or "(uid={username})")
    if user_filter.count(_PLACEHOLDER) != 1 or not _LOGIN_ATTRIBUTE.search(user_filter):
        raise DirectorySettingsError(
            f"CAMPUSID_LDAP_USER_FILTER={user_filter!r} must compare one attribute with {{username}} once, "
            "like (uid={username}) or (&(objectClass=person)(sAMAccountName={username}))"
        )
    password = get("ldap_bind_password")
    password_file = get("ldap_bind_password_file")
    if password_file:
        try:
            password = Path(str(password_file)).read_text().rstrip("\r\n")
        except OSError as exc:
            raise DirectorySettingsError(f"CAMPUSID_LDAP_BIND_PASSWORD_FILE cannot be read: {exc.strerror}") from None
    ca_file = get("ldap_ca_file")
    if ca_file and not Path(str(ca_file)).is_file():
        raise DirectorySettingsError(f"CAMPUSID_LDAP_CA_FILE names {ca_file}, which is not a file")
    try:
        timeout = float(get("ldap_timeout") or 5)
    except ValueError:
        raise DirectorySettingsError("CAMPUSID_LDAP_TIMEOUT must be a number of seconds") from None
    if not 0 < timeout <= 300:
        raise DirectorySettingsError("CAMPUSID_LDAP_TIMEOUT must be between 0 and 300 seconds")
    attrs = {}
    for key in ("id", "name", "given_name", "family_name", "email", "student_number"):
        value = get(f"ldap_attr_{key}")
        if value:
            if not re.fullmatch(r"[A-Za-z][A-Za-z0-9-]*", str(value)):
                raise DirectorySettingsError(f"CAMPUSID_LDAP_ATTR_{key.upper()}={value!r} is not an attribute name")
            attrs[f"attr_{key}"] = str(value)
    return DirectorySettings(
        urls=urls,
        user_base=str(base),
        user_filter=user_filter,
        bind_dn=str(get("ldap_bind_dn")) if get("ldap_bind_dn") else None,
        bind_password=str(password) if password is not None else None,
        start_tls=_bool("CAMPUSID_LDAP_START_TLS", get("ldap_start_tls") or "false"),
        ca_file=str(ca_file) if ca_file else None,
        role_groups=_role_groups(str(get("ldap_role_groups") or "")),
        timeout=timeout,
        **attrs,
    )
