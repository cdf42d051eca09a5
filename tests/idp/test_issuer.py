"""Canonical issuer (campusid.issuer): IDN to ASCII, refusals with a message that says what to fix."""

import pytest

from campusid.idp.issuer import IssuerError, canonical_issuer
from tests.conftest import run_cli


def test_idn_issuer_becomes_ascii_and_keeps_a_unicode_display():
    issuer = canonical_issuer("https://登录.例子.中国/")
    assert issuer.canonical == "https://xn--w2t382c.xn--fsqu00a.xn--fiqs8s"
    assert issuer.display == "https://登录.例子.中国"


def test_issuer_is_lower_case_without_default_port_or_trailing_slash():
    assert canonical_issuer("HTTPS://Login.Example.EDU:443/idp/").canonical == "https://login.example.edu/idp"
    assert canonical_issuer("http://127.0.0.1:8000").canonical == "http://127.0.0.1:8000"


def test_uts46_mapping_applies():
    # Full-width letters and the German sharp s are mapped per UTS 46 (IDNA 2008 keeps ß).
    assert canonical_issuer("https://ＥＸＡＭＰＬＥ.edu").canonical == "https://example.edu"
    assert canonical_issuer("https://straße.de").canonical == "https://xn--strae-oqa.de"


@pytest.mark.parametrize(
    ("value", "hint"),
    [
        ("https://login.example.edu/?a=b", "query"),
        ("https://login.example.edu/#frag", "fragment"),
        ("http://login.example.edu", "https"),
        ("https://bad_label..example", "host"),
        ("https://-leading.example.edu", "host"),
        ("ftp://login.example.edu", "https"),
        ("https://user@login.example.edu", "user"),
        ("", "empty"),
    ],
)
def test_bad_issuers_are_refused_with_a_reason(value, hint):
    with pytest.raises(IssuerError) as info:
        canonical_issuer(value)
    assert hint in str(info.value)


@pytest.mark.parametrize("host", ["127.0.0.1", "127.5.6.7", "[::1]", "localhost"])
def test_plain_http_is_allowed_on_loopback(host):
    assert canonical_issuer(f"http://{host}:9000").scheme == "http"


def test_cli_refuses_to_start_with_a_bad_issuer(idp_env):
    proc = run_cli({**idp_env, "CAMPUSID_ISSUER": "http://login.example.edu"}, "serve", "--port", "1", check=False)
    assert proc.returncode == 2
    assert "https" in proc.stderr
    assert "Traceback" not in proc.stderr
    proc = run_cli({**idp_env, "CAMPUSID_ISSUER": "https://login.example.edu/?x=1"}, "serve", check=False)
    assert proc.returncode == 2 and "query" in proc.stderr


def test_discovery_and_tokens_use_the_ascii_issuer(idp_env):
    from starlette.testclient import TestClient

    from campusid.idp.app import create_app
    from campusid.idp.settings import load_settings

    settings = load_settings({**idp_env, "CAMPUSID_ISSUER": "https://登录.例子.中国/idp"})
    app = create_app(settings)
    with TestClient(app, base_url="https://xn--w2t382c.xn--fsqu00a.xn--fiqs8s") as c:
        doc = c.get("/idp/.well-known/openid-configuration").json()
        page = c.get("/idp/login", follow_redirects=True).text
    assert doc["issuer"] == "https://xn--w2t382c.xn--fsqu00a.xn--fiqs8s/idp"
    assert doc["token_endpoint"] == doc["issuer"] + "/oauth/token"
    assert all(v.isascii() for v in doc.values() if isinstance(v, str))
    assert "登录.例子.中国" in page  # people see the Unicode form
    app.state.ctx.store.close()
