"""A fresh in-process IdP per test with developers, admins and a student (tests/idp/conftest.py)."""

from tests.idp.conftest import Console, console  # noqa: F401 - the fixture, shared with admin/api/portal
