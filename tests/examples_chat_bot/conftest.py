from tests.desktop.harness import bridge, browser, core, idp, no_os_keyring  # noqa: F401
