"""completion/complete: vault names, recent days and note paths for the prompts and the
note template, only for a token that reads and only from vaults it may use."""

from __future__ import annotations

from typing import Any

import pytest

from vault_node.testing import Harness, NodeFactory

TEMPLATE = {"type": "ref/resource", "uri": "secondbrain://{vault}/{+path}"}


async def _complete(
    node: Harness, ref: dict[str, Any], name: str, value: str, **extra: Any
) -> dict[str, Any]:
    params = {"ref": ref, "argument": {"name": name, "value": value}, **extra}
    reply: dict[str, Any] = await node.rpc("completion/complete", params)
    return reply


@pytest.mark.asyncio
async def test_a_template_path_completes_to_the_notes_under_the_prefix(node: Harness) -> None:
    found = (await _complete(node, TEMPLATE, "path", "wiki/"))["result"]["completion"]
    assert found == {
        "values": ["wiki/backoff.md", "wiki/rate-limiting.md"],
        "total": 2,
        "hasMore": False,
    }


@pytest.mark.asyncio
async def test_paths_come_from_the_vault_named_in_the_context(start_node: NodeFactory) -> None:
    node = await start_node(vaults={"team": {"plans/q1.md": "# Q1\n"}})
    context = {"context": {"arguments": {"vault": "team"}}}
    found = (await _complete(node, TEMPLATE, "path", "pl", **context))["result"]
    assert found["completion"]["values"] == ["plans/q1.md"]


@pytest.mark.asyncio
async def test_many_paths_are_cut_at_100_and_say_there_are_more(start_node: NodeFactory) -> None:
    node = await start_node({f"n/{i:03}.md": "# n\n" for i in range(150)})
    found = (await _complete(node, TEMPLATE, "path", "n/"))["result"]["completion"]
    assert len(found["values"]) == 100
    assert found["hasMore"] is True


@pytest.mark.asyncio
async def test_vault_names_complete_for_prompts_and_the_template(start_node: NodeFactory) -> None:
    node = await start_node(vaults={"team": {"a.md": "# A\n"}, "taxes": {"b.md": "# B\n"}})
    prompt = {"type": "ref/prompt", "name": "what_do_i_know"}
    assert (await _complete(node, prompt, "vault", "t"))["result"]["completion"]["values"] == [
        "taxes",
        "team",
    ]
    token = node.token(vaults=["default", "team"])
    reply = await node.rpc(
        "completion/complete",
        {"ref": TEMPLATE, "argument": {"name": "vault", "value": "t"}},
        token=token,
    )
    assert reply["result"]["completion"]["values"] == ["team"]


@pytest.mark.asyncio
async def test_a_day_completes_to_today_and_the_recent_days(node: Harness) -> None:
    prompt = {"type": "ref/prompt", "name": "daily_review"}
    values = (await _complete(node, prompt, "date", ""))["result"]["completion"]["values"]
    assert values[0] == "today"
    assert len(values) == 15
    assert values[1] > values[2]


@pytest.mark.asyncio
async def test_free_text_arguments_have_no_suggestions(node: Harness) -> None:
    prompt = {"type": "ref/prompt", "name": "what_do_i_know"}
    assert (await _complete(node, prompt, "topic", "ra"))["result"]["completion"]["values"] == []


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("ref", "name"),
    [
        ({"type": "ref/prompt", "name": "nope"}, "vault"),
        ({"type": "ref/prompt", "name": "daily_review"}, "topic"),
        ({"type": "ref/resource", "uri": "test://template/{id}"}, "id"),
        ({"type": "ref/other"}, "x"),
    ],
)
async def test_an_unknown_reference_is_invalid_params(
    node: Harness, ref: dict[str, Any], name: str
) -> None:
    assert (await _complete(node, ref, name, ""))["error"]["code"] == -32602


@pytest.mark.asyncio
async def test_a_write_only_token_gets_no_completions(node: Harness) -> None:
    reply = await node.post(
        {"jsonrpc": "2.0", "id": 1, "method": "completion/complete",
         "params": {"ref": TEMPLATE, "argument": {"name": "path", "value": "wiki/"}}},
        token=node.token("write"),
    )  # fmt: skip
    assert reply.status_code == 403
    assert "backoff" not in reply.text
