"""The OpenID Provider: settings, protocol rules, storage and the ASGI app."""
