"""The CLIs start light: what their modules load when imported, before any verb runs.

A verb imports what it uses inside itself; at import time `center.cli`, with every noun of
`center.commands`, and `vault_node.cli` load the command-line libraries and our own small
modules only. So `--help`, `version` and a remote center verb (an HTTP call) never pay
for the database, the server or the index (bench/bench_cli_start.py times them).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

CENTER_CLI = """
import importlib, pkgutil
import center.cli, center.commands, center.names, center.remote, center.rules
for found in pkgutil.iter_modules(center.commands.__path__):
    importlib.import_module(f"center.commands.{found.name}")
"""
NODE_CLI = "import vault_node.cli"
DATABASE_AND_SERVER = {"sqlalchemy", "alembic", "asyncpg", "aiosqlite", "fastapi", "starlette"}
SERVER = {"uvicorn", "starlette", "mcp", "httpx"}
INDEX = {"vault_core", "numpy", "onnxruntime", "dulwich", "watchfiles"}


def loaded(code: str) -> set[str]:
    """The top-level packages a fresh interpreter holds after running `code`."""
    done = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return {name.split(".")[0] for name in json.loads(done.stdout.splitlines()[-1])}


def test_the_center_cli_and_its_nouns_load_no_database_or_server_library() -> None:
    modules = loaded(CENTER_CLI)
    assert "center" in modules
    assert sorted(modules & (DATABASE_AND_SERVER | SERVER)) == []


def test_ids_and_path_rules_are_checked_without_the_key_or_database_libraries() -> None:
    modules = loaded("import center.names")
    assert sorted(modules & (DATABASE_AND_SERVER | {"tickets", "cryptography", "pydantic"})) == []


@pytest.mark.parametrize("heavy", [SERVER, INDEX, {"tickets", "cryptography"}])
def test_the_node_cli_loads_neither_server_nor_index_nor_keys(heavy: set[str]) -> None:
    modules = loaded(NODE_CLI)
    assert "vault_node" in modules
    assert sorted(modules & heavy) == []
