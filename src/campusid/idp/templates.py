"""The pages' templates, one Jinja2 environment per language we speak.

Each environment has Jinja2's i18n extension with that language's catalogue installed (newstyle:
`{{ _("Signed in as %(name)s", name=user.name) }}` and `{% trans %}` escape their values), so a
template marks its text and never chooses a language. What a handler hands a template as a marked
Message (campusid.i18n.N_) is translated where it is printed (`finalize`). The globals every page
may use: `lang_tag` (`<html lang>`), `when` (a moment as the language writes it) and the brand.
"""

from __future__ import annotations

from pathlib import Path

from jinja2 import Environment, FileSystemLoader, Template, select_autoescape

from campusid import i18n
from campusid.idp.brand import BrandSettings

TEMPLATES = Path(__file__).parent / "web" / "templates"


def environment(locale: str, brand: BrandSettings, loader: FileSystemLoader | None = None) -> Environment:
    """The templates in `locale`, with `brand` (the university's name in that language)."""
    tr = i18n.translator(locale)
    env = Environment(
        loader=loader or FileSystemLoader(str(TEMPLATES)),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
        auto_reload=False,  # the templates ship with the package: no stat() of each file per page
        extensions=["jinja2.ext.i18n"],
        finalize=tr.text,
    )
    env.policies["ext.i18n.trimmed"] = True  # a {% trans %} block's line breaks are not the message's
    env.install_gettext_translations(tr.catalogue, newstyle=True)
    env.globals.update(
        lang_tag=tr.tag,
        when=tr.datetime,
        brand_name=brand.name_in(tr.locale),
        brand_logo=brand.logo is not None,
    )
    return env


class PageTemplates:
    """The templates of every language, each environment made on first use."""

    def __init__(self, brand: BrandSettings) -> None:
        self._brand = brand
        self._loader = FileSystemLoader(str(TEMPLATES))
        self._envs: dict[str, Environment] = {}

    def env(self, locale: str) -> Environment:
        env = self._envs.get(locale)
        if env is None:
            env = self._envs[locale] = environment(locale, self._brand, self._loader)
        return env

    def get_template(self, name: str, locale: str = i18n.DEFAULT_LOCALE) -> Template:
        return self.env(locale).get_template(name)
