"""The university's face on every page (docs/configuration.md, "Branding"): its name, per language,
its logo and its colour, the way a campus themes its sign-in page. Read and checked at start, so a
typo stops `campusid serve` with a message rather than showing a broken page.

    CAMPUSID_BRAND_NAME            the university's name, shown in every language without one of its own
    CAMPUSID_BRAND_NAME_<LOCALE>   the name in one language: CAMPUSID_BRAND_NAME_ZH_CN, _EN, …
    CAMPUSID_BRAND_LOGO            a PNG, JPEG, GIF, WebP or SVG file, served by the IdP itself
    CAMPUSID_BRAND_COLOR           the accent colour, #rgb or #rrggbb

Unset, the pages carry no name but the service's ("统一身份认证", "Sign-in service"), no logo, and the
default blue. The logo is read once into memory and served from our own origin (/brand/logo): no
third-party resource, the pages' CSP unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_COLOR = "#0b5cad"
MAX_LOGO = 512 * 1024
MAX_NAME = 100
LOGO_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".svg": "image/svg+xml",
}
_COLOR = re.compile(r"#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})")


class BrandSettingsError(ValueError):
    """A CAMPUSID_BRAND_* value cannot be used; the message says which and why."""


@dataclass(frozen=True)
class Logo:
    content: bytes
    media_type: str


@dataclass(frozen=True)
class BrandSettings:
    name: str = ""  # every language without a name of its own
    names: dict[str, str] = field(default_factory=dict)  # catalogue name (zh_CN) -> the name in it
    logo: Logo | None = None
    color: str = DEFAULT_COLOR

    def name_in(self, locale: str) -> str:
        """The university's name for a page in `locale` ("" when none is configured)."""
        return self.names.get(locale) or self.name


def _name(variable: str, value: str) -> str:
    value = value.strip()
    if len(value) > MAX_NAME or not value.isprintable():
        raise BrandSettingsError(f"{variable} must be at most {MAX_NAME} printable characters")
    return value


def _logo(value: str) -> Logo:
    path = Path(value).expanduser()
    media_type = LOGO_TYPES.get(path.suffix.lower())
    if media_type is None:
        raise BrandSettingsError(
            f"CAMPUSID_BRAND_LOGO must name a {', '.join(sorted(LOGO_TYPES))} file, not {path.name!r}"
        )
    try:
        content = path.read_bytes()
    except OSError as exc:
        raise BrandSettingsError(f"CAMPUSID_BRAND_LOGO {str(path)!r} cannot be read: {exc.strerror}") from None
    if not content or len(content) > MAX_LOGO:
        raise BrandSettingsError(f"CAMPUSID_BRAND_LOGO must be a file of 1 byte to {MAX_LOGO // 1024} KiB")
    return Logo(content, media_type)


def load_brand_settings(get: Callable[[str], str | None], locales: tuple[str, ...]) -> BrandSettings:
    """The brand from `get` (a setting's value by its key, as settings.py reads them), with a name
    per catalogue of `locales` where one is set."""
    names = {}
    for locale in locales:
        value = get(f"brand_name_{locale.lower()}")
        if value:
            names[locale] = _name(f"CAMPUSID_BRAND_NAME_{locale.upper()}", str(value))
    color = str(get("brand_color") or DEFAULT_COLOR).strip()
    if not _COLOR.fullmatch(color):
        raise BrandSettingsError(f"CAMPUSID_BRAND_COLOR must be a colour like #0b5cad, not {color[:40]!r}")
    logo = get("brand_logo")
    return BrandSettings(
        name=_name("CAMPUSID_BRAND_NAME", str(get("brand_name") or "")),
        names=names,
        logo=_logo(str(logo)) if logo else None,
        color=color.lower(),
    )
