"""Discovery (OpenID Connect Discovery 1.0 section 3) and the JWKS (public keys only, kid and alg, cache)."""


def test_discovery_document(idp, browser):
    r = browser.get("/.well-known/openid-configuration", headers={"Host": "evil.example"})
    assert r.status_code == 200
    doc = r.json()
    assert doc["issuer"] == idp.issuer  # never derived from Host
    for key, path in [
        ("authorization_endpoint", "/oauth/authorize"),
        ("token_endpoint", "/oauth/token"),
        ("jwks_uri", "/oauth/jwks"),
        ("userinfo_endpoint", "/oauth/userinfo"),
        ("revocation_endpoint", "/oauth/revoke"),
        ("introspection_endpoint", "/oauth/introspect"),
    ]:
        assert doc[key] == idp.issuer + path
    assert doc["response_types_supported"] == ["code"]
    assert doc["subject_types_supported"] == ["pairwise"]
    assert doc["id_token_signing_alg_values_supported"][0] == "RS256"
    assert doc["code_challenge_methods_supported"] == ["S256"]
    assert doc["token_endpoint_auth_methods_supported"] == ["client_secret_basic", "none"]
    assert doc["authorization_response_iss_parameter_supported"] is True
    assert r.headers["access-control-allow-origin"] == "*"


def test_jwks_publishes_public_keys_only(browser):
    r = browser.get("/oauth/jwks")
    assert r.status_code == 200
    assert "max-age" in r.headers["cache-control"]
    keys = r.json()["keys"]
    assert {k["alg"] for k in keys} == {"RS256", "ES256"}
    for key in keys:
        assert key["kid"]
        assert not {"d", "p", "q", "dp", "dq", "qi"} & set(key), "private material in the JWKS"
    rsa = next(k for k in keys if k["alg"] == "RS256")
    import base64

    modulus = base64.urlsafe_b64decode(rsa["n"] + "==")
    assert len(modulus) * 8 >= 2048
