"""Everything a request handler needs, wired once per app by `create_app(settings)`."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from campusid.idp.apps import AppService
from campusid.idp.apps.registrations import Registrations
from campusid.idp.crypto import derive_key
from campusid.idp.directory import Directory
from campusid.idp.events import Events
from campusid.idp.keys import KeyManager
from campusid.idp.metrics import Figures
from campusid.idp.passwords import Passwords
from campusid.idp.ratelimit import Limiter
from campusid.idp.release import PairwiseSubjects
from campusid.idp.second_factors import SecondFactors
from campusid.idp.settings import Settings
from campusid.idp.signin.continuations import Continuations
from campusid.idp.signin.sessions import LogoutNotifiers
from campusid.idp.store import Store
from campusid.idp.templates import PageTemplates


@dataclass
class Context:
    settings: Settings
    store: Store
    keys: KeyManager
    pairwise: PairwiseSubjects
    passwords: Passwords
    apps: AppService
    templates: PageTemplates
    csrf_key: bytes
    events: Events
    factors: SecondFactors
    limiter: Limiter | None = None
    figures: Figures = field(default_factory=lambda: Figures(False))  # on when /metrics is (idp/metrics.py)
    directory: Directory | None = None  # CAMPUSID_LDAP_URL set: sign-in against LDAP / AD
    # What each kind of pending sign-in does once the person is signed in: the faces register theirs.
    continuations: Continuations = field(default_factory=Continuations)
    # Told when sessions end, by every way they end: each face registers its notifier.
    logout: LogoutNotifiers = field(default_factory=LogoutNotifiers)
    # Each protocol face's own services, by the face's name (installed by the face: idp/oidc/services.py).
    faces: dict = field(default_factory=dict)
    # The time the device authorization grant reads (its codes' lifetimes and polling pace), so
    # tests can move it instead of waiting.
    clock: Callable[[], float] = time.time

    @property
    def issuer(self) -> str:
        return self.settings.issuer.canonical

    def url(self, path: str) -> str:
        """Absolute URL of one of our routes (always from the configured issuer, never Host)."""
        return self.settings.issuer.canonical + path

    def path(self, path: str) -> str:
        """Path of one of our routes, for links and cookies."""
        return self.settings.issuer.path + path


def build_context(settings: Settings, store: Store, registrations: Registrations | None = None) -> Context:
    """The context of one app; `registrations`: which face checks each app type's registration."""
    # The keys are read by the app's lifespan (or on first use, for a client without lifespan).
    keys = KeyManager(store, settings.secret_key, settings.jwks_max_age, settings.max_token_lifetime)
    figures = Figures.for_token(settings.metrics_token)
    events = Events(store, figures=figures)
    return Context(
        settings=settings,
        store=store,
        keys=keys,
        pairwise=PairwiseSubjects(settings.secret_key),
        passwords=Passwords(settings.argon2_time_cost, settings.argon2_memory_cost, settings.argon2_parallelism),
        apps=AppService(store, events, registrations),
        templates=PageTemplates(settings.brand),
        csrf_key=derive_key(settings.secret_key, "campusid/csrf/v1"),
        events=events,
        factors=SecondFactors(store, settings.secret_key, "campusid " + settings.issuer.display),
        limiter=Limiter.from_settings(settings),
        figures=figures,
        directory=Directory(settings.directory) if settings.directory is not None else None,
    )
