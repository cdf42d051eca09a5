"""The CLI prints what it is given: an error, a name or a URL is never read as rich markup (the
console took "[directory]" in "pip install 'campusid[directory]'" for a tag and dropped it, so an
operator was told the wrong fix), and an error stays on one line whatever the terminal's width."""

from __future__ import annotations

import json

import pytest
import typer

from campusid.cli import common
from tests.conftest import add_users, run_cli

BRACKETS = "pip install 'campusid[directory]' or [bold]not bold[/] and a trailing backslash \\"


def test_fail_prints_brackets_and_backslashes_literally(capsys):
    with pytest.raises(typer.Exit) as exit:
        common.fail(BRACKETS, 2)
    assert exit.value.exit_code == 2
    assert capsys.readouterr().err == f"error: {BRACKETS}\n"


def test_fail_keeps_a_long_error_on_one_line(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "40")
    message = "a message far longer than the terminal: " + "x" * 30 + " [directory]"
    with pytest.raises(typer.Exit):
        common.fail(message)
    assert capsys.readouterr().err == f"error: {message}\n"


def test_fail_with_json_prints_the_message_as_it_is(capsys):
    with pytest.raises(typer.Exit):
        common.fail(BRACKETS, 1, as_json=True)
    assert json.loads(capsys.readouterr().err) == {"error": BRACKETS}


def _no_ldap(tmp_path, how: str) -> str:
    """A directory for PYTHONPATH that makes python-ldap unusable in the command's process: not
    installed (sys.modules["ldap"] = None, so find_spec and import both see nothing), or installed
    but broken (a package named ldap whose import fails, as with a missing libldap)."""
    shim = tmp_path / "shim"
    shim.mkdir()
    if how == "missing":
        (shim / "sitecustomize.py").write_text("import sys\nsys.modules['ldap'] = None\n")
    else:
        (shim / "ldap").mkdir()
        (shim / "ldap" / "__init__.py").write_text("raise ImportError('libldap.so.2: cannot open shared object')\n")
    return str(shim)


@pytest.mark.parametrize("how", ["missing", "broken"])
def test_directory_check_without_python_ldap_names_the_extra_to_install(idp_env, tmp_path, how):
    env = {
        **idp_env,
        "PYTHONPATH": _no_ldap(tmp_path, how),
        "CAMPUSID_LDAP_URL": "ldap://127.0.0.1:9",
        "CAMPUSID_LDAP_USER_BASE": "ou=people,dc=example,dc=edu",
    }
    proc = run_cli(env, "directory", "check", "x", check=False)
    assert proc.returncode == 2
    (line,) = proc.stderr.splitlines()  # one line, not folded at the terminal's width
    assert line.startswith("error: CAMPUSID_LDAP_URL is set but python-ldap is not installed: ")
    assert "pip install 'campusid[directory]' (" in line
    assert "Traceback" not in proc.stderr


def test_names_with_brackets_are_printed_as_they_are(idp_env):
    name = "[bold]Bob[/] \\"
    added = run_cli(idp_env, "users", "add", "b[ob]", "--name", name, "--password-stdin", stdin="a-long-password\n")
    assert added.stdout == "added student b[ob]\n"
    taken = run_cli(
        idp_env, "users", "add", "b[ob]", "--name", "x", "--password-stdin", stdin="a-long-password\n", check=False
    )
    assert taken.returncode == 1 and taken.stderr == "error: a user named 'b[ob]' exists already\n"
    listed = run_cli(idp_env, "users", "list").stdout
    assert "│ b[ob]    │ [bold]Bob[/] \\ │" in listed
    disabled = run_cli(idp_env, "users", "disable", "b[ob]", "--by", "[admin]", check=False)
    assert disabled.stderr == "error: --by must name an active admin; '[admin]' is not one\n"


def test_an_app_and_its_owner_are_printed_as_they_are(idp_env):
    add_users(idp_env, "a-long-password", ("dev", "developer"))
    args = ["apps", "create", "--name", "[red]Grades[/]", "--type", "native", "--redirect-uri", "http://127.0.0.1/cb"]
    created = run_cli(idp_env, *args, "--owner", "dev", "--client-id", "grades")
    assert created.stdout.splitlines()[0] == "[red]Grades[/]  client_id=grades  type=native  state=draft"
    assert "│ grades    │ [red]Grades[/] │" in run_cli(idp_env, "apps", "list").stdout
    unknown = run_cli(idp_env, *args, "--owner", "[dev]", check=False)
    assert unknown.returncode == 1 and "'[dev]'" in unknown.stderr
