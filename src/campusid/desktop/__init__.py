"""The campusid desktop app: a native OpenID client with a local automation bridge.

``core`` holds the session, token storage, grade sync and cache (no GUI, no HTTP server);
``bridge`` is the HTTP face on 127.0.0.1 for scripts and bots; ``gui`` is the window, which also
hosts the bridge. Both faces sit over the same :class:`campusid.desktop.core.DesktopCore`, and
``cli`` (the ``campusid-desktop`` command) starts one of them. Imports go downwards only:
cli, gui, bridge, core, then config and log_setup (checked by ``lint-imports``).
"""
