"""Notes as MCP resources: listed page by page, read as text/markdown or a blob, templates,
and the tools' rules (blind write-only tokens, vaults a token may not use)."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from vault_node.resources import PAGE
from vault_node.testing import Harness, NodeFactory


async def _list_all(node: Harness, token: str | None = None) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    params: dict[str, Any] = {}
    for _ in range(50):
        result = (await node.rpc("resources/list", params, token=token))["result"]
        found += result["resources"]
        if "nextCursor" not in result:
            return found
        params = {"cursor": result["nextCursor"]}
    raise AssertionError("the cursor never ended")


@pytest.mark.asyncio
async def test_every_note_and_attachment_is_listed_with_its_type(node: Harness) -> None:
    listed = {r["name"]: r for r in await _list_all(node)}
    assert "wiki/rate-limiting.md" in listed
    note = listed["wiki/rate-limiting.md"]
    assert note["uri"] == "secondbrain://default/wiki/rate-limiting.md"
    assert (note["title"], note["mimeType"]) == ("Rate limiting", "text/markdown")
    assert listed["attachments/diagram.png"]["mimeType"] == "image/png"


@pytest.mark.asyncio
async def test_the_list_is_paged_with_cursors_across_vaults(start_node: NodeFactory) -> None:
    many = {f"n/{i:03}.md": f"# {i}\n" for i in range(PAGE + 20)}
    node = await start_node(many, vaults={"second": {"x.md": "# X\n"}})
    first = (await node.rpc("resources/list"))["result"]
    assert len(first["resources"]) == PAGE
    every = await _list_all(node)
    assert len(every) == PAGE + 21
    assert len({r["uri"] for r in every}) == len(every)
    assert every[-1]["uri"] == "secondbrain://second/x.md"


@pytest.mark.asyncio
async def test_a_bad_cursor_is_an_invalid_params_error(node: Harness) -> None:
    reply = await node.rpc("resources/list", {"cursor": "not-a-cursor"})
    assert reply["error"]["code"] == -32602
    assert "nextCursor" in reply["error"]["message"]


@pytest.mark.asyncio
async def test_a_note_reads_as_markdown_with_its_frontmatter(node: Harness) -> None:
    uri = "secondbrain://default/wiki/backoff.md"
    contents = (await node.rpc("resources/read", {"uri": uri}))["result"]["contents"]
    assert contents == [
        {
            "uri": uri,
            "mimeType": "text/markdown",
            "text": (node.data / "default/wiki/backoff.md").read_text(),
        }
    ]


@pytest.mark.asyncio
async def test_an_attachment_reads_as_a_blob_of_its_type(node: Harness) -> None:
    uri = "secondbrain://default/attachments/diagram.png"
    (content,) = (await node.rpc("resources/read", {"uri": uri}))["result"]["contents"]
    assert content["mimeType"] == "image/png"
    assert base64.b64decode(content["blob"]) == b"\x89PNG\r\n\x1a\n fake image"


@pytest.mark.asyncio
async def test_an_attachment_over_the_response_limit_points_at_attachment_read(
    start_node: NodeFactory,
) -> None:
    node = await start_node({"big.png": b"\x89PNG" + b"0" * 70_000}, max_response_bytes=65_536)
    reply = await node.rpc("resources/read", {"uri": "secondbrain://default/big.png"})
    assert reply["error"]["data"]["code"] == "too_large"
    assert "attachment_read" in reply["error"]["message"]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("uri", "rpc_code", "code"),
    [
        ("secondbrain://default/wiki/missing.md", -32002, "not_found"),
        ("secondbrain://elsewhere/wiki/backoff.md", -32002, "not_found"),
        ("secondbrain://default/../outside.md", -32602, "invalid_path"),
        ("secondbrain://default/.git/config", -32602, "unreadable"),
        ("file:///etc/passwd", -32602, "invalid_params"),
        ("secondbrain://default/", -32602, "invalid_params"),
    ],
)
async def test_what_cannot_be_read_gets_a_clear_error(
    node: Harness, uri: str, rpc_code: int, code: str
) -> None:
    reply = await node.rpc("resources/read", {"uri": uri})
    assert (reply["error"]["code"], reply["error"]["data"]["code"]) == (rpc_code, code)
    assert "/work" not in reply["error"]["message"]
    assert "/tmp" not in reply["error"]["message"]


@pytest.mark.asyncio
async def test_a_vault_the_token_may_not_use_does_not_exist_for_it(
    start_node: NodeFactory,
) -> None:
    node = await start_node(vaults={"private": {"secret.md": "# S\n"}})
    token = node.token(vaults=["default"])
    assert all(r["uri"].startswith("secondbrain://default/") for r in await _list_all(node, token))
    hidden = await node.rpc(
        "resources/read", {"uri": "secondbrain://private/secret.md"}, token=token
    )
    missing = await node.rpc("resources/read", {"uri": "secondbrain://nope/secret.md"}, token=token)
    assert hidden["error"] == {**missing["error"], "message": hidden["error"]["message"]}
    assert hidden["error"]["message"].replace("private", "nope") == missing["error"]["message"]


@pytest.mark.asyncio
async def test_a_write_only_token_lists_nothing_and_reads_nothing(node: Harness) -> None:
    token = node.token("write")
    assert (await node.rpc("resources/list", token=token))["result"] == {"resources": []}
    templates = await node.rpc("resources/templates/list", token=token)
    assert templates["result"] == {"resourceTemplates": []}
    reply = await node.post(
        {"jsonrpc": "2.0", "id": 1, "method": "resources/read",
         "params": {"uri": "secondbrain://default/wiki/backoff.md"}},
        token=token,
    )  # fmt: skip
    assert reply.status_code == 403
    assert "Exponential" not in reply.text


@pytest.mark.asyncio
async def test_the_template_names_notes_by_vault_and_path(node: Harness) -> None:
    (template,) = (await node.rpc("resources/templates/list"))["result"]["resourceTemplates"]
    assert template["uriTemplate"] == "secondbrain://{vault}/{+path}"
    assert template["mimeType"] == "text/markdown"


@pytest.mark.asyncio
async def test_initialize_declares_resources_prompts_and_completions_without_subscriptions(
    node: Harness,
) -> None:
    result = (await node.rpc("initialize", {"protocolVersion": "2025-11-25"}))["result"]
    assert result["capabilities"]["resources"] == {"subscribe": False, "listChanged": False}
    assert result["capabilities"]["prompts"] == {"listChanged": False}
    assert result["capabilities"]["completions"] == {}


@pytest.mark.asyncio
async def test_a_result_about_a_note_carries_a_resource_link_to_it(node: Harness) -> None:
    read = await node.call("note_read", {"path": "wiki/backoff"})
    assert read["content"][1] == {
        "type": "resource_link",
        "uri": "secondbrain://default/wiki/backoff.md",
        "name": "wiki/backoff.md",
        "mimeType": "text/markdown",
    }
    put = await node.call(
        "attachment_put", {"path": "a/x.csv", "data": base64.b64encode(b"1").decode()}
    )
    assert put["content"][1]["uri"] == "secondbrain://default/a/x.csv"
    assert put["content"][1]["mimeType"] == "text/csv"


@pytest.mark.asyncio
async def test_no_link_for_a_dry_run_a_deletion_a_listing_or_a_blind_caller(node: Harness) -> None:
    results = [
        await node.call("note_create", {"path": "wiki/new", "dry_run": True}),
        await node.call("note_delete", {"path": "wiki/backoff"}),
        await node.call("note_list", {}),
        await node.call("inbox_capture", {"text": "x"}, token=node.token("write")),
    ]
    for result in results:
        assert not result["isError"]
        assert [block["type"] for block in result["content"]] == ["text"]
