"""The fuzzers' in-process IdP (tests/idp/conftest.py)."""

from tests.idp.conftest import Console, console, idp  # noqa: F401 - the fixtures
