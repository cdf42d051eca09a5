"""The OpenID Connect face: the OAuth 2.0 / OIDC endpoints over the one sign-in core.

`face.install(ctx)` adds the face's services to an app's context and registers what the core calls
back: the notifier that delivers back-channel logout notices when sessions end. Its endpoints
are `authorize`, `token`, `device_authorization`, `device` (the /device pages), `resources`
(discovery, JWKS, userinfo, revocation, introspection) and `logout` (RP-initiated logout);
`rules/` holds one RFC or OpenID rule per unit.
"""
