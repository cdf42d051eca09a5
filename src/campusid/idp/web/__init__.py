"""HTTP faces of the OpenID Provider (Starlette)."""
