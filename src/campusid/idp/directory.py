"""Sign-in against the university directory: LDAP v3 (RFC 4511) — OpenLDAP, 389-DS or Active
Directory (docs/directory.md).

One sign-in is a search for the username over a reused service-account connection, then a simple
bind (RFC 4513 5.1) as the entry found, with the typed password, on a reused connection kept for
user binds. python-ldap was chosen by measurement (bench/ldap_clients.py); it blocks, so every
directory call runs in a bounded thread pool of its own and the event loop never waits on it.
Each pool thread keeps its own two connections.

The rules, each in one function:
- `usable_password`: an empty or blank password is refused before any bind — a simple bind with
  an empty password is an unauthenticated bind (RFC 4513 5.1.2) that servers answer as success.
- `usable_username` and `user_filter`: the username is taken as typed, checked for what no
  directory name holds, and escaped (RFC 4515 3) before it is put in the filter. The name kept
  for the local copy meets the accounts' username rule for directory names (accounts/rules.py).
- `matched_name`: the entry found must carry the typed name as its login attribute's value, so a
  name that LDAP matching would bend (spaces, RFC 4518) never signs into another entry.
- `stable_id`: the entry's entryUUID (RFC 4530) or objectGUID, never the username.
- failover: the URLs are tried in order; past CAMPUSID_LDAP_TIMEOUT the next is tried, and with
  none left `DirectoryUnavailable` is raised (the login page answers 503).
"""

from __future__ import annotations

import asyncio
import logging
import re
import socket
import ssl
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from campusid.idp.accounts import rules
from campusid.idp.directory_settings import DirectorySettings
from campusid.idp.store.directory import DIRECTORY, NO_LOCAL_PASSWORD, directory_user_id
from campusid.idp.store.rows import User

log = logging.getLogger("campusid.directory")

MAX_USERNAME = 256
STUDENT = "student"
# What the users table holds at most (longer directory values are cut, never refused)
_LIMITS = {
    "name": rules.MAX_NAME,
    "given_name": rules.MAX_GIVEN_NAME,
    "family_name": rules.MAX_FAMILY_NAME,
    "email": rules.MAX_EMAIL,
    "student_number": rules.MAX_STUDENT_NUMBER,
}
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# An ExtendedRequest for StartTLS (RFC 4511 4.14.1), message id 1, in BER
_START_TLS_OID = b"1.3.6.1.4.1.1466.20037"
_START_TLS_REQUEST = b"\x30\x1d\x02\x01\x01\x77\x18\x80\x16" + _START_TLS_OID


class DirectoryUnavailable(Exception):
    """No directory server answered (or the service account was refused): nobody from the
    directory can sign in now. The message says why, for logs and `directory check`."""


class DirectoryMissing(RuntimeError):
    """CAMPUSID_LDAP_URL is set but python-ldap is not installed."""


@dataclass(frozen=True)
class Person:
    """A directory entry, mapped: where it is (`dn`) and the local user it is kept as, whose
    claims and role come from the entry (its id from the entry's stable id, never the username).
    The user's created_at is when the entry was read; the store keeps the first one."""

    dn: str
    user: User

    @property
    def claims(self) -> dict[str, str | None]:
        user = self.user
        return {
            "name": user.name,
            "given_name": user.given_name,
            "family_name": user.family_name,
            "email": user.email,
            "student_number": user.student_number,
        }


def usable_password(password: str) -> bool:
    """RFC 4513 5.1.2: a simple bind with a DN and an empty password is an unauthenticated bind,
    which many servers answer with success. Such a password never reaches a bind."""
    return bool(password) and not password.isspace()


def usable_username(username: str) -> bool:
    """A name a directory can hold: 1..256 characters, valid UTF-8 (no lone surrogates from
    undecodable bytes), no control characters (NUL included). Anything else is refused unasked."""
    if not username or len(username) > MAX_USERNAME or _CONTROL.search(username):
        return False
    try:
        username.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def escape_filter_value(value: str) -> str:
    """RFC 4515 3: `*`, `(`, `)`, `\\` and NUL become `\\2a`, `\\28`, `\\29`, `\\5c`, `\\00`, so
    a value can only ever be compared for equality, never widen the filter."""
    out = []
    for ch in value:
        if ch in "*()\\\x00":
            out.append(f"\\{ord(ch):02x}")
        else:
            out.append(ch)
    return "".join(out)


def user_filter(template: str, username: str) -> str:
    """CAMPUSID_LDAP_USER_FILTER with the escaped username put in."""
    return template.replace("{username}", escape_filter_value(username))


def matched_name(values: list[str], typed: str) -> str | None:
    """The entry's login-attribute value that is the typed name (ignoring case only, as the
    attribute's equality rule does), else None: LDAP matching ignores leading, trailing and
    repeated spaces (RFC 4518 2.6.1), and " mei " must not sign in as "mei"."""
    folded = typed.casefold()
    for value in values:
        if value.casefold() == folded:
            return value
    return None


def stable_id(attribute: str, raw: bytes) -> str:
    """The entry's stable identifier as text: AD's objectGUID is 16 little-endian bytes, shown
    as its usual GUID string; entryUUID (RFC 4530) and others are already text."""
    if attribute.lower() == "objectguid" and len(raw) == 16:
        return str(uuid.UUID(bytes_le=raw))
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.hex()


def _dn_key(dn: str) -> str:
    return re.sub(r"\s*([,=+])\s*", r"\1", dn.strip()).casefold()


def _text(entry: dict, attribute: str, limit: int | None = None) -> str | None:
    for key, values in entry.items():
        if key.lower() == attribute.lower() and values:
            text = values[0].decode("utf-8", "replace").strip()
            return (text[:limit] if limit else text) or None
    return None


def _texts(entry: dict, attribute: str) -> list[str]:
    for key, values in entry.items():
        if key.lower() == attribute.lower():
            return [v.decode("utf-8", "replace") for v in values]
    return []


class _Conn:
    """One connection and the URL it reached."""

    def __init__(self, obj: Any, index: int) -> None:
        self.obj, self.index = obj, index


class Directory:
    def __init__(self, settings: DirectorySettings, workers: int = 8) -> None:
        try:
            import ldap
            import ldap.controls
        except ImportError:
            raise DirectoryMissing(
                "CAMPUSID_LDAP_URL is set but python-ldap is not installed: pip install 'campusid[directory]' "
                "(Debian: apt-get install libldap2-dev libsasl2-dev first)"
            ) from None
        self.ldap = ldap
        self.settings = settings
        self._workers = workers
        self._pool: ThreadPoolExecutor | None = None  # made at first use, again after close()
        self._local = threading.local()
        self._down = (ldap.SERVER_DOWN, ldap.TIMEOUT, ldap.CONNECT_ERROR, ldap.UNAVAILABLE, ldap.BUSY)
        self._attributes = [
            settings.login_attribute,
            settings.attr_id,
            settings.attr_name,
            settings.attr_given_name,
            settings.attr_family_name,
            settings.attr_email,
            settings.attr_student_number,
            "memberOf",
        ]

    def close(self) -> None:
        """Let the threads (and their connections) go; a later call starts a new pool."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    # -- what the server calls (on the event loop) --------------------------------------------
    async def authenticate(self, username: str, password: str) -> Person | None:
        """The person whose directory password this is, or None (no such entry, wrong password,
        an unusable name or password). Raises DirectoryUnavailable when no server answers."""
        if not usable_password(password) or not usable_username(username):
            return None
        return await self._run(self._authenticate, username, password)

    async def lookup(self, username: str) -> Person | None:
        """The mapped entry for `username`, without a password (`campusid directory check`)."""
        if not usable_username(username):
            return None
        return await self._run(self._lookup, username)

    async def stable_ids(self, progress: Callable[[int], None] | None = None) -> set[str]:
        """The stable identifier of every person the user filter admits (`directory sync`),
        read page by page (RFC 2696) so a directory of any size is never one answer."""
        # no bound on the whole read (a large directory takes its time); each page has the timeout
        return await self._run(self._stable_ids, progress, bounded=False)

    async def _run(self, fn: Callable, *args, bounded: bool = True) -> Any:
        loop = asyncio.get_running_loop()
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self._workers, thread_name_prefix="campusid-ldap")
        # a bound on the whole call, beyond the per-operation timeouts the library applies
        budget = self.settings.timeout * (len(self.settings.urls) + 2) + 5 if bounded else None
        try:
            return await asyncio.wait_for(loop.run_in_executor(self._pool, fn, *args), budget)
        except TimeoutError:
            raise DirectoryUnavailable(f"no directory server answered within {budget:.0f} s") from None
        except self.ldap.LDAPError as exc:  # e.g. a search the server refuses: a configuration to fix
            raise DirectoryUnavailable(_reason(exc)) from None

    # -- in the pool's threads -----------------------------------------------------------------
    def _connect(self, *, skip: set[int], service: bool) -> _Conn:
        """A new connection to the first URL that answers (skipping the one that just failed),
        StartTLS when asked, bound as the service account for searches."""
        ldap, s = self.ldap, self.settings
        reasons = []
        candidates = [i for i in range(len(s.urls)) if i not in skip]
        for index in candidates:
            url = s.urls[index]
            try:
                conn = ldap.initialize(url)
                conn.set_option(ldap.OPT_PROTOCOL_VERSION, ldap.VERSION3)
                conn.set_option(ldap.OPT_REFERRALS, 0)
                conn.set_option(ldap.OPT_NETWORK_TIMEOUT, s.timeout)
                conn.set_option(ldap.OPT_TIMEOUT, s.timeout)
                conn.timeout = s.timeout
                if s.ca_file:
                    conn.set_option(ldap.OPT_X_TLS_CACERTFILE, s.ca_file)
                conn.set_option(ldap.OPT_X_TLS_REQUIRE_CERT, ldap.OPT_X_TLS_DEMAND)
                conn.set_option(ldap.OPT_X_TLS_NEWCTX, 0)
                if s.start_tls and url.lower().startswith("ldap://"):
                    conn.start_tls_s()
                if service:
                    conn.simple_bind_s(s.bind_dn or "", s.bind_password or "")
                return _Conn(conn, index)
            except ldap.INVALID_CREDENTIALS:
                refused = f"{url}: the service account's bind (CAMPUSID_LDAP_BIND_DN) was refused"
                raise DirectoryUnavailable(refused) from None
            except ldap.LDAPError as exc:
                reasons.append(f"{url}: {self._tls_diagnosis(url) or _reason(exc)}")
        raise DirectoryUnavailable("; ".join(reasons) or "every directory server failed")

    def _tls_diagnosis(self, url: str) -> str | None:
        """Why TLS to `url` failed, in words: libldap says only "Can't contact LDAP server", so
        the handshake is tried again with Python's ssl (after StartTLS, RFC 4511 4.14, for
        ldap:// with CAMPUSID_LDAP_START_TLS) and its verdict is returned; None when TLS is not
        in use or the handshake works (the failure was something else)."""
        s = self.settings
        secure = url.lower().startswith("ldaps://")
        if not secure and not s.start_tls:
            return None
        rest = url.split("://", 1)[1].rstrip("/")
        host, _, port = rest.rpartition(":") if rest.count(":") == 1 else (rest, "", "")
        port_number = int(port) if port.isdigit() else (636 if secure else 389)
        context = ssl.create_default_context(cafile=s.ca_file)
        try:
            with socket.create_connection((host or rest, port_number), timeout=s.timeout) as sock:
                if not secure:
                    sock.sendall(_START_TLS_REQUEST)
                    if not sock.recv(1024):
                        return "the server closed the connection at StartTLS"
                with context.wrap_socket(sock, server_hostname=host or rest):
                    return None
        except ssl.SSLCertVerificationError as exc:
            return f"TLS: the server's certificate was refused ({exc.verify_message}); check CAMPUSID_LDAP_CA_FILE"
        except ssl.SSLError as exc:
            return f"TLS: the handshake failed ({exc.reason or exc})"
        except OSError:
            return None

    def _with(self, name: str, op: Callable[[Any], Any]) -> Any:
        """Run `op` on this thread's connection `name` ("service" or "user"). A connection that
        fails is dropped and `op` runs again on a new one: a kept connection that went stale
        (the server restarted) may reconnect to the same URL; a server that failed a new
        connection, or let an operation time out, is skipped in favour of the next URL."""
        conn = getattr(self._local, name, None)
        failed: set[int] = set()
        while True:
            fresh = conn is None
            if fresh:
                conn = self._connect(skip=failed, service=name == "service")
                setattr(self._local, name, conn)
            try:
                return op(conn.obj)
            except self._down as exc:
                url = self.settings.urls[conn.index]
                log.warning("directory %s failed (%s)", url, _reason(exc))
                setattr(self._local, name, None)
                if fresh or isinstance(exc, self.ldap.TIMEOUT):
                    failed.add(conn.index)
                conn = None
                if len(failed) >= len(self.settings.urls):
                    raise DirectoryUnavailable(f"{url}: {_reason(exc)}") from None

    def _search(self, username: str) -> tuple[str, dict] | None:
        ldap, s = self.ldap, self.settings
        filt = user_filter(s.user_filter, username)

        def search(conn):
            try:
                return conn.search_ext_s(s.user_base, ldap.SCOPE_SUBTREE, filt, self._attributes, sizelimit=2)
            except ldap.SIZELIMIT_EXCEEDED:
                return [("", {}), ("", {})]
            except ldap.NO_SUCH_OBJECT:
                return []

        found = [(dn, attrs) for dn, attrs in self._with("service", search) if dn is not None]
        if len(found) != 1:
            if len(found) > 1:
                log.warning("the user filter matches more than one entry for a username; refused")
            return None
        dn, entry = found[0]
        if matched_name(_texts(entry, s.login_attribute), username) is None:
            return None
        return dn, entry

    def _person(self, dn: str, entry: dict, username: str) -> Person | None:
        s = self.settings
        raw_id = next((v[0] for k, v in entry.items() if k.lower() == s.attr_id.lower() and v), None)
        name = matched_name(_texts(entry, s.login_attribute), username)
        if raw_id is None or name is None:
            log.warning("a directory entry has no %s: it cannot sign in", s.attr_id)
            return None
        if not rules.directory_username_fits(name):  # the account rule, on the name as the entry has it
            log.warning(
                "a directory entry's login name is not 1-%d printable characters: it cannot sign in", rules.MAX_USERNAME
            )
            return None
        external_id = stable_id(s.attr_id, raw_id)[:255]
        user = User(
            id=directory_user_id(external_id),
            username=name,
            name=_text(entry, s.attr_name, _LIMITS["name"]) or name,
            given_name=_text(entry, s.attr_given_name, _LIMITS["given_name"]),
            family_name=_text(entry, s.attr_family_name, _LIMITS["family_name"]),
            email=_text(entry, s.attr_email, _LIMITS["email"]),
            student_number=_text(entry, s.attr_student_number, _LIMITS["student_number"]),
            role=self._role(dn, entry),
            password_hash=NO_LOCAL_PASSWORD,
            created_at=int(time.time()),
            source=DIRECTORY,
            external_id=external_id,
        )
        return Person(dn, user)

    def _role(self, dn: str, entry: dict) -> str:
        """The first of CAMPUSID_LDAP_ROLE_GROUPS the entry belongs to, else student: from the
        entry's memberOf when the directory keeps one (AD, OpenLDAP's memberof overlay), else by
        asking each group whether the DN is a member (member / uniqueMember)."""
        groups = self.settings.role_groups
        if not groups:
            return STUDENT
        member_of = {_dn_key(v) for v in _texts(entry, "memberOf")}
        if member_of:
            return next((role for role, group in groups if _dn_key(group) in member_of), STUDENT)
        ldap = self.ldap
        who = escape_filter_value(dn)
        for role, group in groups:

            def is_member(conn, group=group):
                try:
                    return conn.search_ext_s(
                        group, ldap.SCOPE_BASE, f"(|(member={who})(uniqueMember={who}))", ["1.1"], sizelimit=1
                    )
                except ldap.NO_SUCH_OBJECT:
                    log.warning("CAMPUSID_LDAP_ROLE_GROUPS names %s, which does not exist", group)
                    return []

            if self._with("service", is_member):
                return role
        return STUDENT

    def _bind(self, dn: str, password: str) -> bool:
        ldap = self.ldap
        assert usable_password(password)  # never an unauthenticated bind

        def bind(conn):
            try:
                conn.simple_bind_s(dn, password)
                return True
            except self._down:
                raise
            except ldap.LDAPError as exc:  # invalid credentials, or any other refusal: not a success
                if not isinstance(exc, ldap.INVALID_CREDENTIALS):
                    log.info("a user bind was refused: %s", _reason(exc))
                return False

        return self._with("user", bind)

    def _authenticate(self, username: str, password: str) -> Person | None:
        found = self._search(username)
        if found is None or not self._bind(found[0], password):
            return None
        return self._person(found[0], found[1], username)

    def _lookup(self, username: str) -> Person | None:
        found = self._search(username)
        return self._person(found[0], found[1], username) if found is not None else None

    def _stable_ids(self, progress: Callable[[int], None] | None) -> set[str]:
        ldap, s = self.ldap, self.settings
        from ldap.controls import SimplePagedResultsControl

        everyone = s.user_filter.replace("{username}", "*")
        ids: set[str] = set()

        def pages(conn) -> Iterator[list]:
            control = SimplePagedResultsControl(True, size=500, cookie="")
            while True:
                msgid = conn.search_ext(s.user_base, ldap.SCOPE_SUBTREE, everyone, [s.attr_id], serverctrls=[control])
                _, data, _, controls = conn.result3(msgid, timeout=s.timeout)
                yield data
                paged = SimplePagedResultsControl.controlType
                cookie = next((c.cookie for c in controls if c.controlType == paged), b"")
                if not cookie:
                    return
                control.cookie = cookie

        def read_all(conn) -> None:
            ids.clear()
            for data in pages(conn):
                for dn, attrs in data:
                    if dn is None:
                        continue
                    raw = next((v[0] for k, v in attrs.items() if k.lower() == s.attr_id.lower() and v), None)
                    if raw is not None:
                        ids.add(stable_id(s.attr_id, raw))
                if progress is not None:
                    progress(len(ids))

        try:
            self._with("service", read_all)
        except ldap.SIZELIMIT_EXCEEDED:
            raise DirectoryUnavailable(
                f"the directory stopped after {len(ids)} entries (its size limit): let the service account read "
                "every person (OpenLDAP: olcLimits size.prtotal=unlimited for its DN)"
            ) from None
        return ids


def _reason(exc: Exception) -> str:
    """python-ldap's error as one line: its description and, when it has one, the detail (a TLS
    failure says which certificate check failed there)."""
    args = exc.args[0] if exc.args and isinstance(exc.args[0], dict) else {}
    desc, info = args.get("desc", type(exc).__name__), args.get("info", "")
    return f"{desc} ({info})" if info else str(desc)


async def sync(
    directory: Directory, store, events, now: int, progress: Callable[[int], None] | None = None
) -> dict[str, Any]:
    """`campusid directory sync`: every local copy whose directory entry is gone (its stable
    identifier no longer found under the user base and filter) is disabled — its sessions end and
    its grants and refresh tokens are revoked in the same transaction (store.users.disable). A
    directory that answers with nobody at all disables nobody: that is a wrong base or filter,
    not a university without people. One JSON-able object: checked, disabled, errors."""
    from campusid.idp import events as ev

    copies = await store.users.directory_copies()
    try:
        present = await directory.stable_ids(progress)
    except DirectoryUnavailable as exc:
        return {"checked": 0, "disabled": [], "errors": [f"the directory cannot be read: {exc}"]}
    if copies and not present:
        return {
            "checked": 0,
            "disabled": [],
            "errors": [
                f"the directory returned no people under {directory.settings.user_base} with "
                f"{directory.settings.user_filter}: nothing was disabled "
                "(check CAMPUSID_LDAP_USER_BASE and CAMPUSID_LDAP_USER_FILTER)"
            ],
        }
    disabled, errors = [], []
    for user_id, username, external_id, disabled_at in copies:
        if external_id in present or disabled_at is not None:
            continue
        try:
            ended = await store.users.disable(user_id, now)
        except Exception as exc:  # one account's failure must not stop the others
            errors.append(f"{username}: {exc}")
            continue
        if ended is not None:
            disabled.append(username)
            await events.record(
                ev.USER_DISABLED,
                username=username,
                detail=f"by directory sync (entry gone); {len(ended.sids)} session(s) ended, "
                f"{len(ended.grants)} grant(s) revoked",
            )
    return {"checked": len(copies), "disabled": disabled, "errors": errors}
