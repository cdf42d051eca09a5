from tests.idp.conftest import NATIVE_REDIRECT
from tests.idp.helpers import auth_params, login_through_pages


def test_native_flow_in_process(idp, browser):
    flow = auth_params(idp.native_id, "http://127.0.0.1:5555/callback", scope="openid profile grades.read")
    cb = login_through_pages(browser, idp.issuer, flow, "alice")
    assert "code" in cb, cb
    assert cb["state"] == flow.params["state"]
    assert cb["iss"] == idp.issuer
    r = browser.post(
        "/oauth/token",
        data={
            "grant_type": "authorization_code",
            "code": cb["code"],
            "redirect_uri": "http://127.0.0.1:5555/callback",
            "client_id": idp.native_id,
            "code_verifier": flow.verifier,
        },
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert {"access_token", "id_token", "refresh_token"} <= set(body)
    r = browser.get("/oauth/userinfo", headers={"Authorization": f"Bearer {body['access_token']}"})
    assert r.status_code == 200, r.text
    assert r.json()["name"] == "Alice Zhang"
    assert NATIVE_REDIRECT
