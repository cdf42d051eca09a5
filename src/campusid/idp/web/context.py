"""Everything a request handler needs, wired once per app by `create_app(settings)`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from jinja2 import Environment, FileSystemLoader, select_autoescape

from campusid.idp.apps import AppService
from campusid.idp.crypto import derive_key
from campusid.idp.keys import KeyManager
from campusid.idp.passwords import Passwords
from campusid.idp.protocol.pairwise import PairwiseSubjects
from campusid.idp.protocol.tokens import TokenMinter
from campusid.idp.ratelimit import Limiter
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
    limiter: Limiter | None = None
    extra: dict = field(default_factory=dict)

    _db_slots: anyio.CapacityLimiter | None = None

    async def run_db(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run a synchronous, database-bound step that is off the hot path (the hot statements
        are async: `store.hot`).

        SQLite answers in-process within microseconds, so it runs inline. A PostgreSQL round trip
        would stall the event loop, so on PostgreSQL the step runs on a worker thread (psycopg
        releases the GIL while it waits) and other requests use the CPU meanwhile.
        """
        if self.store.engine.dialect.name != "postgresql":
            return fn(*args)
        if self._db_slots is None:
            self._db_slots = anyio.CapacityLimiter(16)
        return await anyio.to_thread.run_sync(fn, *args, limiter=self._db_slots)

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
    keys = KeyManager(store, settings.secret_key, settings.jwks_max_age, settings.max_token_lifetime)
    keys.ensure()
    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES)),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
        auto_reload=False,  # the templates ship with the package: no stat() of each file per page
    )
    return Context(
        settings=settings,
        store=store,
        keys=keys,
        minter=TokenMinter(keys, settings.issuer.canonical, settings.id_token_ttl, settings.access_token_ttl),
        pairwise=PairwiseSubjects(settings.secret_key),
        passwords=Passwords(settings.argon2_time_cost, settings.argon2_memory_cost, settings.argon2_parallelism),
        apps=AppService(store),
        templates=env,
        csrf_key=derive_key(settings.secret_key, "campusid/csrf/v1"),
        limiter=Limiter.from_settings(settings),
    )
