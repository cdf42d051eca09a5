"""The records API: a resource server for grades, protected by the IdP's access tokens (DESIGN 3.7)."""
