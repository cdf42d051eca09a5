"""What every management command works with: the two consoles, `fail` and `emit`, the settings
and the store (`Services`), the options shared by several commands, and the signing keys loaded."""

from __future__ import annotations

import asyncio
import functools
import json
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer
from rich.console import Console
from rich.text import Text

from campusid.idp.issuer import IssuerError
from campusid.idp.settings import Settings, SettingsError, load_settings

if TYPE_CHECKING:
    from campusid.idp.passwords import Passwords

out = Console()
err = Console(stderr=True)
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]
AdminOpt = Annotated[str, typer.Option(help="The admin who makes the change.")]
T = TypeVar("T")


def say(*parts: str | tuple[str, str], console: Console = out, highlight: bool = True, soft_wrap: bool = False):
    """Print one line made of literal pieces, a (text, style) piece styled. Never read as markup:
    the pieces carry values (names, URLs, an exception's text), and rich would take "[directory]"
    or "[dev]" for a tag and drop it, or a trailing backslash for an escape. Highlighting (numbers,
    quoted strings on a terminal) is what a plain string gets."""
    text = Text.assemble(*parts)
    console.print(console.highlighter(text) if highlight else text, soft_wrap=soft_wrap)


def print_error(message: str, label: str = "error:") -> None:
    """An error on stderr exactly as it is, on one line however wide the terminal (soft_wrap):
    folded at 80 columns, "pip install 'campusid[directory]'" was cut in two."""
    say((label, "bold red"), " ", message, console=err, highlight=False, soft_wrap=True)


def fail(message: str, code: int = 1, as_json: bool = False):
    """End the command: `message` on stderr (as {"error": message} with --json), exit status `code`."""
    if as_json:
        print(json.dumps({"error": message}), file=sys.stderr)
    else:
        print_error(message)
    raise typer.Exit(code)


def settings(port: int | None = None) -> Settings:
    try:
        return load_settings(port=port)
    except (SettingsError, IssuerError) as exc:
        fail(str(exc), 2)


def open_store_or_fail(cfg: Settings, as_json: bool = False):
    from campusid.idp.store import StoreError, open_store

    try:
        return open_store(cfg.database_url, cfg.data_dir)
    except StoreError as exc:
        fail(str(exc), 2, as_json)


class Services:
    """What a management command works with: settings, the store, passwords, the review workflow."""

    def __init__(self, port: int | None = None, as_json: bool = False) -> None:
        self.settings = settings(port)
        self.store = open_store_or_fail(self.settings, as_json)
        self.as_json = as_json

    @functools.cached_property
    def apps(self):
        """The review workflow, each app's registration checked by its face (idp/faces.py)."""
        from campusid.idp.faces import app_service

        return app_service(self.store)

    @functools.cached_property
    def passwords(self) -> Passwords:
        """Made by the commands that hash or check a password, not by every command: making one
        hashes its timing dummy (an argon2id hash, 19 MiB by default), and in `serve` that
        allocation, freed, raised glibc's dynamic mmap threshold before the app was built, so the
        server kept ~20 MB more heap (bench/README.md)."""
        from campusid.idp.passwords import Passwords

        s = self.settings
        return Passwords(s.argon2_time_cost, s.argon2_memory_cost, s.argon2_parallelism)

    def run(self, action: Callable[[Services], Awaitable[T]]) -> T:
        """Run `action` on the async store (the same way to the database as the server's), then
        close it; a database that cannot be used is a clear error with exit status 2."""
        from campusid.idp.store import StoreError

        async def main() -> T:
            async with self.store:
                return await action(self)

        try:
            return asyncio.run(main())
        except StoreError as exc:
            fail(str(exc), 2, self.as_json)
        finally:
            self.store.close()


def emit(data: dict, as_json: bool, human=None) -> None:
    if as_json:
        print(json.dumps(data, ensure_ascii=False))
    elif human is not None:
        human(data)
    else:
        out.print_json(json.dumps(data, ensure_ascii=False))


async def loaded_keys(svc: Services):
    """The key manager with its keys loaded (created if there are none). A CAMPUSID_SECRET_KEY
    that cannot open them (WrongSecretKey, a StoreError) ends the command with status 2."""
    from campusid.idp.keys import KeyManager

    cfg = svc.settings
    keys = KeyManager(svc.store, cfg.secret_key, cfg.jwks_max_age, cfg.max_token_lifetime)
    await keys.load()
    return keys
