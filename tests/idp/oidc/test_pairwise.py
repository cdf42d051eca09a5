"""Pairwise subjects (OIDC Core 8.1)."""

from joserfc import jwt

from tests.idp.helpers import active_client, auth_params, login_through_pages, run


def _sub(idp, browser, client_id, secret, redirect_uri):
    flow = auth_params(client_id, redirect_uri)
    cb = login_through_pages(browser, idp.issuer, flow, "alice")
    data = {
        "grant_type": "authorization_code",
        "code": cb["code"],
        "redirect_uri": redirect_uri,
        "code_verifier": flow.verifier,
    }
    if secret:
        r = browser.post("/oauth/token", data=data, auth=(client_id, secret))
    else:
        r = browser.post("/oauth/token", data={**data, "client_id": client_id})
    assert r.status_code == 200, r.text
    claims = jwt.decode(r.json()["id_token"], run(idp.store, idp.ctx.keys.verification_keys())).claims
    info = browser.get("/oauth/userinfo", headers={"Authorization": f"Bearer {r.json()['access_token']}"}).json()
    assert info["sub"] == claims["sub"]  # userinfo and the ID token agree
    return claims["sub"]


def test_different_sectors_get_different_subs_and_one_client_the_same(idp, browser):
    a = _sub(idp, browser, idp.web_id, idp.web_secret, "https://rp.example.edu/callback")
    a_again = _sub(idp, browser, idp.web_id, idp.web_secret, "https://rp.example.edu/callback")
    other, other_secret = active_client(idp.store, client_type="web", redirect_uris=["https://other.example.org/cb"])
    b = _sub(idp, browser, other, other_secret, "https://other.example.org/cb")
    native = _sub(idp, browser, idp.native_id, None, "http://127.0.0.1:4000/callback")
    assert a == a_again
    assert len({a, b, native}) == 3
    for sub in (a, b, native):
        assert "2024001" not in sub and len(sub) == 43


def test_same_sector_shares_a_sub(idp, browser):
    one, s1 = active_client(idp.store, client_type="web", redirect_uris=["https://grades.example.edu/a"])
    two, s2 = active_client(idp.store, client_type="web", redirect_uris=["https://grades.example.edu/b"])
    assert _sub(idp, browser, one, s1, "https://grades.example.edu/a") == _sub(
        idp, browser, two, s2, "https://grades.example.edu/b"
    )


def test_sub_is_hmac_of_sector_and_user_not_the_student_number(idp):
    pairwise = idp.ctx.pairwise
    user_id = idp.student.id
    assert pairwise.sub("a.example", user_id) != pairwise.sub("b.example", user_id)
    assert pairwise.sub("a.example", user_id) == pairwise.sub("a.example", user_id)
    assert idp.student.student_number not in pairwise.sub("a.example", user_id)


def test_multi_host_web_client_needs_a_sector_identifier_uri(idp):
    import pytest

    from campusid.idp.apps import ValidationFailed

    with pytest.raises(ValidationFailed, match="sector_identifier_uri"):
        run(
            idp.store,
            idp.ctx.apps.create(
                name="x",
                app_type="web",
                redirect_uris=["https://a.example/cb", "https://b.example/cb"],
                scopes=["openid"],
                owner="dev",
            ),
        )
    data, _ = run(
        idp.store,
        idp.ctx.apps.create(
            name="x",
            app_type="web",
            redirect_uris=["https://a.example/cb", "https://b.example/cb"],
            scopes=["openid"],
            owner="dev",
            sector_identifier_uri="https://sector.example/ids.json",
        ),
    )
    assert data["sector_identifier_uri"] == "https://sector.example/ids.json"
