"""CAS apps through the one review (docs/cas.md): `apps create --type cas --service URL…`,
`apps show` with `services` and `grant_types`, `apps edit --service`, `apps approve --grant-type
cas_proxy`, a revision of an active app's services; refusals say what is wrong."""

from __future__ import annotations

import json

from tests.conftest import add_users, run_cli

PASSWORD = "correct horse battery staple"


def test_a_cas_app_from_create_to_active_and_revised(idp_env):
    add_users(idp_env, PASSWORD, ("dev", "developer"), ("admin", "admin"))
    created = json.loads(
        run_cli(
            idp_env,
            "apps", "create", "--name", "Library", "--type", "cas",
            "--service", "https://Library.example.edu:443/opac", "--service", "https://library.example.edu/opac",
            "--scope", "profile", "--scope", "email", "--grant-type", "cas_proxy",
            "--owner", "dev", "--client-id", "library", "--json",
        ).stdout
    )  # fmt: skip
    assert created["type"] == "cas" and created["state"] == "draft"
    assert created["services"] == ["https://library.example.edu/opac"] and "client_secret" not in created
    assert created["grant_types"] == ["cas_proxy"] and created["redirect_uris"] == []
    edited = json.loads(
        run_cli(idp_env, "apps", "edit", "library", "--service", "https://library.example.edu/", "--json").stdout
    )
    assert edited["services"] == ["https://library.example.edu/"]
    run_cli(idp_env, "apps", "submit", "library")
    approved = json.loads(
        run_cli(idp_env, "apps", "approve", "library", "--by", "admin", "--grant-type", "cas_proxy", "--json").stdout
    )
    assert approved["granted_grant_types"] == ["cas_proxy"] and approved["state"] == "approved"
    run_cli(idp_env, "apps", "activate", "library")
    revised = json.loads(
        run_cli(idp_env, "apps", "edit", "library", "--service", "https://opac.example.edu/", "--json").stdout
    )
    assert revised["services"] == ["https://library.example.edu/"]  # the active one serves meanwhile
    assert revised["revision"]["services"] == ["https://opac.example.edu/"]
    applied = json.loads(run_cli(idp_env, "apps", "approve", "library", "--by", "admin", "--json").stdout)
    assert applied["services"] == ["https://opac.example.edu/"] and applied["granted_grant_types"] == ["cas_proxy"]


def test_refusals_say_what_is_wrong(idp_env):
    add_users(idp_env, PASSWORD, ("dev", "developer"))

    def refused(*args: str) -> str:
        r = run_cli(idp_env, "apps", "create", "--name", "X", "--owner", "dev", *args, check=False)
        assert r.returncode != 0
        return r.stderr

    assert "at least one service" in refused("--type", "cas")
    assert "https is required" in refused("--type", "cas", "--service", "http://app.example.edu/")
    assert "user information" in refused("--type", "cas", "--service", "https://u@app.example.edu/")
    assert "fragment" in refused("--type", "cas", "--service", "https://app.example.edu/#x")
    assert "'.' or '..'" in refused("--type", "cas", "--service", "https://app.example.edu/a/%2E%2E/b")
    assert "no redirect uris" in refused(
        "--type", "cas", "--service", "https://a.example.edu/", "--redirect-uri", "https://a.example.edu/cb"
    )
    assert "no services" in refused(
        "--type", "web", "--redirect-uri", "https://a.example.edu/cb", "--service", "https://a.example.edu/"
    )
    assert "grades.read" in refused("--type", "cas", "--service", "https://a.example.edu/", "--scope", "grades.read")
    assert "unknown grant type" in refused(
        "--type", "cas", "--service", "https://a.example.edu/", "--grant-type", "device_code"
    )
