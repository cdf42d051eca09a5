"""The records API: a resource server for grades, protected by the IdP's access tokens (RFC 9068, RFC 6750)."""
