"""The node as an MCP client sees it: the official SDK over Streamable HTTP on loopback,
with a signed bearer token — the handshake, the tool list, every tool, conflicts, dry runs,
protocol errors, the dual-era fallback, and a log that holds no content or token."""

from __future__ import annotations

import base64
import json
from contextlib import AbstractAsyncContextManager
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client, ClientSession, MCPError
from mcp.client.streamable_http import streamable_http_client

from ..deploy.conftest import call, mcp_session
from .conftest import NodeServer

pytestmark = [pytest.mark.slow, pytest.mark.asyncio]


def connect(
    server: NodeServer, token: str | None = None
) -> AbstractAsyncContextManager[ClientSession]:
    """The official SDK client on this node, initialized, with a bearer token."""
    return mcp_session(server.url, token or server.token())


async def test_initialize_and_the_tool_list(node_server: NodeServer) -> None:
    headers = {"Authorization": f"Bearer {node_server.token()}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        streamable_http_client(node_server.url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        init = await session.initialize()
        listed = await session.list_tools()
    assert init.protocol_version == "2025-11-25"
    assert init.server_info.name == "secondbrain"
    assert init.instructions is not None
    assert "Vaults you can use: default." in init.instructions
    assert len(listed.tools) == 35
    for tool in listed.tools:
        assert tool.output_schema is not None
        assert tool.input_schema["additionalProperties"] is False
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is not None


async def test_every_tool_answers_through_the_sdk(node_server: NodeServer) -> None:
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n").decode()
    async with connect(node_server) as s:
        for tool, arguments in READS:
            await call(s, tool, arguments)
        made = await call(
            s, "note_create", {"path": "e2e/first", "content": "Hello [[wiki/backoff]]\n"}
        )
        await call(
            s,
            "note_write",
            {
                "path": "e2e/first",
                "content": "# First\n\n## Part\n\nx\n",
                "content_hash": made["content_hash"],
            },
        )
        for tool, arguments in WRITES:
            await call(s, tool, arguments)
        await call(s, "attachment_put", {"path": "e2e/pic.png", "data": png})
        revision = (await call(s, "note_history", {"path": "e2e/first"}))["revisions"][-1]["commit"]
        await call(s, "note_diff", {"path": "e2e/first", "from": revision})
        await call(s, "note_restore", {"path": "e2e/first", "revision": revision})
        await call(s, "note_delete", {"path": "e2e/third"})
        await call(s, "vault_create", {"name": "e2e-team"})
        listed = await call(s, "vault_list", {})
    assert {v["name"] for v in listed["vaults"]} == {"default", "e2e-team"}


READS: list[tuple[str, dict[str, Any]]] = [
    ("vault_list", {}),
    ("vault_stats", {}),
    ("note_list", {"prefix": "wiki"}),
    ("note_search", {"query": "bucket"}),
    ("vault_grep", {"pattern": "bucket"}),
    ("note_read", {"path": "wiki/rate-limiting", "heading": "Details"}),
    ("note_outline", {"path": "wiki/rate-limiting"}),
    ("note_backlinks", {"path": "wiki/backoff"}),
    ("note_related", {"path": "wiki/rate-limiting"}),
    ("tag_list", {}),
    ("task_list", {"include_done": True}),
    ("daily_range", {"from": "2025-12-30", "to": "2026-01-02"}),
    ("attachment_list", {}),
    ("vault_review", {}),
]
WRITES: list[tuple[str, dict[str, Any]]] = [
    ("note_edit", {"path": "e2e/first", "old_string": "x", "new_string": "y"}),
    (
        "note_section_edit",
        {
            "path": "e2e/first",
            "mode": "append_to_section",
            "heading": "Part",
            "content": "- [ ] check it",
        },
    ),
    ("note_frontmatter", {"path": "e2e/first", "add_tags": ["e2e"]}),
    ("task_toggle", {"path": "e2e/first", "text": "check it"}),
    ("note_from_template", {"template": "meeting", "path": "e2e/meeting", "title": "Sync"}),
    ("daily_note", {"date": "2026-02-02", "append": "Ran the end-to-end tests."}),
    ("inbox_capture", {"text": "An idea from the e2e test"}),
    ("note_create", {"path": "e2e/second", "content": "# Second\n\n## A\n\na\n\n## B\n\nb\n"}),
    ("note_split", {"path": "e2e/second", "dir": "e2e/parts"}),
    ("note_create", {"path": "e2e/third", "content": "third #e2e\n"}),
    ("note_merge", {"path": "e2e/second", "from": "e2e/parts/a"}),
    ("note_move", {"path": "e2e/parts/b", "to": "e2e/b-moved"}),
    ("tag_rename", {"from": "e2e", "to": "end-to-end", "dry_run": False}),
    ("vault_replace", {"pattern": "Sync", "replace": "Weekly sync", "prefix": "e2e"}),
]


async def test_a_write_conflict_reaches_the_model_as_a_tool_error(node_server: NodeServer) -> None:
    async with connect(node_server) as s:
        read = await call(s, "note_read", {"path": "wiki/backoff"})
        await call(
            s,
            "note_edit",
            {"path": "wiki/backoff", "old_string": "jitter", "new_string": "full jitter"},
        )
        stale = await s.call_tool(
            "note_write",
            {"path": "wiki/backoff", "content": "lost", "content_hash": read["content_hash"]},
        )
    assert stale.is_error
    text = stale.content[0].text  # type: ignore[union-attr]
    assert "the note changed since it was read" in text
    assert stale.meta is not None
    assert stale.meta["secondbrain/error"]["code"] == "hash_mismatch"
    assert "full jitter" in (node_server.data / "default/wiki/backoff.md").read_text()


async def test_a_dry_run_shows_the_change_and_writes_nothing(node_server: NodeServer) -> None:
    before = (node_server.data / "default/wiki/rate-limiting.md").read_text()
    async with connect(node_server) as s:
        dry = await call(s, "vault_replace", {"pattern": "600", "replace": "900"})
        moved = await call(
            s, "note_move", {"path": "wiki/rate-limiting", "to": "x/y", "dry_run": True}
        )
    assert dry["dry_run"] is True
    assert "+Bucket size is 900 per minute." in dry["notes"][0]["diff"]
    assert moved["dry_run"] is True
    assert (node_server.data / "default/wiki/rate-limiting.md").read_text() == before


async def test_a_read_only_token_lists_and_gets_only_read_tools(node_server: NodeServer) -> None:
    async with connect(node_server, node_server.token("read", role="reader")) as s:
        names = {tool.name for tool in (await s.list_tools()).tools}
        assert "note_read" in names
        assert "note_create" not in names
        found = await call(s, "note_search", {"query": "backoff"})
    assert found["total"] >= 1


async def test_a_write_refused_for_a_read_token_tells_the_sdk_caller_what_to_ask_for(
    node_server: NodeServer,
) -> None:
    async with connect(node_server, node_server.token("read", role="reader")) as s:
        with pytest.raises(MCPError) as refused:
            await s.call_tool("note_create", {"path": "e2e/refused", "content": "x\n"})
    error = refused.value.error
    assert error.code == -32001
    assert error.message == (
        "note_create needs the write permission, which your token does not hold (it has read);"
        " ask for a grant with scope read_write"
    )
    assert error.data == {"code": "forbidden", "status": 403, "scope": "write"}
    assert "Server returned an error response" not in str(refused.value)


async def test_a_dual_era_client_falls_back_to_the_handshake(node_server: NodeServer) -> None:
    headers = {"Authorization": f"Bearer {node_server.token()}"}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        transport = streamable_http_client(node_server.url, http_client=http)
        async with Client(transport, mode="auto") as client:
            assert client.protocol_version == "2025-11-25"
            result = await client.call_tool("vault_stats", {})
    assert not result.is_error


async def test_protocol_errors_and_a_batch_over_http(node_server: NodeServer) -> None:
    headers = {
        "Authorization": f"Bearer {node_server.token()}",
        "MCP-Protocol-Version": "2025-06-18",
    }
    async with httpx.AsyncClient(base_url=node_server.base, timeout=60) as http:
        batch = await http.post(
            "/mcp",
            headers=headers,
            json=[
                {"jsonrpc": "2.0", "id": 1, "method": "ping"},
                {"jsonrpc": "2.0", "id": 2, "method": "nope"},
                {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "x"}},
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
            ],
        )
        invalid = await http.post("/mcp", headers=headers, content=b"{oops")
        anonymous = await http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        modern = await http.post(
            "/mcp",
            headers={**headers, "MCP-Protocol-Version": "2026-07-28"},
            json={"jsonrpc": "2.0", "id": 1, "method": "server/discover"},
        )
        get = await http.get("/mcp", headers=headers)
    codes = [reply.get("error", {}).get("code") for reply in batch.json()]
    assert codes == [None, -32601, -32601]
    assert invalid.status_code == 400
    assert invalid.json()["error"]["code"] == -32700
    assert anonymous.status_code == 401
    assert "resource_metadata=" in anonymous.headers["www-authenticate"]
    assert modern.status_code == 400
    assert modern.json()["error"]["code"] == -32600
    assert (get.status_code, get.headers["allow"]) == (405, "POST, DELETE")


async def test_the_log_is_json_and_holds_no_note_content_or_token(node_server: NodeServer) -> None:
    token = node_server.token()
    async with connect(node_server, token) as s:
        await call(s, "note_read", {"path": "raw/article"})
        await call(s, "inbox_capture", {"text": "PRIVATE-E2E-CAPTURE"})
    lines = [json.loads(line) for line in node_server.log.read_text().splitlines() if line]
    assert any(line["event"] == "tool_call" and line["tool"] == "note_read" for line in lines)
    text = node_server.log.read_text()
    for secret in (
        "Token buckets refill",
        "PRIVATE-E2E-CAPTURE",
        "Exponential backoff",
        token.rsplit(".", 1)[1],
    ):
        assert secret not in text
