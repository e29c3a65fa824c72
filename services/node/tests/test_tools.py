"""The registry and the dispatch shared by all 34 tools: declarations, argument checking,
error codes, truncation, audit lines and attribution."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import threading
import time
from typing import Any

import jsonschema
import pytest
from structlog.testing import capture_logs

from vault_node.errors import ERROR_CODES
from vault_node.registry import REGISTRY, TOOLS, describe
from vault_node.testing import Harness, NodeFactory, mint
from vault_node.tools.base import Tool

SPEC_TOOLS = {
    "vault_list",
    "vault_create",
    "vault_stats",
    "note_list",
    "note_search",
    "vault_grep",
    "note_read",
    "note_outline",
    "note_backlinks",
    "note_related",
    "tag_list",
    "note_create",
    "note_write",
    "note_edit",
    "note_section_edit",
    "note_frontmatter",
    "note_move",
    "note_delete",
    "note_from_template",
    "daily_note",
    "inbox_capture",
    "daily_range",
    "vault_review",
    "note_merge",
    "note_split",
    "task_list",
    "task_toggle",
    "tag_rename",
    "vault_replace",
    "attachment_list",
    "attachment_put",
    "note_history",
    "note_diff",
    "note_restore",
}


def test_the_registry_holds_the_34_tools_of_the_spec_and_attachment_read() -> None:
    assert len(TOOLS) == 35
    assert set(REGISTRY) == SPEC_TOOLS | {"attachment_read"}


@pytest.mark.parametrize("tool", TOOLS, ids=lambda t: t.name)
def test_every_tool_is_fully_declared(tool: Tool) -> None:
    listed = describe(tool)
    assert re.fullmatch(r"[A-Za-z0-9_.-]{1,128}", listed["name"])
    assert len(listed["description"]) >= 80
    assert listed["title"]
    schema = listed["inputSchema"]
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    for name, prop in schema["properties"].items():
        assert len(prop["description"]) >= 10, f"{tool.name}.{name}"
    assert set(schema.get("required", ())) <= set(schema["properties"])
    for prop in schema["properties"].values():
        assert isinstance(prop["type"], str), "one JSON type per parameter"
    assert ("vault" in schema["properties"]) == (tool.name not in ("vault_list", "vault_create"))
    assert listed["outputSchema"] == {"type": "object"}  # the members: in every result
    jsonschema.Draft202012Validator.check_schema(tool.output)
    hints = listed["annotations"]  # all four, as declared: a client need not know the defaults
    assert set(hints) == {"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}
    assert hints == tool.hints.annotations()
    assert hints["readOnlyHint"] == (tool.kind == "read")
    assert hints["openWorldHint"] is False


@pytest.mark.asyncio
async def test_argument_problems_are_all_named_in_one_tool_error(node: Harness) -> None:
    code, message = await node.fails("note_read", {"pth": "x", "with_metadata": "yes"})
    assert code == "invalid_argument"
    assert "unknown argument 'pth' (did you mean 'path'?)" in message
    assert "missing required argument 'path'" in message
    assert "argument 'with_metadata' must be true or false, got string" in message


@pytest.mark.asyncio
async def test_a_missing_content_hash_tells_the_model_to_read_first(node: Harness) -> None:
    code, message = await node.fails("note_write", {"path": "wiki/backoff", "content": "x"})
    assert code == "invalid_argument"
    assert "content_hash" in message
    assert "call note_read first" in message


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("tool", "arguments", "fragment"),
    [
        ("note_list", {"limit": "5"}, "argument 'limit' must be an integer, got string"),
        ("note_list", {"limit": 2.5}, "argument 'limit' must be a whole number"),
        ("note_list", {"sort": "sized"}, "must be one of modified, path, size"),
        ("note_search", {"tags": [1, 2]}, "argument 'tags' must be a list of strings"),
        ("note_frontmatter", {"path": "x", "set": [1]}, "argument 'set' must be an object"),
        ("note_list", {"vault": 5}, "argument 'vault' must be a string, got number"),
        ("vault_list", {"vault": "default"}, "unknown argument 'vault'"),
        ("note_section_edit", {"path": "x", "mode": "append_section"}, "did you mean"),
    ],
)
async def test_wrong_types_and_values_are_tool_errors(
    node: Harness, tool: str, arguments: dict[str, Any], fragment: str
) -> None:
    code, message = await node.fails(tool, arguments)
    assert code == "invalid_argument"
    assert fragment in message


@pytest.mark.asyncio
async def test_null_arguments_count_as_absent_and_lists_take_commas(node: Harness) -> None:
    found = await node.ok("note_search", {"query": None, "tags": "ops, api", "prefix": None})
    assert [hit["path"] for hit in found["hits"]] == ["wiki/rate-limiting.md"]


@pytest.mark.asyncio
async def test_limits_are_clamped_or_reset_as_the_spec_says(node: Harness) -> None:
    assert (await node.ok("note_list", {"limit": 0}))["returned"] == 1
    assert (await node.ok("note_list", {"limit": 100000}))["returned"] == 6
    assert (await node.ok("note_search", {"limit": -3}))["returned"] == 5


@pytest.mark.asyncio
async def test_every_tool_error_carries_a_registered_code(node: Harness) -> None:
    cases: list[tuple[str, dict[str, Any]]] = [
        ("note_read", {"path": "missing"}),
        ("note_read", {"path": "../x"}),
        ("note_create", {"path": "wiki/backoff"}),
        ("note_write", {"path": "wiki/backoff", "content": "x", "content_hash": "0" * 32}),
        ("note_history", {"path": "wiki/backoff", "vault": "nosuch"}),
        ("vault_grep", {"pattern": "("}),
    ]
    codes = {(await node.fails(tool, args))[0] for tool, args in cases}
    assert codes == {
        "not_found",
        "invalid_path",
        "exists",
        "hash_mismatch",
        "unknown_vault",
        "invalid_argument",
    }
    assert codes <= ERROR_CODES


@pytest.mark.asyncio
async def test_an_unexpected_failure_is_internal_without_its_message(
    node: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(call: Any) -> dict[str, Any]:
        raise RuntimeError("secret note text")

    monkeypatch.setitem(
        REGISTRY, "vault_stats", dataclasses.replace(REGISTRY["vault_stats"], handler=boom)
    )
    with capture_logs() as logs:
        code, message = await node.fails("vault_stats")
    assert code == "internal"
    assert "secret" not in message
    assert "secret" not in repr(logs)
    assert any(line["event"] == "tool_failed" for line in logs)


ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"


@pytest.mark.asyncio
async def test_a_call_past_its_deadline_answers_timeout_and_frees_its_worker(
    start_node: NodeFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    node = await start_node(tool_timeout="1s")
    finished: list[str] = []

    def endless(call: Any) -> dict[str, Any]:
        # Only the deadline ends this statement: without it the test hangs.
        try:
            with call.opened.index.querying() as conn:
                conn.execute(ENDLESS).fetchone()
        finally:
            finished.append(threading.current_thread().name)
        return {}

    stats = REGISTRY["vault_stats"]
    monkeypatch.setitem(REGISTRY, "vault_stats", dataclasses.replace(stats, handler=endless))
    with capture_logs() as logs:
        code, message = await node.fails("vault_stats")
    assert code == "timeout"
    assert code in ERROR_CODES
    assert "ran past its deadline of 1 s" in message
    assert "narrow it" in message
    assert [line.get("error") for line in logs if line["event"] == "tool_call"] == ["timeout"]
    assert len(finished) == 1  # the handler returned: its worker thread is free again
    monkeypatch.setitem(REGISTRY, "vault_stats", stats)
    assert (await node.ok("vault_stats"))["stats"]["notes"] > 0


@pytest.mark.asyncio
async def test_a_call_that_starts_past_its_deadline_does_nothing(start_node: NodeFactory) -> None:
    node = await start_node(tool_timeout="1ns")
    code, message = await node.fails("note_create", {"path": "wiki/late", "content": "x\n"})
    assert code == "timeout"
    assert "deadline" in message
    assert not (node.data / "default/wiki/late.md").exists()


@pytest.mark.asyncio
async def test_a_result_over_the_limit_is_cut_honestly(start_node: NodeFactory) -> None:
    big = "---\ntitle: Big\n---\n" + "".join(f"line {n} of a long note\n" for n in range(3000))
    node = await start_node({"big.md": big}, max_response_bytes=4096)
    result = await node.call("note_read", {"path": "big"})
    assert len(result["content"][0]["text"].encode()) <= 4096
    found = result["structuredContent"]
    assert found["truncated"] is True
    assert "over the limit of 4096 bytes" in found["notice"]
    assert "limit/offset" in found["notice"]
    assert found["content_hash"]
    assert found["path"] == "big.md"
    listing = await node.call("note_list", {"limit": 500})
    assert listing["structuredContent"].get("truncated") is None


@pytest.mark.asyncio
async def test_each_call_writes_one_audit_line_without_content(node: Harness) -> None:
    with capture_logs() as logs:
        await node.ok("note_read", {"path": "wiki/backoff"})
        await node.fails("note_read", {"path": "nope"})
        await node.ok(
            "note_edit",
            {
                "path": "wiki/backoff",
                "old_string": "jitter",
                "new_string": "full jitter",
                "dry_run": True,
            },
        )
    lines = [line for line in logs if line["event"] == "tool_call"]
    assert len(lines) == 3
    first, failed, edit = lines
    assert first["tool"] == "note_read"
    assert first["user"] == "alice"
    assert first["vault"] == "default"
    assert first["path"] == "wiki/backoff"
    assert first["bytes"] > 0
    assert first["duration_ms"] >= 0
    assert failed["error"] == "not_found"
    assert "bytes" not in failed
    assert edit["dry_run"] is True
    assert "jitter" not in repr(lines)
    assert "Exponential" not in repr(lines)


@pytest.mark.asyncio
async def test_writes_are_committed_as_the_calling_principal_with_the_grant(
    node: Harness,
) -> None:
    token = mint(node.key, sub="bob", gid="g-42", chain=["g-42"], dep=1, exp=int(time.time()) + 600)
    await node.ok("inbox_capture", {"text": "remember this", "title": "memo"}, token=token)
    log = subprocess.run(
        ["git", "-C", str(node.data / "default"), "log", "-1", "--format=%an <%ae>|%cn|%B"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert log.startswith("bob <bob@secondbrain.invalid>|secondbrain|inbox_capture: inbox/")
    assert "Secondbrain-Grant: g-42" in log
