"""`secondbrain-center` as an operator runs it: a process against a real center, in a pipe
(80 columns). A refusal is one line that names what is wrong and what to do; nothing is
changed when the CLI can tell beforehand that the center would refuse or mislead."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import typer

from center import testing as t
from center.cli import app
from center.config import Settings

Run = Callable[..., subprocess.CompletedProcess[str]]
NODE_URL = t.RESOURCE


@pytest.fixture
def settings(data_dir: Path) -> Settings:
    """SQLite only: what is checked here is the CLI, which the database does not change."""
    return t.settings(data_dir)


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The CLI as a user runs it, output into a pipe, in a fixed time zone."""
    inherited = {
        k: v for k, v in os.environ.items() if not k.startswith(("SECONDBRAIN_", "COLUMNS"))
    }
    return subprocess.run(
        [sys.executable, "-c", "from center.cli import main; main()", *args],
        env={**inherited, "TZ": "UTC", **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def admin(server: str) -> dict[str, str]:
    return {"SECONDBRAIN_CENTER_URL": server, "SECONDBRAIN_CENTER_ADMIN_TOKEN": t.ADMIN_TOKEN}


@pytest.fixture
def node(server: str, admin: dict[str, str]) -> str:
    """A registered node that reports the vaults `team` and `ops`; its credential."""
    added = cli("node", "add", "node-a", "--resource", NODE_URL, "--json", env=admin)
    credential: str = json.loads(added.stdout)["credential"]
    beat = httpx.post(
        f"{server}/v1/nodes/heartbeat",
        json={"vaults": ["ops", "team"]},
        headers={"Authorization": f"Bearer {credential}"},
    )
    assert beat.status_code == 200, beat.text
    return credential


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1, result
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def member(admin: dict[str, str], member_id: str, *args: str) -> dict[str, str]:
    """Add a member; the environment it runs the CLI with (its own token only)."""
    created = cli("member", "add", member_id, *args, "--json", env=admin)
    assert created.returncode == 0, created.stderr
    credential = json.loads(created.stdout)["credential"]
    return {
        "SECONDBRAIN_CENTER_URL": admin["SECONDBRAIN_CENTER_URL"],
        "SECONDBRAIN_CENTER_TOKEN": credential,
    }


# ---------------------------------------------------------------- refusals that name the fix


def test_a_wrong_admin_token_names_the_variable_and_the_url(admin: dict[str, str]) -> None:
    wrong = {**admin, "SECONDBRAIN_CENTER_ADMIN_TOKEN": "not-the-admin-token-" + "x" * 20}
    line = one_line(cli("member", "list", env=wrong))
    url = admin["SECONDBRAIN_CENTER_URL"]
    assert line.startswith(
        f"error (unauthorized): the center at {url} refused the token in "
        "SECONDBRAIN_CENTER_ADMIN_TOKEN; set it to the admin token the center runs with"
    )
    assert "ask the operator" not in line
    assert "not-the-admin-token" not in line


def test_an_unreachable_center_names_the_url_and_the_flag() -> None:
    env = {"SECONDBRAIN_CENTER_URL": "http://127.0.0.1:9", "SECONDBRAIN_CENTER_ADMIN_TOKEN": "x"}
    line = one_line(cli("member", "list", env=env))
    assert line == (
        "error (unreachable): no center answers at http://127.0.0.1:9 (connection refused or"
        " host not found); check --url or SECONDBRAIN_CENTER_URL, or start the center"
    )
    assert "ConnectError" not in line


def test_a_url_without_a_scheme_says_what_it_needs() -> None:
    env = {"SECONDBRAIN_CENTER_ADMIN_TOKEN": "x"}
    line = one_line(cli("member", "list", "--url", "127.0.0.1:2021", env=env))
    assert line == (
        "error (bad_url): the center URL '127.0.0.1:2021' (--url or SECONDBRAIN_CENTER_URL)"
        " needs http:// or https://, e.g. http://127.0.0.1:2021"
    )


def test_a_member_id_is_checked_before_any_call() -> None:
    env = {"SECONDBRAIN_CENTER_URL": "http://127.0.0.1:9", "SECONDBRAIN_CENTER_ADMIN_TOKEN": "x"}
    for verb in (("member", "set", "a/b", "--role", "reader"), ("member", "remove", "a/b")):
        line = one_line(cli(*verb, env=env))
        assert line == (
            "error (invalid_argument): member id: use 1-64 characters of A-Z, a-z, 0-9, '-' and '_'"
        )
    line = one_line(cli("grant", "revoke", "a/b", env=env))
    assert line == (
        "error (invalid_argument): grant id: not an id the center makes; copy it from `grant list`"
    )


# ---------------------------------------------------------------- refused before changing


def test_member_add_refuses_a_vault_no_node_reports(admin: dict[str, str], node: str) -> None:
    line = one_line(cli("member", "add", "erin", "--vault", "nosuch", env=admin))
    assert line == (
        "error (unknown_vault): no node reports vault 'nosuch'; known vaults: ops, team."
        " Create its folder in a node's data_dir (`secondbrain vault create`): the node"
        " reports it within seconds; or pass --unplaced to give it before a node holds it"
    )
    assert "erin" not in cli("member", "list", env=admin).stdout
    placed = cli("member", "add", "erin", "--vault", "nosuch", "--unplaced", "--json", env=admin)
    assert placed.returncode == 0, placed.stderr
    assert json.loads(placed.stdout)["vaults"] == ["nosuch"]
    kept = cli("member", "set", "erin", "--vault", "later", env=admin)
    assert "no node reports vault 'later'" in one_line(kept)
    assert cli("member", "add", "fred", "--vault", "team", env=admin).returncode == 0


def test_grant_issue_for_a_vault_no_node_reports_lists_the_known_ones(
    admin: dict[str, str], node: str
) -> None:
    line = one_line(cli("grant", "issue", "--vault", "nosuch", env=admin))
    assert line == (
        "error (invalid_argument): vault: no node reports vault 'nosuch'; known vaults: ops, team"
    )


def test_token_issue_refuses_a_resource_no_node_has(admin: dict[str, str], node: str) -> None:
    rita = member(admin, "rita", "--vault", "team")
    for wrong in ("https://evil.example.com/mcp", "http://127.0.0.1:2029/mcp"):
        line = one_line(cli("token", "issue", "--resource", wrong, env=rita))
        assert line == (
            f"error (invalid_target): resource: no registered node has the resource {wrong};"
            f" registered nodes: {NODE_URL}"
        )
    listed = json.loads(cli("token", "list", "--json", env=rita).stdout)["tokens"]
    assert listed == []
    ok = cli("token", "issue", "--resource", NODE_URL, "--json", env=rita)
    assert json.loads(ok.stdout)["audience"] == [NODE_URL]


# ---------------------------------------------------------------- members who manage


def test_a_managing_member_runs_its_verbs_with_its_own_token(
    admin: dict[str, str], node: str
) -> None:
    olga = member(admin, "olga", "--vault", "team", "--role", "admin", "--scope", "rwd")
    rita = member(admin, "rita", "--vault", "team", "--role", "editor", "--scope", "rw")
    issued = cli("grant", "issue", "--vault", "team", "--grantee", "rita", "--json", env=olga)
    assert issued.returncode == 0, issued.stderr
    grant = json.loads(issued.stdout)
    assert grant["issued_by"] == "olga"
    assert grant["id"] in cli("grant", "list", "--json", env=olga).stdout
    asked = cli(
        "request", "create", "--vault", "team", "--reason", "weekly report", "--json", env=rita
    )
    request_id = json.loads(asked.stdout)["id"]
    pending = cli("request", "list", "--state", "pending", "--json", env=olga)
    assert pending.returncode == 0, pending.stderr
    assert [r["id"] for r in json.loads(pending.stdout)["requests"]] == [request_id]
    approved = cli("request", "approve", request_id, "--json", env=olga)
    assert approved.returncode == 0, approved.stderr
    assert json.loads(approved.stdout)["decided_by"] == "olga"
    assert cli("grant", "revoke", grant["id"], env=olga).returncode == 0
    both = {**olga, "SECONDBRAIN_CENTER_ADMIN_TOKEN": t.ADMIN_TOKEN}
    mine = cli("grant", "list", "--as-member", "--json", env=both)
    assert mine.returncode == 0, mine.stderr


# ---------------------------------------------------------------- output people read


def test_times_print_as_iso_8601_and_json_keeps_the_number_beside(
    admin: dict[str, str], node: str
) -> None:
    rita = member(admin, "rita", "--vault", "team")
    minted = json.loads(cli("token", "issue", "--json", env=rita).stdout)
    assert isinstance(minted["expires_at"], int)
    assert minted["expires_at_iso"].endswith("+00:00")
    text = cli("token", "list", env=rita).stdout
    assert minted["expires_at_iso"] in text
    assert str(minted["expires_at"]) not in text
    listed = json.loads(cli("token", "list", "--json", env=rita).stdout)["tokens"][0]
    assert (listed["created"], listed["created_iso"]) == (minted["created"], minted["created_iso"])


def test_a_wide_listing_folds_into_records_instead_of_cutting_ids(
    admin: dict[str, str], node: str
) -> None:
    assert cli("request", "list", env=admin).stdout == "(none)\n"
    long_id = "a-member-with-a-rather-long-identifier-0123456789"
    rita = member(admin, long_id, "--vault", "team", "--email", "someone.long@example.com")
    reason = "the quarterly review needs the ops notes"
    asked = cli("request", "create", "--vault", "team", "--reason", reason, "--json", env=rita)
    assert asked.returncode == 0, asked.stderr
    members = cli("member", "list", env=admin).stdout
    assert f"id: {long_id}" in members.splitlines()
    assert all(len(line) <= 80 for line in members.splitlines())
    requests = cli("request", "list", env=admin).stdout
    assert f"reason: {reason}" in requests.splitlines()
    assert f"requester: {long_id}" in requests.splitlines()
    wide = cli("vaults", env={**admin, "COLUMNS": "200"}).stdout
    assert "│ team │ node-a │" in wide  # a table that fits stays a table


def test_the_help_says_what_each_option_does() -> None:
    added = cli("member", "add", "--help", env={"COLUMNS": "200"}).stdout
    assert "removes it" not in added
    assert "--unplaced" in added
    changed = cli("member", "set", "--help", env={"COLUMNS": "200"}).stdout
    assert '--email "" removes it' in changed


# ---------------------------------------------------------------- the database, checked first


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _center_env(tmp_path: Path, url: str, schema: str | None = None) -> dict[str, str]:
    env = {
        "SECONDBRAIN_CENTER_SECRET": t.SECRET,
        "SECONDBRAIN_CENTER_ADMIN_TOKEN": t.ADMIN_TOKEN,
        "SECONDBRAIN_CENTER_DATA_DIR": str(tmp_path / "center"),
        "SECONDBRAIN_CENTER_DATABASE_URL": url,
        "SECONDBRAIN_CENTER_PORT": str(free_port()),  # bound, then the database is checked
    }
    return {**env, "SECONDBRAIN_CENTER_DATABASE_SCHEMA": schema} if schema else env


def _server_url(postgres: str | None, database: str | None = None) -> str:
    if postgres is None:
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL is not reachable; .ci/run should have started it")
        pytest.skip("PostgreSQL is not reachable; set SECONDBRAIN_TEST_POSTGRES")
    url = postgres.replace("postgresql://", "postgresql+asyncpg://")
    return url if database is None else url.rsplit("/", 1)[0] + "/" + database


@pytest.mark.parametrize("verb", ["validate", "serve"])
def test_a_database_that_does_not_exist_is_one_line_with_the_fix(
    verb: str, tmp_path: Path, postgres: str | None
) -> None:
    url = _server_url(postgres, "nosuchdb")
    line = one_line(cli(verb, env=_center_env(tmp_path, url)))
    host = url.split("@", 1)[1].split("/", 1)[0]
    name, port = host.rsplit(":", 1)
    assert line == (
        f"error (database): database 'nosuchdb' does not exist on {host} (create it: createdb"
        f" -h {name} -p {port} -U postgres nosuchdb)"
    )


@pytest.mark.parametrize("verb", ["validate", "serve"])
def test_a_schema_that_does_not_exist_is_one_line_with_the_fix(
    verb: str, tmp_path: Path, postgres: str | None
) -> None:
    url = _server_url(postgres)
    line = one_line(cli(verb, env=_center_env(tmp_path, url, "nosuchschema")))
    assert line == (
        "error (database): schema 'nosuchschema' does not exist in database"
        f" {url.rsplit('/', 1)[1]!r} (create it: CREATE SCHEMA nosuchschema; or unset"
        " SECONDBRAIN_CENTER_DATABASE_SCHEMA to use the public schema)"
    )


def test_validate_connects_to_a_database_that_works(tmp_path: Path, postgres: str | None) -> None:
    done = cli("validate", "--json", env=_center_env(tmp_path, _server_url(postgres)))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["database_check"] == "connected"


def test_serve_on_a_taken_port_is_one_line_before_anything_opens(tmp_path: Path) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        env = {**_center_env(tmp_path, "unused"), "SECONDBRAIN_CENTER_PORT": str(port)}
        del env["SECONDBRAIN_CENTER_DATABASE_URL"]
        line = one_line(cli("serve", env=env))
    assert line == (
        f"error (listen): cannot listen on 127.0.0.1:{port} (Address already in use); stop what"
        " uses it, or set SECONDBRAIN_CENTER_PORT (or SECONDBRAIN_CENTER_HOST) to a free one"
    )
    assert not (tmp_path / "center").exists()


def test_no_server_on_the_database_port_is_one_line(tmp_path: Path) -> None:
    url = "postgresql+asyncpg://postgres@127.0.0.1:9/test"
    line = one_line(cli("validate", env=_center_env(tmp_path, url)))
    assert line.startswith("error (database): no PostgreSQL answers on 127.0.0.1:9 (")
    assert line.endswith("); start it, or fix SECONDBRAIN_CENTER_DATABASE_URL")


def _options(command: Any, prefix: str = "") -> list[tuple[str, str]]:
    subs = getattr(command, "commands", {})
    if subs:
        return [found for name, sub in subs.items() for found in _options(sub, f"{prefix} {name}")]
    return [
        (prefix.strip(), flag)
        for param in command.params
        if isinstance(param, typer.core.TyperOption)
        for flag in param.opts
        if flag.startswith("--") and flag not in ("--url", "--json", "--help")
    ]


def test_every_option_of_every_verb_is_in_the_guide() -> None:
    guide = (Path(__file__).parents[3] / "docs" / "center.md").read_text()
    options = _options(typer.main.get_command(app))
    assert ("member add", "--unplaced") in options
    assert ("request approve", "--as-member") in options
    assert [found for found in options if found[1] not in guide] == []
