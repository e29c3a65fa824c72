"""The node as the MCP Inspector CLI sees it: the pinned `@modelcontextprotocol/inspector`
(tests/e2e/inspector) lists the tools (strict, without a finding), calls two, and lists and
reads resources and prompts over HTTP with a bearer token.

A third-party client proves the wire format is not just what our own tests expect. The
package is installed by `npm ci --prefix tests/e2e/inspector` (CI does it); without it the
test fails rather than skips, so a CI run cannot pass without ever running it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from .conftest import NodeServer

pytestmark = pytest.mark.slow

INSPECTOR = Path(__file__).resolve().parent / "inspector"
TIMEOUT = 120.0
TOOLS = {
    "vault_list", "vault_create", "vault_stats", "note_list", "note_search", "vault_grep",
    "note_read", "note_outline", "note_backlinks", "note_related", "tag_list", "note_create",
    "note_write", "note_edit", "note_section_edit", "note_frontmatter", "note_move",
    "note_delete", "note_from_template", "daily_note", "inbox_capture", "daily_range",
    "vault_review", "note_merge", "note_split", "task_list", "task_toggle", "tag_rename",
    "vault_replace", "attachment_list", "attachment_put", "note_history", "note_diff",
    "note_restore", "attachment_read",
}  # fmt: skip


@pytest.fixture(scope="module")
def npx() -> str:
    """The npx that runs the installed Inspector; fails with the install command if absent."""
    found = shutil.which("npx")
    if found is None:
        pytest.fail("npx is not on PATH: install Node.js 20 or later with npm")
    if not (INSPECTOR / "node_modules" / ".bin" / "mcp-inspector").exists():
        pytest.fail("the MCP Inspector is not installed: run `npm ci --prefix tests/e2e/inspector`")
    return found


def run_cli(npx: str, url: str, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run `mcp-inspector --cli` against `url` with `args`, within the time limit."""
    command = [
        npx, "--no", "--prefix", str(INSPECTOR), "mcp-inspector", "--cli", url,
        "--transport", "http", "--format", "json", *args,
    ]  # fmt: skip
    # The Inspector keeps secrets and catalogs under ~/.mcp-inspector: never the real one.
    env = {**os.environ, "HOME": str(home), "NO_COLOR": "1"}
    return subprocess.run(
        command, check=False, capture_output=True, text=True, env=env, timeout=TIMEOUT
    )


def inspect(npx: str, server: NodeServer, home: Path, *args: str) -> dict[str, Any]:
    """The JSON result of a successful Inspector run with an all-scopes token."""
    return envelope(npx, server, home, *args)["result"]  # type: ignore[no-any-return]


def envelope(npx: str, server: NodeServer, home: Path, *args: str) -> dict[str, Any]:
    """The whole JSON output of a successful run; a run with a warning on stderr fails."""
    header = f"Authorization: Bearer {server.token()}"
    done = run_cli(npx, server.url, home, "--header", header, *args)
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    assert "Warning" not in done.stderr, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    return found


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("inspector-home")


def test_the_inspector_lists_all_35_tools_strictly_without_a_finding(
    npx: str, node_server: NodeServer, home: Path
) -> None:
    # --strict exits 6 on an error-severity schema portability problem in any tool, and
    # puts every finding, warnings included, into the output's schemaFindings.
    found = envelope(npx, node_server, home, "--method", "tools/list", "--strict")
    assert "schemaFindings" not in found, found.get("schemaFindings")
    listed = found["result"]
    names = [tool["name"] for tool in listed["tools"]]
    assert sorted(names) == sorted(TOOLS)
    for tool in listed["tools"]:
        assert tool["inputSchema"]["additionalProperties"] is False, tool["name"]
        assert "outputSchema" in tool, tool["name"]


def test_the_inspector_calls_vault_list(npx: str, node_server: NodeServer, home: Path) -> None:
    result = inspect(npx, node_server, home, "--method", "tools/call", "--tool-name", "vault_list")
    assert result["isError"] is False, result
    vaults = result["structuredContent"]["vaults"]
    assert [vault["name"] for vault in vaults] == ["default"]
    assert vaults[0]["is_default"] is True
    assert vaults[0]["notes"] >= 5
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]


def test_the_inspector_calls_note_search_with_an_argument(
    npx: str, node_server: NodeServer, home: Path
) -> None:
    result = inspect(
        npx, node_server, home,
        "--method", "tools/call", "--tool-name", "note_search",
        "--tool-arg", "query=token buckets", "--tool-arg", "limit=5",
    )  # fmt: skip
    assert result["isError"] is False, result
    found = result["structuredContent"]
    assert found["vault"] == "default"
    assert found["total"] >= 1
    assert found["hits"][0]["path"] == "wiki/rate-limiting.md"


def test_the_inspector_without_a_token_is_told_to_authenticate(
    npx: str, node_server: NodeServer, home: Path
) -> None:
    done = run_cli(npx, node_server.url, home, "--method", "tools/list")
    assert done.returncode == 3, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"


def test_the_inspector_lists_and_reads_notes_as_resources(
    npx: str, node_server: NodeServer, home: Path
) -> None:
    listed = inspect(npx, node_server, home, "--method", "resources/list")
    uris = {resource["uri"] for resource in listed["resources"]}
    assert "secondbrain://default/wiki/rate-limiting.md" in uris
    read = inspect(
        npx, node_server, home,
        "--method", "resources/read", "--uri", "secondbrain://default/wiki/backoff.md",
    )  # fmt: skip
    (content,) = read["contents"]
    assert content["mimeType"] == "text/markdown"
    assert "Exponential backoff" in content["text"]
    templates = inspect(npx, node_server, home, "--method", "resources/templates/list")
    assert templates["resourceTemplates"][0]["uriTemplate"] == "secondbrain://{vault}/{+path}"


def test_the_inspector_lists_and_gets_prompts(
    npx: str, node_server: NodeServer, home: Path
) -> None:
    listed = inspect(npx, node_server, home, "--method", "prompts/list")
    assert [p["name"] for p in listed["prompts"]] == [
        "daily_review", "meeting_capture", "what_do_i_know",
    ]  # fmt: skip
    got = inspect(
        npx, node_server, home,
        "--method", "prompts/get", "--prompt-name", "what_do_i_know",
        "--prompt-args", "topic=token buckets",
    )  # fmt: skip
    resources = [
        m["content"]["resource"] for m in got["messages"] if m["content"]["type"] == "resource"
    ]
    assert resources[0]["uri"] == "secondbrain://default/wiki/rate-limiting.md"
