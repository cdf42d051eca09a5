"""The bridge's fixtures (tests/desktop/harness.py): a fake IdP, the real core, the bridge on a free port."""

from tests.desktop.harness import bridge, browser, core, idp, no_os_keyring, shared_bridge  # noqa: F401
