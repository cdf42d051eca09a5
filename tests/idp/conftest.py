"""In-process IdP fixtures: a fresh app (and database) per test, driven with Starlette's TestClient."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from campusid.idp.app import create_app
from campusid.idp.settings import load_settings
from tests.idp.helpers import SyncStore, active_client, make_user, run

ISSUER = "http://127.0.0.1:8000"
NATIVE_REDIRECT = "http://127.0.0.1/callback"
WEB_REDIRECT = "https://rp.example.edu/callback"


class IdP:
    """One app with a student, a developer, an admin, a native and a web client."""

    def __init__(self, env: dict) -> None:
        self.settings = load_settings(env)
        self.app = create_app(self.settings)
        self.ctx = self.app.state.ctx
        self.store = self.ctx.store
        self.db = SyncStore(self.store)  # the store's methods, called synchronously
        self.apps = SyncStore(self.store, self.ctx.apps)  # the review workflow's, likewise
        run(self.store, self.ctx.keys.load())  # as the lifespan does: the keys are in memory
        self.issuer = self.settings.issuer.canonical
        self.student = make_user(self.store, "alice", student_number="2024001", name="Alice Zhang")
        self.native_id, _ = active_client(
            self.store,
            client_type="native",
            redirect_uris=[NATIVE_REDIRECT],
            scopes=["openid", "profile", "offline_access", "grades.read"],
            client_id="native-app",
        )
        self.web_id, self.web_secret = active_client(
            self.store,
            client_type="web",
            redirect_uris=[WEB_REDIRECT],
            scopes=["openid", "profile", "email"],
            client_id="web-app",
        )

    def client(self, **kw) -> TestClient:
        return TestClient(self.app, base_url=self.issuer, follow_redirects=False, **kw)


@pytest.fixture
def idp_settings() -> dict[str, str]:
    """What this test's IdP is set to beyond the suite's environment (CAMPUSID_* variables): nothing,
    unless a module or a conftest overrides this fixture (the second-factor policy, an issuer...)."""
    return {}


@pytest.fixture
def idp(idp_env, idp_settings) -> IdP:
    env = {**idp_env, "CAMPUSID_ISSUER": ISSUER, **idp_settings}
    instance = IdP(env)
    yield instance
    instance.store.close()


@pytest.fixture
def browser(idp):
    with idp.client() as c:
        yield c


class Console(IdP):
    """The portal, console and API tests' IdP: a second developer and a second admin as well."""

    def __init__(self, env: dict) -> None:
        super().__init__(env)  # alice (student), dev (developer), admin, two active clients
        make_user(self.store, "dev2", role="developer")
        make_user(self.store, "admin2", role="admin")


@pytest.fixture
def console(idp_env) -> Console:
    instance = Console({**idp_env, "CAMPUSID_ISSUER": ISSUER})
    yield instance
    instance.store.close()
