"""The `secondbrain` CLI as a user runs it: a subprocess against a data directory."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tickets import testing as tt
from tickets.testing import cli_imports
from vault_node.testing import key_files

CLI = [sys.executable, "-c", "from vault_node.cli import main; main()"]


def run(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SECONDBRAIN_")}
    return subprocess.run(
        [*CLI, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**clean, **(env or {})},
    )


def test_vault_check_lists_broken_notes_and_exits_nonzero(tmp_path: Path) -> None:
    assert run("vault", "create", "team", "--data-dir", "d", cwd=tmp_path).returncode == 0
    (tmp_path / "d/team/wiki/bad.md").write_text("---\ntitle: [oops\n---\nbody\n")
    (tmp_path / "d/team/wiki/latin1.md").write_bytes(b"caf\xe9\n")
    result = run("vault", "check", "team", "--data-dir", "d", "--json", cwd=tmp_path)
    assert result.returncode == 1
    problems = {p["path"]: p["code"] for p in json.loads(result.stdout)["problems"]}
    assert problems == {"wiki/bad.md": "invalid_argument", "wiki/latin1.md": "invalid_argument"}
    assert str(tmp_path) not in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("vault", "create", "Bad Name"), "invalid vault name"),
        (("vault", "create", "x", "--layout", "nope"), "unknown layout"),
        (("vault", "check", "missing"), "unknown vault"),
    ],
)
def test_bad_input_gets_one_clear_line_and_exit_code_2(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    result = run(*args, "--data-dir", "d", cwd=tmp_path)
    assert result.returncode == 2
    assert message in result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr


def test_creating_an_existing_vault_is_refused(tmp_path: Path) -> None:
    assert run("vault", "create", "x", "--data-dir", "d", cwd=tmp_path).returncode == 0
    result = run("vault", "create", "x", "--data-dir", "d", cwd=tmp_path)
    assert result.returncode == 2
    assert "already exists" in result.stdout


def write_config(tmp_path: Path, **extra: str) -> Path:
    jwks, revocations = key_files(tmp_path, tt.throwaway_key())
    values = {
        "public_url": "https://node-a.test",
        "data_dir": str(tmp_path / "data"),
        "issuer": "https://center.test",
        "jwks_file": str(jwks),
        "revocation_file": str(revocations),
        **extra,
    }
    path = tmp_path / "node.yaml"
    path.write_text("".join(f"{key}: {value}\n" for key, value in values.items()))
    return path


def test_validate_accepts_a_good_configuration(tmp_path: Path) -> None:
    result = run("validate", "--config", str(write_config(tmp_path)), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "configuration ok: serving https://node-a.test/mcp" in result.stdout
    assert "1 trusted key(s)" in result.stdout
    assert "heartbeat: off" in result.stdout


def test_validate_says_where_each_setting_came_from(tmp_path: Path) -> None:
    config = write_config(tmp_path, rate_limit="100")
    result = run("validate", "--config", str(config), cwd=tmp_path, env={"SECONDBRAIN_WATCH": "0"})
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[1] == (
        f"from {config}: public_url, data_dir, rate_limit, jwks_file, revocation_file, issuer"
    )
    assert lines[2] == "from the environment: watch (SECONDBRAIN_WATCH)"


def test_validate_refuses_an_environment_variable_that_overrides_the_file(tmp_path: Path) -> None:
    """The operator guide exports SECONDBRAIN_CENTER_URL for the center's CLI; a node started
    in that shell must not take it over its file's center_url without a word."""
    config = write_config(tmp_path, center_url="https://center.test")
    same = run(
        "validate",
        "--config",
        str(config),
        cwd=tmp_path,
        env={"SECONDBRAIN_CENTER_URL": "https://center.test/"},
    )
    assert same.returncode == 0, same.stdout + same.stderr
    other = run(
        "validate",
        "--config",
        str(config),
        cwd=tmp_path,
        env={"SECONDBRAIN_CENTER_URL": "http://127.0.0.1:1"},
    )
    assert other.returncode == 2
    assert "configuration ok" not in other.stdout
    assert (
        f"SECONDBRAIN_CENTER_URL overrides center_url from {config} with another value"
        in other.stdout
    )


def test_validate_fails_when_the_node_could_trust_no_key(tmp_path: Path) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    config = tmp_path / "node.yaml"
    config.write_text(
        f"public_url: https://node-a.test\ndata_dir: {tmp_path / 'data'}\n"
        f"center_url: http://127.0.0.1:{port}\n"
    )
    result = run("validate", "--config", str(config), cwd=tmp_path)
    assert result.returncode == 2
    assert "configuration ok" not in result.stdout
    assert f"no trusted key: http://127.0.0.1:{port}/.well-known/jwks.json" in result.stdout


def test_validate_reports_the_heartbeat_without_its_credential(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        center_url="https://center.test",
        node_id="node-a",
        node_credential="sbn_not-a-real-credential-but-long-enough",
    )
    result = run("validate", "--config", str(config), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "heartbeat: node node-a to https://center.test every 30s" in result.stdout
    assert "sbn_" not in result.stdout + result.stderr


def test_validate_names_every_problem_and_exits_2(tmp_path: Path) -> None:
    path = write_config(tmp_path, max_response_bytes="10", data_dir="relative")
    result = run("validate", "--config", str(path), cwd=tmp_path)
    assert result.returncode == 2
    assert "max_response_bytes must be at least 4096" in result.stdout
    assert "data_dir 'relative' must be an absolute path" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr


def test_reindex_builds_the_index_of_every_vault_and_reports_it(tmp_path: Path) -> None:
    path = write_config(tmp_path)
    for vault, note in (("team", "# Team\nalpha [[Ops]]\n"), ("ops", "# Ops\nbeta\n")):
        (tmp_path / "data" / vault).mkdir(parents=True)
        (tmp_path / "data" / vault / "n.md").write_text(note)
    result = run("reindex", "--config", str(path), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "team: 1 files, 1 indexed, 0 removed, 0 skipped" in result.stdout
    assert "ops: 1 files, 1 indexed" in result.stdout
    again = run("reindex", "--config", str(path), "--vault", "team", cwd=tmp_path)
    assert "team: 1 files, 0 indexed" in again.stdout
    full = run("reindex", "--config", str(path), "--vault", "team", "--full", cwd=tmp_path)
    assert "team: 1 files, 1 indexed" in full.stdout
    assert (tmp_path / "data" / "team" / ".secondbrain" / "index.db").is_file()


def test_reindex_of_an_unknown_vault_is_one_clear_line(tmp_path: Path) -> None:
    result = run(
        "reindex", "--config", str(write_config(tmp_path)), "--vault", "nope", cwd=tmp_path
    )
    assert result.returncode == 2
    assert "unknown vault: nope" in result.stdout


def test_a_listen_port_written_as_a_bare_number_says_to_quote_it(tmp_path: Path) -> None:
    result = run("validate", "--config", str(write_config(tmp_path, listen="3038")), cwd=tmp_path)
    assert result.returncode == 2
    assert '  listen: YAML read 3038 as a number; write "host:port" in quotes, e.g.' in (
        result.stdout
    )
    assert "valid string" not in result.stdout


def test_a_misspelled_setting_gets_a_did_you_mean(tmp_path: Path) -> None:
    result = run("validate", "--config", str(write_config(tmp_path, max_stal="60s")), cwd=tmp_path)
    assert result.returncode == 2
    assert "  max_stal: unknown setting (did you mean 'max_stale'?); see docs/node.md" in (
        result.stdout
    )


def test_serve_on_a_taken_port_refuses_in_one_line_before_opening_any_vault(
    tmp_path: Path,
) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        config = write_config(tmp_path, listen=f'"127.0.0.1:{port}"')
        assert run("vault", "create", "team", "--data-dir", "data", cwd=tmp_path).returncode == 0
        result = run("serve", "--config", str(config), cwd=tmp_path)
        checked = run("validate", "--config", str(config), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"error: cannot listen on 127.0.0.1:{port} (Address already in use); stop what uses"
        " it, or set listen (SECONDBRAIN_LISTEN) to a free port"
    ]
    assert result.stdout == ""  # nothing was started, opened or indexed
    assert f"listen: cannot listen on 127.0.0.1:{port} (Address already in use)" in (checked.stdout)
    assert not (tmp_path / "data" / ".node").exists() or not any(
        (tmp_path / "data" / ".node").rglob("*.db")
    )


HEAVY = {"fastapi", "uvicorn", "numpy", "vault_core", "sqlalchemy", "httpx"}


@pytest.mark.parametrize("args", [["version"], ["--help"], ["vault", "--help"]])
def test_version_and_help_load_no_server_index_or_model(args: list[str], tmp_path: Path) -> None:
    """A verb imports what it uses when it runs (bench/bench_cli_start.py times them)."""
    printed, modules = cli_imports("vault_node.cli", args, cwd=str(tmp_path))
    assert printed
    assert HEAVY.isdisjoint(modules), sorted(HEAVY & modules)
