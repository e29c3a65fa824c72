"""No file on disk takes a node down: a path or text that is not valid Unicode is refused
before anything is written, and what a person put into a vault by hand — names that are not
UTF-8, text that is not, unreadable files, looping links, links into `.git`, `.secondbrain`
or `.obsidian` — is skipped and reported while every tool keeps working, in process and in
a real `secondbrain serve`. No log line names a host path."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
from structlog.testing import capture_logs

from tickets import testing as tt
from vault_core import content_hash
from vault_core.testing import (
    plant_hostile_files,
    plant_unreadable_file,
    snapshot,
    unprivileged_command,
)
from vault_node.testing import SAMPLE_NOTES, Harness, NodeFactory, mint, serving_node, write_files

S = "\udc80"  # a lone surrogate: what JSON's "\udc80" escape decodes to
BACKOFF_HASH = content_hash(str(SAMPLE_NOTES["wiki/backoff.md"]).encode())

# Every argument that becomes note text, with a lone surrogate in it.
CONTENT_ARGUMENTS: list[tuple[str, dict[str, Any]]] = [
    ("note_create", {"path": "wiki/new", "content": f"# New\n{S}\n"}),
    ("note_create", {"path": "wiki/new", "title": f"Title {S}"}),
    ("note_create", {"path": "wiki/new", "tags": [f"tag{S}"]}),
    ("note_write", {"path": "wiki/backoff", "content": S, "content_hash": BACKOFF_HASH}),
    ("note_edit", {"path": "wiki/backoff", "old_string": "Exponential", "new_string": S}),
    (
        "note_section_edit",
        {
            "path": "wiki/rate-limiting",
            "mode": "append_to_section",
            "heading": "Details",
            "content": S,
        },
    ),
    ("note_frontmatter", {"path": "wiki/backoff", "set": {"status": S}}),
    ("note_frontmatter", {"path": "wiki/backoff", "set": {f"key{S}": 1}}),
    ("note_frontmatter", {"path": "wiki/backoff", "set": {"nested": {"deep": [S]}}}),
    ("note_frontmatter", {"path": "wiki/backoff", "add_aliases": [f"alias {S}"]}),
    ("note_from_template", {"template": "meeting", "title": f"Meeting {S}"}),
    ("daily_note", {"append": f"an entry {S}"}),
    ("inbox_capture", {"text": f"an idea {S}"}),
    ("inbox_capture", {"text": "an idea", "source": f"https://example.org/{S}"}),
    ("note_merge", {"path": "wiki/rate-limiting", "from": "wiki/backoff", "heading": S}),
    ("tag_rename", {"from": "ops", "to": f"ops{S}", "dry_run": False}),
]


def visible(vault: Path) -> dict[str, bytes]:
    """The vault's own files (no dot folders) and the commit its history is at."""
    head = subprocess.run(
        ["git", "-C", str(vault), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout
    files = {k: v for k, v in snapshot(vault).items() if not k.startswith(".")}
    return {**files, "HEAD": head.encode()}


@pytest.mark.asyncio
async def test_a_path_that_is_not_unicode_is_refused_and_the_vault_keeps_serving(
    node: Harness,
) -> None:
    vault = node.data / "default"
    before = visible(vault)
    for path in (f"wiki/{S}.md", "wiki/\ud83d", f"{S}/x"):
        code, message = await node.fails("note_create", {"path": path, "content": "# x\n"})
        assert (code, "not valid Unicode" in message) == ("invalid_path", True)
    code, _ = await node.fails("note_move", {"path": "wiki/backoff", "to": f"wiki/{S}"})
    assert code == "invalid_path"
    code, _ = await node.fails("attachment_put", {"path": f"{S}.png", "data": "AAAA"})
    assert code == "invalid_path"
    code, _ = await node.fails("note_from_template", {"template": f"meet{S}"})
    assert code == "invalid_path"
    assert visible(vault) == before
    assert all(name.decode("utf-8") for name in os.listdir(os.fsencode(vault / "wiki")))
    assert (await node.ok("note_search", {"query": "backoff"}))["total"] >= 1
    assert (await node.ok("note_list"))["total"] == 6


@pytest.mark.asyncio
@pytest.mark.parametrize(("tool", "arguments"), CONTENT_ARGUMENTS, ids=lambda v: str(v)[:40])
async def test_text_that_is_not_unicode_is_refused_before_anything_is_written(
    node: Harness, tool: str, arguments: dict[str, Any]
) -> None:
    vault = node.data / "default"
    before = visible(vault)
    code, message = await node.fails(tool, arguments)
    assert code == "invalid_argument", message
    assert visible(vault) == before
    assert (await node.ok("note_search", {"query": "backoff"}))["total"] >= 1


@pytest.mark.asyncio
async def test_hostile_files_are_skipped_and_reported_and_every_tool_keeps_working(
    start_node: NodeFactory,
) -> None:
    node = await start_node()
    vault = node.data / "default"
    expected = plant_hostile_files(vault)
    secrets = {name: (vault / name).read_bytes() for name in (".git/config", ".git/HEAD")}
    with capture_logs() as logs:
        node.app.state.node.library.get("default").index.reconcile()  # what a start does
        found = await results(node)
    assert {row["path"]: row["reason"] for row in found["vault_stats"]["skipped"]} == expected
    assert found["vault_stats"]["stats"]["skipped"] == len(expected)
    review = found["vault_review"]
    assert {i["path"]: i["reason"] for i in review["items"]["skipped"]} == expected
    assert all(item["detail"] for item in review["items"]["skipped"])
    assert review["stats"]["skipped"] == len(expected)
    listed = {e["path"] for e in found["note_list"]["entries"]}
    assert not {p for p in listed if p.startswith(("loops/", "links/", "bad-", "pipe"))}
    assert not [a for a in found["attachment_list"]["attachments"] if "links/" in a["path"]]
    assert found["vault_grep"]["matches"] == []
    assert found["note_search"]["total"] >= 1
    assert found["vault_replace"]["notes_affected"] == 1
    skipped = {row["path"]: row["code"] for row in found["vault_replace"]["skipped"]}
    assert skipped == {"wiki/latin1.md": "invalid_argument"}  # the one note walk offers
    assert [r["message"] for r in found["note_history"]["revisions"]] == [
        "note_create: wiki/after.md"
    ]
    assert {name: (vault / name).read_bytes() for name in secrets} == secrets
    assert (await node.fails("note_read", {"path": "pipe"}))[0] == "invalid_path"
    assert (await node.fails("note_read", {"path": "links/git-config"}))[0] == "invalid_path"
    assert not [
        e for e in logs if e["event"] in ("tool_failed", "index_update_failed", "commit_failed")
    ]
    logged = {e["path"]: e["reason"] for e in logs if e["event"] == "file_skipped"}
    assert logged == expected
    assert str(node.data) not in json.dumps(logs, default=str)


async def results(node: Harness) -> dict[str, dict[str, Any]]:
    """One call of each kind over the planted vault, each of which must succeed."""
    calls: list[tuple[str, dict[str, Any]]] = [
        ("note_search", {"query": "rate limiting"}),
        ("note_list", {"limit": 500}),
        ("attachment_list", {"prefix": ""}),
        (
            "vault_grep",
            {"pattern": "bad name|in a bad folder|# instructions|repositoryformatversion"},
        ),
        ("vault_replace", {"pattern": "jitter", "replace": "noise"}),
        ("task_list", {}),
        ("tag_list", {}),
        ("note_create", {"path": "wiki/after", "content": "# After\n\nwritten after\n"}),
        ("note_history", {"path": "wiki/after"}),
        ("vault_review", {}),
        ("vault_stats", {}),
        ("vault_list", {}),
    ]
    return {tool: await node.ok(tool, arguments) for tool, arguments in calls}


# ------------------------------------------------------------------ a real node process


def call(base: str, token: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    reply = httpx.post(
        f"{base}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
              "params": {"name": tool, "arguments": arguments}},
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )  # fmt: skip
    result: dict[str, Any] = reply.json()["result"]
    assert not result["isError"], (tool, result["content"][0]["text"])
    structured: dict[str, Any] = result["structuredContent"]
    return structured


@pytest.mark.slow
def test_secondbrain_serve_starts_and_serves_over_a_vault_of_hostile_files(
    tmp_path: Path,
) -> None:
    key = tt.throwaway_key()
    vault = tmp_path / "data" / "default"
    write_files(vault, SAMPLE_NOTES)
    with serving_node(tmp_path, key):
        pass  # the first start makes the vault and its history
    expected = {**plant_hostile_files(vault), **plant_unreadable_file(vault)}
    # as root, permissions bind only without the capabilities that bypass them
    with serving_node(tmp_path, key, prefix=unprivileged_command()) as node:
        token = mint(key, audience=f"{node.base}/mcp")
        stats = call(node.base, token, "vault_stats", {})
        assert {row["path"]: row["reason"] for row in stats["skipped"]} == expected
        assert call(node.base, token, "note_search", {"query": "backoff"})["total"] >= 1
        assert call(node.base, token, "note_list", {})["total"] >= 6
        assert call(node.base, token, "vault_grep", {"pattern": "jitter"})["matches"]
        call(node.base, token, "note_create", {"path": "wiki/served", "content": "# Served\n"})
        history = call(node.base, token, "note_history", {"path": "wiki/served"})
        assert [r["message"] for r in history["revisions"]] == ["note_create: wiki/served.md"]
        review = call(node.base, token, "vault_review", {"only": "skipped"})
        assert {i["path"] for i in review["items"]["skipped"]} == set(expected)
    log = node.log.read_text()
    assert "file_skipped" in log
    assert str(tmp_path) not in log
    assert "Traceback" not in log


@pytest.mark.asyncio
async def test_a_name_that_is_not_utf8_made_while_the_node_runs_leaves_vault_stats_current(
    start_node: NodeFactory,
) -> None:
    node = await start_node({"wiki/a.md": "# A\n"}, watch=True)
    vault = node.data / "default"
    with open(os.fsencode(vault / "wiki") + b"/caf\xe9.md", "wb") as handle:
        handle.write(b"# Latin-1 name\n")
    (vault / "wiki" / "later.md").write_text("# Later\n", encoding="utf-8")
    for _ in range(150):
        found = await node.ok("vault_stats", {})
        if found["stats"]["notes"] == 2:
            break
        await asyncio.sleep(0.1)
    assert found["stats"]["notes"] == 2
    assert found["stats"]["skipped"] == 1
    assert found["skipped"] == [{"path": "wiki/caf\\xe9.md", "reason": "bad_name"}]
