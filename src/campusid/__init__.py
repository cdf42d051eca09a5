"""campusid: a university OpenID Provider, its relying-party library and a desktop app."""

__version__ = "0.1.0"
