"""The campusid desktop app: a native OpenID client with a local automation bridge.

``core`` holds the session, token storage, grade sync and cache (no GUI, no HTTP server);
``bridge`` is the HTTP face on 127.0.0.1 for scripts and bots; ``gui`` (a later issue) is the
window. Both faces sit over the same :class:`campusid.desktop.core.DesktopCore`.
"""
