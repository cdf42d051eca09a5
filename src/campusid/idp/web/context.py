"""Everything a request handler needs, wired once per app by `create_app(settings)`."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, select_autoescape

from campusid.idp.apps import AppService
from campusid.idp.backchannel import BackchannelSender
from campusid.idp.crypto import derive_key
from campusid.idp.directory import Directory
from campusid.idp.events import Events
from campusid.idp.keys import KeyManager
from campusid.idp.metrics import Figures
from campusid.idp.passwords import Passwords
from campusid.idp.protocol.access_tokens import AccessTokenValidator
from campusid.idp.protocol.device import UserCodeDigests
from campusid.idp.protocol.logout import LogoutTokens
from campusid.idp.protocol.pairwise import PairwiseSubjects
from campusid.idp.protocol.tokens import TokenMinter
from campusid.idp.ratelimit import Limiter
from campusid.idp.second_factors import SecondFactors
from campusid.idp.settings import Settings
from campusid.idp.store import Store

TEMPLATES = Path(__file__).parent / "templates"


@dataclass
class Context:
    settings: Settings
    store: Store
    keys: KeyManager
    minter: TokenMinter
    pairwise: PairwiseSubjects
    passwords: Passwords
    apps: AppService
    templates: Environment
    csrf_key: bytes
    validator: AccessTokenValidator
    events: Events
    user_codes: UserCodeDigests
    factors: SecondFactors
    limiter: Limiter | None = None
    figures: Figures = field(default_factory=lambda: Figures(False))  # on when /metrics is (idp/metrics.py)
    directory: Directory | None = None  # CAMPUSID_LDAP_URL set: sign-in against LDAP / AD
    backchannel: BackchannelSender | None = None  # sends the logout notices (back-channel logout)
    # The time the device authorization grant reads (its codes' lifetimes and polling pace), so
    # tests can move it instead of waiting.
    clock: Callable[[], float] = time.time
    extra: dict = field(default_factory=dict)

    @property
    def issuer(self) -> str:
        return self.settings.issuer.canonical

    def url(self, path: str) -> str:
        """Absolute URL of one of our routes (always from the configured issuer, never Host)."""
        return self.settings.issuer.canonical + path

    def path(self, path: str) -> str:
        """Path of one of our routes, for links and cookies."""
        return self.settings.issuer.path + path


def build_context(settings: Settings, store: Store) -> Context:
    # The keys are read by the app's lifespan (or on first use, for a client without lifespan).
    keys = KeyManager(store, settings.secret_key, settings.jwks_max_age, settings.max_token_lifetime)
    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES)),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
        auto_reload=False,  # the templates ship with the package: no stat() of each file per page
    )
    pairwise = PairwiseSubjects(settings.secret_key)
    figures = Figures.for_token(settings.metrics_token)
    events = Events(store, figures=figures)
    return Context(
        settings=settings,
        store=store,
        keys=keys,
        minter=TokenMinter(keys, settings.issuer.canonical, settings.id_token_ttl, settings.access_token_ttl),
        pairwise=pairwise,
        passwords=Passwords(settings.argon2_time_cost, settings.argon2_memory_cost, settings.argon2_parallelism),
        apps=AppService(store),
        templates=env,
        csrf_key=derive_key(settings.secret_key, "campusid/csrf/v1"),
        validator=AccessTokenValidator(keys, store, settings.issuer.canonical),
        events=events,
        user_codes=UserCodeDigests(settings.secret_key),
        factors=SecondFactors(store, settings.secret_key, "campusid " + settings.issuer.display),
        limiter=Limiter.from_settings(settings),
        figures=figures,
        directory=Directory(settings.directory) if settings.directory is not None else None,
        backchannel=BackchannelSender(store, LogoutTokens(keys, settings.issuer.canonical), pairwise, events),
    )
