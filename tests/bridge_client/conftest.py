from tests.desktop.harness import bridge, browser, core, idp, no_os_keyring, shared_bridge  # noqa: F401
