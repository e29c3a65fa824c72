"""The MCP transport on /mcp: JSON-RPC shapes, batches, versions, sizes, Origin, headers."""

from __future__ import annotations

import json
from typing import Any

import pytest

from vault_node.errors import ERROR_CODES
from vault_node.rpc import MAX_BODY
from vault_node.testing import Harness, NodeFactory

pytestmark = pytest.mark.asyncio

PONG = {"jsonrpc": "2.0", "id": 1, "result": {}}
INIT = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "test", "version": "1"},
}


def request(method: str, params: Any = None, ident: Any = 1) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "method": method}
    if params is not None:
        message["params"] = params
    return message


def error_of(body: dict[str, Any]) -> tuple[int, str]:
    code = body["error"]["data"]["code"]
    assert code in ERROR_CODES
    return body["error"]["code"], code


@pytest.mark.parametrize("offered", ["2025-06-18", "2025-11-25"])
async def test_initialize_echoes_a_supported_version(node: Harness, offered: str) -> None:
    reply = await node.rpc("initialize", {**INIT, "protocolVersion": offered})
    result = reply["result"]
    assert result["protocolVersion"] == offered
    assert result["serverInfo"]["name"] == "secondbrain"
    assert result["capabilities"] == {
        "tools": {"listChanged": False},
        "resources": {"subscribe": False, "listChanged": False},
        "prompts": {"listChanged": False},
        "completions": {},
    }


@pytest.mark.parametrize("offered", ["2024-11-05", "2026-07-28", "1999-01-01", None])
async def test_initialize_offers_the_newest_version_otherwise(
    node: Harness, offered: str | None
) -> None:
    reply = await node.rpc("initialize", {**INIT, "protocolVersion": offered})
    assert reply["result"]["protocolVersion"] == "2025-11-25"


async def test_responses_are_json_uncached_and_never_carry_a_session(node: Harness) -> None:
    response = await node.post(request("initialize", INIT))
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    assert response.headers["cache-control"] == "no-store"
    assert "mcp-session-id" not in response.headers


async def test_a_stale_session_id_from_a_client_is_ignored(node: Harness) -> None:
    response = await node.post(request("ping"), headers={"Mcp-Session-Id": "stale-123"})
    assert response.status_code == 200
    assert response.json()["result"] == {}
    assert "mcp-session-id" not in response.headers


async def test_get_is_405_with_allow_and_delete_is_204(node: Harness) -> None:
    got = await node.client.get("/mcp", headers={"Accept": "text/event-stream"})
    assert got.status_code == 405
    assert got.headers["allow"] == "POST, DELETE"
    deleted = await node.client.delete("/mcp", headers={"Mcp-Session-Id": "x"})
    assert deleted.status_code == 204
    assert deleted.content == b""


@pytest.mark.parametrize("method", ["notifications/initialized", "notifications/cancelled"])
async def test_a_notification_gets_202_and_no_body(node: Harness, method: str) -> None:
    response = await node.post({"jsonrpc": "2.0", "method": method})
    assert response.status_code == 202
    assert response.content == b""


async def test_unknown_notifications_and_client_responses_are_accepted_silently(
    node: Harness,
) -> None:
    for message in (
        {"jsonrpc": "2.0", "method": "notifications/whatever"},
        {"jsonrpc": "2.0", "id": 9, "result": {}},
        {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "note_delete"}},
    ):
        response = await node.post(message)
        assert response.status_code == 202, message
        assert response.content == b"", message


async def test_a_batch_is_answered_in_order_without_notifications(node: Harness) -> None:
    batch = [
        request("ping", ident="a"),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        request("tools/call", {"name": "vault_stats", "arguments": {}}, ident=2),
        request("nope", ident=3),
    ]
    response = await node.post(batch)
    assert response.status_code == 200
    replies = response.json()
    assert [r["id"] for r in replies] == ["a", 2, 3]
    assert replies[0]["result"] == {}
    assert replies[1]["result"]["isError"] is False
    assert error_of(replies[2]) == (-32601, "method_not_found")


async def test_a_batch_of_notifications_only_gets_202(node: Harness) -> None:
    response = await node.post([{"jsonrpc": "2.0", "method": "notifications/initialized"}] * 3)
    assert response.status_code == 202
    assert response.content == b""


@pytest.mark.parametrize("batch", [[], [{"jsonrpc": "2.0", "id": 1, "method": "ping"}] * 101])
async def test_an_empty_or_oversized_batch_is_an_invalid_request(
    node: Harness, batch: list[Any]
) -> None:
    response = await node.post(batch)
    assert response.status_code == 400
    assert error_of(response.json()) == (-32600, "invalid_request")


@pytest.mark.parametrize("raw", [b"{", b"not json", b'{"jsonrpc": "2.0",', b"\xff\xfe"])
async def test_unreadable_json_is_a_parse_error(node: Harness, raw: bytes) -> None:
    response = await node.post(None, raw=raw)
    assert response.status_code == 400
    body = response.json()
    assert body["id"] is None
    assert error_of(body) == (-32700, "parse_error")


@pytest.mark.parametrize(
    ("message", "ident"),
    [
        ({"id": 1, "method": "ping"}, 1),
        ({"jsonrpc": "1.0", "id": 1, "method": "ping"}, 1),
        ({"jsonrpc": "2.0", "id": 1, "method": 7}, 1),
        ({"jsonrpc": "2.0", "id": 1}, 1),
        ({"jsonrpc": "2.0", "id": True, "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": None, "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": "x"}, 1),
    ],
)
async def test_a_malformed_message_is_an_invalid_request(
    node: Harness, message: dict[str, Any], ident: Any
) -> None:
    response = await node.post(message)
    assert response.status_code == 200
    body = response.json()
    assert body["id"] == ident
    assert error_of(body) == (-32600, "invalid_request")


@pytest.mark.parametrize("body", [42, "ping", None, True])
async def test_a_body_that_is_no_message_is_an_invalid_request(node: Harness, body: Any) -> None:
    response = await node.post(body)
    assert response.status_code == 400
    assert error_of(response.json()) == (-32600, "invalid_request")


async def test_an_unknown_method_is_method_not_found(node: Harness) -> None:
    reply = await node.rpc("logging/setLevel", {"level": "debug"})
    assert error_of(reply) == (-32601, "method_not_found")


async def test_an_unknown_tool_is_a_protocol_error_with_a_suggestion(node: Harness) -> None:
    reply = await node.rpc("tools/call", {"name": "note_reed", "arguments": {}})
    assert error_of(reply) == (-32601, "unknown_tool")
    assert "note_read" in reply["error"]["message"]


@pytest.mark.parametrize(
    "params",
    [None, {}, {"name": 3}, {"name": "note_read", "arguments": "x"}, ["note_read"]],
)
async def test_unreadable_tools_call_params_are_invalid_params(node: Harness, params: Any) -> None:
    reply = await node.rpc("tools/call", params)
    assert error_of(reply) == (-32602, "invalid_params")


async def test_a_body_over_8_mib_is_refused_with_413(node: Harness) -> None:
    padding = "x" * (MAX_BODY + 10)
    body = json.dumps(
        request("tools/call", {"name": "inbox_capture", "arguments": {"text": padding}})
    )
    response = await node.post(None, raw=body.encode())
    assert response.status_code == 413
    assert response.json()["status"] == 413
    assert not list((node.data / "default" / "inbox").glob("*.md"))


async def test_a_streamed_body_over_the_limit_is_refused_without_a_length(node: Harness) -> None:
    async def chunks() -> Any:
        for _ in range(9):
            yield b" " * (1024 * 1024)

    response = await node.client.post(
        "/mcp",
        content=chunks(),
        headers={"Authorization": f"Bearer {node.default_token}"},
    )
    assert response.status_code == 413
    assert response.json()["error"] == "payload_too_large"


async def test_a_missing_protocol_version_header_means_2025_06_18(node: Harness) -> None:
    response = await node.post(request("ping"))
    assert response.status_code == 200
    assert response.json() == PONG


@pytest.mark.parametrize("announced", ["2025-06-18", "2025-11-25"])
async def test_a_supported_protocol_version_header_is_served(node: Harness, announced: str) -> None:
    response = await node.post(request("ping"), headers={"MCP-Protocol-Version": announced})
    assert response.status_code == 200
    assert response.json() == PONG


@pytest.mark.parametrize("announced", ["2026-07-28", "2024-11-05", "2025-03-26", "banana"])
async def test_an_unsupported_protocol_version_header_is_400_without_32022(
    node: Harness, announced: str
) -> None:
    response = await node.post(request("ping"), headers={"MCP-Protocol-Version": announced})
    assert response.status_code == 400
    code, name = error_of(response.json())
    assert code == -32600
    assert code != -32022
    assert name == "unsupported_protocol_version"


async def test_any_origin_passes_when_no_allow_list_is_set(node: Harness) -> None:
    response = await node.post(request("ping"), headers={"Origin": "https://evil.example"})
    assert response.status_code == 200
    assert response.json() == PONG


@pytest.mark.parametrize(
    ("origin", "status"),
    [
        ("https://app.example", 200),
        ("https://node-a.test", 200),
        ("https://center.test", 200),
        ("https://evil.example", 403),
        ("null", 403),
    ],
)
async def test_the_origin_allow_list_refuses_everything_else(
    start_node: NodeFactory, origin: str, status: int
) -> None:
    node = await start_node(allowed_origins=["https://app.example"])
    response = await node.post(request("ping"), headers={"Origin": origin})
    assert response.status_code == status
    if status == 403:
        assert response.json()["error"] == "forbidden_origin"


async def test_an_allow_list_with_a_star_allows_every_origin(start_node: NodeFactory) -> None:
    node = await start_node(allowed_origins="*")
    response = await node.post(request("ping"), headers={"Origin": "https://any.example"})
    assert response.status_code == 200
    assert response.json() == PONG


async def test_the_origin_is_checked_before_the_token(start_node: NodeFactory) -> None:
    node = await start_node(allowed_origins=["https://app.example"])
    response = await node.post(
        request("ping"), token="garbage", headers={"Origin": "https://evil.example"}
    )
    assert response.status_code == 403
    assert response.json()["error"] == "forbidden_origin"  # not the token's invalid_token


async def test_instructions_name_the_vaults_and_carry_their_conventions(
    start_node: NodeFactory,
) -> None:
    own = {".secondbrain/instructions.md": "Write in British English.\n"}
    node = await start_node(vaults={"team": own, "hidden": {"x.md": "# X\n"}})
    token = node.token(vaults=["default", "team"])
    text = (await node.rpc("initialize", INIT, token=token))["result"]["instructions"]
    assert "The default vault is default" in text
    assert "Vaults you can use: default, team." in text
    assert "## Vault team" in text
    assert "Write in British English." in text
    assert "hidden" not in text
    assert "content_hash" in text


async def test_instructions_for_a_read_only_token_say_nothing_changes(node: Harness) -> None:
    token = node.token("read", role="reader")
    text = (await node.rpc("initialize", INIT, token=token))["result"]["instructions"]
    assert "may only read" in text
    assert "note_edit" not in text


async def test_instructions_for_a_write_only_token_say_it_is_blind(node: Harness) -> None:
    token = node.token("write", role="editor")
    text = (await node.rpc("initialize", INIT, token=token))["result"]["instructions"]
    assert "may add but not read" in text
    assert "say nothing of what the vault holds" in text
    assert "note_search first" not in text


async def test_instructions_tell_a_caller_without_the_default_vault_to_name_one(
    start_node: NodeFactory,
) -> None:
    node = await start_node(vaults={"team": {"a.md": "# A\n"}})
    text = (await node.rpc("initialize", INIT, token=node.token(vaults=["team"])))["result"]
    assert "Pass `vault` with every call" in text["instructions"]


async def test_deeply_nested_json_is_a_parse_error_not_a_crash(node: Harness) -> None:
    response = await node.post(None, raw=b"[" * 100_000 + b"]" * 100_000)
    assert response.status_code == 400
    assert error_of(response.json()) == (-32700, "parse_error")


@pytest.mark.parametrize("tool", ["note_read", "note_create"])
async def test_a_lone_surrogate_in_an_argument_gets_a_clean_answer(
    node: Harness, tool: str
) -> None:
    # JSON lets a client write "\ud800"; whatever the tool says back must still be JSON.
    raw = (
        b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "'
        + tool.encode()
        + b'", "arguments": {"path": "x\\ud800y", "content": "c"}}}'
    )
    response = await node.post(None, raw=raw)
    assert response.status_code == 200
    reply = json.loads(response.content)
    assert reply["id"] == 7
    assert reply["result"]["isError"] is True
