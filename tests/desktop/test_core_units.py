"""Unit tests of the desktop core's parts: settings, token store, grade cache, single flight, error
mapping, the JWT scope check, and the event hook."""

from __future__ import annotations

import stat
import threading
from datetime import UTC, datetime
from pathlib import Path

import keyring
import keyring.backend
import pytest
from joserfc.jwk import ECKey

from campusid.desktop.config import DesktopConfigError, DesktopSettings
from campusid.desktop.core import events as ev
from campusid.desktop.core.cache import GradeCache, GradeSnapshot
from campusid.desktop.core.errors import (
    InsufficientScope,
    LoginFailed,
    LoginTimeout,
    RateLimited,
    RefreshRejected,
    UpstreamUnavailable,
)
from campusid.desktop.core.oidc import translate_error
from campusid.desktop.core.scope_check import JWKSCache, ScopeChecker
from campusid.desktop.core.single_flight import SingleFlight
from campusid.desktop.core.token_store import FileTokenStore, KeyringTokenStore, open_token_store
from campusid.oidc_client import (
    AuthorizationErrorResponse,
    DiscoveryError,
    IDTokenError,
    LoginTimeoutError,
    StateMismatchError,
    TokenEndpointError,
)

from .fake_idp import FakeIdP


# -- settings -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("configured", "canonical"),
    [
        ("https://bücher.example", "https://xn--bcher-kva.example"),  # IDNA (UTS 46) to ASCII
        ("HTTPS://Login.Example.EDU:443/idp/", "https://login.example.edu/idp"),
        ("http://LOCALHOST:8000//", "http://localhost:8000"),
    ],
)
def test_the_issuer_takes_the_canonical_form_the_idp_publishes(tmp_path: Path, configured: str, canonical: str) -> None:
    settings = DesktopSettings.from_env(
        {"CAMPUSID_DESKTOP_ISSUER": configured, "CAMPUSID_DESKTOP_DATA_DIR": str(tmp_path)}
    )
    assert settings.issuer == canonical
    assert settings.records_url == canonical + "/records/v1"
    assert settings.records_audience == canonical + "/records"


def test_without_an_issuer_the_local_idp_is_used(tmp_path: Path) -> None:
    settings = DesktopSettings.from_env({"CAMPUSID_DESKTOP_DATA_DIR": str(tmp_path)})
    assert settings.issuer == "http://127.0.0.1:8000"
    assert settings.records_url == "http://127.0.0.1:8000/records/v1"


@pytest.mark.parametrize(
    ("variable", "value", "hint"),
    [
        ("CAMPUSID_DESKTOP_ISSUER", "idp.example.edu", "must start with https://"),
        ("CAMPUSID_DESKTOP_ISSUER", "https://idp.example.edu?x=1", "query"),
        ("CAMPUSID_DESKTOP_ISSUER", "https://idp.example.edu#x", "fragment"),
        ("CAMPUSID_DESKTOP_ISSUER", "https://u:p@idp.example.edu", "user information"),
        ("CAMPUSID_DESKTOP_ISSUER", "http://idp.example.edu", "plain http"),
        ("CAMPUSID_DESKTOP_ISSUER", "", "is empty"),
        ("CAMPUSID_DESKTOP_ISSUER", "https://idp.example.edu/" + "a" * 10_240, "longer than 2048"),
        ("CAMPUSID_DESKTOP_RECORDS_URL", "records.example.edu/v1", "absolute http(s) URL"),
        ("CAMPUSID_DESKTOP_RECORDS_URL", "https://records.example.edu:99999", "not a valid URL"),
        ("CAMPUSID_DESKTOP_RECORDS_URL", "https://u@records.example.edu", "user information"),
        ("CAMPUSID_DESKTOP_RECORDS_URL", "https://records.example.edu/" + "a" * 10_240, "longer than 2048"),
    ],
)
def test_a_setting_that_cannot_be_used_names_its_variable(tmp_path: Path, variable: str, value: str, hint: str) -> None:
    with pytest.raises(DesktopConfigError) as caught:
        DesktopSettings.from_env({variable: value, "CAMPUSID_DESKTOP_DATA_DIR": str(tmp_path)})
    assert str(caught.value).startswith(variable + " ")
    assert hint in str(caught.value)


# -- token store ------------------------------------------------------------------------------------
def test_without_a_keyring_tokens_go_to_a_0600_file_that_says_so(tmp_path: Path) -> None:
    store = open_token_store(tmp_path, "acct")
    assert isinstance(store, FileTokenStore) and store.kind == "file"
    assert "no OS keyring" in store.detail and "0600" in store.detail
    store.save({"access_token": "a"})
    assert stat.S_IMODE((tmp_path / "tokens.json").stat().st_mode) == 0o600
    assert store.load() == {"access_token": "a"}
    store.clear()
    assert store.load() is None


def test_file_store_tightens_an_existing_wide_file(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    path.write_text("{}")
    path.chmod(0o644)
    FileTokenStore(path, "test").save({"x": 1})
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


class _MemoryKeyring(keyring.backend.KeyringBackend):
    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.items: dict[tuple[str, str], str] = {}

    def get_password(self, service, username):
        return self.items.get((service, username))

    def set_password(self, service, username, password):
        self.items[(service, username)] = password

    def delete_password(self, service, username):
        self.items.pop((service, username), None)


def test_a_working_keyring_is_preferred(tmp_path: Path) -> None:
    backend = _MemoryKeyring()
    previous = keyring.get_keyring()
    keyring.set_keyring(backend)
    try:
        store = open_token_store(tmp_path, "acct")
        assert isinstance(store, KeyringTokenStore) and store.kind == "keyring"
        store.save({"refresh_token": "r"})
        assert store.load() == {"refresh_token": "r"}
        assert not (tmp_path / "tokens.json").exists()
    finally:
        keyring.set_keyring(previous)


# -- cache --------------------------------------------------------------------------------------------
def test_cache_replaces_atomically_and_keeps_the_sync_time(tmp_path: Path) -> None:
    cache = GradeCache(tmp_path / "g.sqlite3")
    assert cache.load() == GradeSnapshot()
    first = GradeSnapshot([{"course_code": "A", "credits": 1}], datetime(2026, 1, 1, tzinfo=UTC), "Ada")
    cache.replace(first)
    assert cache.load() == first
    broken = GradeSnapshot([{"course_code": "B"}, {"course_code": "C", "bad": object()}], datetime.now(UTC))
    with pytest.raises(TypeError):
        cache.replace(broken)  # fails halfway: the transaction rolls back
    assert cache.load() == first
    cache.clear()
    assert cache.load() == GradeSnapshot()


# -- single flight --------------------------------------------------------------------------------------
def test_single_flight_shares_one_run_among_concurrent_callers() -> None:
    flight: SingleFlight[int] = SingleFlight()
    release = threading.Event()
    runs = []

    def work() -> int:
        runs.append(1)
        assert release.wait(5)
        return len(runs)

    futures = [flight.run(work) for _ in range(20)]
    assert flight.joined == 20
    release.set()
    assert {f.result(5) for f in futures} == {1}
    assert len(runs) == 1
    assert flight.run(lambda: 42).result(5) == 42  # a later call runs again
    assert flight.joined == 0


def test_single_flight_shares_a_failure_too() -> None:
    flight: SingleFlight[int] = SingleFlight()

    def boom() -> int:
        raise UpstreamUnavailable("down")

    with pytest.raises(UpstreamUnavailable):
        flight.run(boom).result(5)


# -- oidc_client errors -> core errors ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("exc", "login", "expected", "retry_after"),
    [
        (TokenEndpointError("slow_down", None, 429, 17.0), False, RateLimited, 17.0),
        (TokenEndpointError("slow_down", None, 429, 5.0), True, RateLimited, 5.0),
        (AuthorizationErrorResponse("temporarily_unavailable"), True, RateLimited, 60.0),
        (AuthorizationErrorResponse("access_denied"), True, LoginFailed, None),
        (TokenEndpointError("invalid_grant", None, 400), False, RefreshRejected, None),
        (TokenEndpointError("invalid_grant", None, 400), True, LoginFailed, None),
        (TokenEndpointError("network_error", "ConnectError", None), False, UpstreamUnavailable, None),
        (LoginTimeoutError("no"), True, LoginTimeout, None),
        (StateMismatchError("state"), True, LoginFailed, None),
        (IDTokenError("nonce"), True, LoginFailed, None),
    ],
)
def test_relying_party_errors_map_to_bridge_codes(exc, login, expected, retry_after) -> None:
    mapped = translate_error(exc, login=login)
    assert type(mapped) is expected
    assert mapped.retry_after == retry_after


def test_unreachable_discovery_is_upstream_unavailable() -> None:
    import httpx

    try:
        try:
            raise httpx.ConnectError("refused")
        except httpx.ConnectError as inner:
            raise DiscoveryError("discovery request failed") from inner
    except DiscoveryError as exc:
        assert type(translate_error(exc, login=True)) is UpstreamUnavailable


# -- JWT scope check ----------------------------------------------------------------------------------------
@pytest.fixture
def checker(idp: FakeIdP, tmp_path: Path) -> ScopeChecker:
    cache = JWKSCache(tmp_path / "jwks.json", lambda: (idp.issuer, idp.issuer + "/oauth/jwks"))
    return ScopeChecker(cache, idp.issuer + "/records")


def test_scope_check_accepts_a_genuine_token(checker: ScopeChecker, idp: FakeIdP) -> None:
    checker.require(idp.mint_access(), "grades.read")


def test_scope_check_works_offline_from_the_disk_cache(checker: ScopeChecker, idp: FakeIdP) -> None:
    token = idp.mint_access()
    checker.require(token, "grades.read")
    hits = idp.hits["jwks"]
    idp.stop()
    checker.require(token, "grades.read")
    assert idp.hits["jwks"] == hits == 1


@pytest.mark.parametrize(
    "make",
    [
        lambda idp: idp.mint_access("openid profile"),  # no grades.read
        lambda idp: idp.mint_access(iss="http://evil.example"),
        lambda idp: idp.mint_access(aud=["someone-else"]),
        lambda idp: idp.mint_access(key=ECKey.generate_key("P-256", parameters={"kid": "es-1"})),  # forged
        lambda idp: idp.mint_access(key=idp.rsa, alg="RS256"),  # not the pinned algorithm
        lambda idp: "not.a.jwt",
    ],
    ids=["no-scope", "wrong-iss", "wrong-aud", "forged-signature", "rs256", "garbage"],
)
def test_scope_check_refuses(checker: ScopeChecker, idp: FakeIdP, make) -> None:
    with pytest.raises(InsufficientScope):
        checker.require(make(idp), "grades.read")


# -- events ---------------------------------------------------------------------------------------------------
def test_core_reports_state_changes_and_bridge_calls(bridge, browser) -> None:
    seen: list[ev.Event] = []
    unsubscribe = bridge.core.events.subscribe(seen.append)
    bridge.post("/login")
    bridge.post("/sync_grades")
    unsubscribe()
    bridge.get("/health", token=None)
    kinds = [e.kind for e in seen]
    assert ev.STATE_CHANGED in kinds and ev.SYNC_FINISHED in kinds and ev.LOGIN_URL_OPENED in kinds
    states = [e.data["state"] for e in seen if e.kind == ev.STATE_CHANGED]
    assert "waiting_for_browser" in states and states[-1] == "signed_in"
    calls = [e.data for e in seen if e.kind == ev.BRIDGE_CALL]
    assert [(c["method"], c["path"], c["status"]) for c in calls] == [
        ("POST", "/login", 200),
        ("POST", "/sync_grades", 200),
    ]
    assert bridge.core.events.recent[-1].data["path"] == "/health"


def test_a_failing_listener_does_not_break_the_core() -> None:
    bus = ev.EventBus()
    bus.subscribe(lambda e: 1 / 0)
    got = []
    bus.subscribe(got.append)
    bus.emit(ev.SYNC_STARTED)
    assert [e.kind for e in got] == [ev.SYNC_STARTED]
