"""What `tools/list` costs a client: the whole answer stays small, in a fixed order, with every
parameter described and of one JSON type."""

from __future__ import annotations

import json

import pytest

from vault_node.registry import TOOLS
from vault_node.testing import Harness

LIST_BUDGET = 32 * 1024
"""Clients start deferring or dropping tools above tens of KB; it was 39.5 KB."""


async def _listed(node: Harness) -> tuple[bytes, list[dict[str, object]]]:
    response = await node.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert response.status_code == 200
    return response.content, response.json()["result"]["tools"]


@pytest.mark.asyncio
async def test_the_owner_s_whole_tool_list_fits_in_32_kb(node: Harness) -> None:
    body, listed = await _listed(node)
    assert len(listed) == len(TOOLS)
    assert len(body) <= LIST_BUDGET, f"tools/list is {len(body)} bytes"


@pytest.mark.asyncio
async def test_the_list_comes_in_one_fixed_order(node: Harness) -> None:
    first, listed = await _listed(node)
    again, _ = await _listed(node)
    assert first == again
    assert [tool["name"] for tool in listed] == [tool.name for tool in TOOLS]


@pytest.mark.asyncio
async def test_every_listed_parameter_is_described_and_has_one_type(node: Harness) -> None:
    _, listed = await _listed(node)
    for tool in listed:
        properties = tool["inputSchema"]["properties"]  # type: ignore[index]
        for name, prop in properties.items():
            assert isinstance(prop["type"], str), f"{tool['name']}.{name}: {prop['type']}"
            assert len(prop["description"]) >= 10, f"{tool['name']}.{name}"
            if prop["type"] == "array":
                assert prop["items"] == {"type": "string"}


@pytest.mark.asyncio
async def test_list_parameters_still_take_one_comma_separated_string(node: Harness) -> None:
    found = await node.ok("note_search", {"tags": "ops,api"})
    assert [hit["path"] for hit in found["hits"]] == ["wiki/rate-limiting.md"]
    assert json.dumps(found)
