"""My grades: an example server-side web client (a confidential OpenID Connect relying party).

The client secret lives only in this server's configuration; the authorization code is exchanged
on this server with client_secret_basic (RFC 6749 section 2.3.1); the browser never sees a token.
"""

from .app import Settings, create_app, main

__all__ = ["Settings", "create_app", "main"]
