"""MCP prompts: each gathers what it needs through the tools, with the tools' rules."""

from __future__ import annotations

from typing import Any

import pytest

from vault_node.testing import Harness, NodeFactory


async def _get(node: Harness, name: str, arguments: dict[str, Any], **kw: Any) -> dict[str, Any]:
    reply: dict[str, Any] = await node.rpc(
        "prompts/get", {"name": name, "arguments": arguments}, **kw
    )
    return reply


def _texts(result: dict[str, Any]) -> str:
    return "\n".join(
        m["content"]["text"] for m in result["messages"] if m["content"]["type"] == "text"
    )


@pytest.mark.asyncio
async def test_the_prompts_are_listed_with_their_arguments(node: Harness) -> None:
    listed = (await node.rpc("prompts/list"))["result"]["prompts"]
    assert [p["name"] for p in listed] == ["daily_review", "meeting_capture", "what_do_i_know"]
    capture = listed[1]
    assert [(a["name"], a["required"]) for a in capture["arguments"]] == [
        ("title", True),
        ("notes", True),
        ("attendees", False),
        ("vault", False),
    ]
    assert all(a["description"] for p in listed for a in p["arguments"])


@pytest.mark.asyncio
async def test_the_daily_review_gathers_the_day_s_note_changes_and_open_tasks(
    node: Harness,
) -> None:
    result = (await _get(node, "daily_review", {"date": "2026-01-01"}))["result"]
    text = _texts(result)
    assert "Review my day, 2026-01-01, in vault default" in text
    assert "wiki/rate-limiting.md" in text  # changed since that day
    assert "- [ ] measure the burst size (wiki/rate-limiting.md:" in text
    (journal,) = [m for m in result["messages"] if m["content"]["type"] == "resource"]
    resource = journal["content"]["resource"]
    assert resource["uri"] == "secondbrain://default/journal/2026/2026-01-01.md"
    assert "New year planning." in resource["text"]


@pytest.mark.asyncio
async def test_a_meeting_capture_asks_for_an_inbox_note_with_links(node: Harness) -> None:
    result = (
        await _get(
            node,
            "meeting_capture",
            {"title": "rate limiting review", "notes": "agreed on 600/min", "attendees": "ana, bo"},
        )
    )["result"]
    text = _texts(result)
    assert "inbox_capture" in text
    assert "agreed on 600/min" in text
    assert "Attendees: ana, bo" in text
    assert "- wiki/rate-limiting.md — Rate limiting" in text


@pytest.mark.asyncio
async def test_what_do_i_know_searches_and_carries_the_best_notes(node: Harness) -> None:
    result = (await _get(node, "what_do_i_know", {"topic": "exponential backoff jitter"}))["result"]
    assert "What do I know about “exponential backoff jitter”?" in _texts(result)
    uris = [
        m["content"]["resource"]["uri"]
        for m in result["messages"]
        if m["content"]["type"] == "resource"
    ]
    assert uris[0] == "secondbrain://default/wiki/backoff.md"


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("name", "arguments", "fragment"),
    [
        ("daily_reveiw", {}, "did you mean 'daily_review'"),
        ("meeting_capture", {"title": "x"}, "missing required argument 'notes'"),
        ("what_do_i_know", {"topic": "x", "topik": "y"}, "unknown argument 'topik'"),
        ("what_do_i_know", {"topic": 5}, "must be a string"),
        ("daily_review", {"date": "yesterday-ish"}, "argument 'date' must be YYYY-MM-DD"),
        ("what_do_i_know", {"topic": "x", "vault": "nope"}, "unknown vault: nope"),
    ],
)
async def test_bad_prompt_calls_are_invalid_params_errors(
    node: Harness, name: str, arguments: dict[str, Any], fragment: str
) -> None:
    error = (await _get(node, name, arguments))["error"]
    assert error["code"] == -32602
    assert fragment in error["message"]


@pytest.mark.asyncio
async def test_a_write_only_token_is_offered_no_prompts_and_gets_none(
    start_node: NodeFactory,
) -> None:
    node = await start_node()
    token = node.token("write")
    assert (await node.rpc("prompts/list", token=token))["result"] == {"prompts": []}
    reply = await node.post(
        {"jsonrpc": "2.0", "id": 1, "method": "prompts/get",
         "params": {"name": "what_do_i_know", "arguments": {"topic": "backoff"}}},
        token=token,
    )  # fmt: skip
    assert reply.status_code == 403
    assert "Exponential" not in reply.text
