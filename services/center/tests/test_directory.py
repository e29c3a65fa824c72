"""The one address (docs/design.md#one-address) at the center: every token names it, it is
a resource a token may be asked for, and the heartbeat answer carries it with the directory
of where every vault lives."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import pytest_asyncio

from center import testing as t

ONE = "https://brain.test/mcp"
NODE_B = "https://node-b.test/mcp"


@pytest_asyncio.fixture
async def one_address(data_dir: Path, clock: t.Clock) -> AsyncIterator[httpx.AsyncClient]:
    """A center (SQLite) whose `mcp_url` is the one address."""
    async with t.running(t.settings(data_dir, mcp_url=ONE), clock) as app, t.client(app) as http:
        yield http


async def node(http: httpx.AsyncClient, node_id: str, resource: str, vaults: list[str]) -> None:
    made = await http.post("/v1/nodes", json={"id": node_id, "resource": resource}, headers=t.ADMIN)
    assert made.status_code == 201, made.text
    headers = t.bearer(made.json()["credential"])
    answer = await http.post("/v1/nodes/heartbeat", json={"vaults": vaults}, headers=headers)
    assert answer.status_code == 200, answer.text


@pytest.mark.asyncio
async def test_every_token_names_the_one_address(
    one_address: httpx.AsyncClient, clock: t.Clock
) -> None:
    await node(one_address, "node-b", NODE_B, ["team"])
    credential = await t.add_member(one_address, "alice", ["team"], role="owner", scope="all")
    held = await one_address.post("/v1/tokens", json={}, headers=t.bearer(credential))
    named = await one_address.post(
        "/v1/tokens", json={"resource": [t.RESOURCE]}, headers=t.bearer(credential)
    )
    alone = await one_address.post(
        "/v1/tokens", json={"resource": [ONE]}, headers=t.bearer(credential)
    )
    granted = await one_address.post("/v1/grants", json={"vault": "team"}, headers=t.ADMIN)
    assert held.json()["audience"] == sorted([ONE, NODE_B])
    assert named.json()["audience"] == sorted([ONE, t.RESOURCE])
    assert alone.json()["audience"] == [ONE]
    verifier = await t.verifier(one_address, clock, audience=ONE)
    for answer in (held, named, alone, granted):
        assert answer.status_code == 201, answer.text
        assert verifier.verify(answer.json()["token"]).vaults == ("team",)


@pytest.mark.asyncio
async def test_without_it_tokens_name_the_nodes_only(
    client: httpx.AsyncClient,
) -> None:
    await node(client, "node-b", NODE_B, ["team"])
    credential = await t.add_member(client, "alice", ["team"])
    held = await client.post("/v1/tokens", json={}, headers=t.bearer(credential))
    assert held.json()["audience"] == [NODE_B]
    refused = await client.post(
        "/v1/tokens", json={"resource": [ONE]}, headers=t.bearer(credential)
    )
    assert refused.status_code == 400


@pytest.mark.asyncio
async def test_the_heartbeat_answer_says_where_every_vault_lives(
    one_address: httpx.AsyncClient,
) -> None:
    await node(one_address, "node-b", NODE_B, ["team", "ops"])
    made = await one_address.post(
        "/v1/nodes", json={"id": "node-a", "resource": t.RESOURCE}, headers=t.ADMIN
    )
    headers = t.bearer(made.json()["credential"])
    answer = await one_address.post(
        "/v1/nodes/heartbeat", json={"vaults": ["team", "own"]}, headers=headers
    )
    assert answer.json()["mcp_url"] == ONE
    assert answer.json()["directory"] == [
        {"vault": "ops", "nodes": [NODE_B], "epoch": None},
        {"vault": "own", "nodes": [t.RESOURCE], "epoch": None},
        {"vault": "team", "nodes": [t.RESOURCE, NODE_B], "epoch": None},
    ]


@pytest.mark.asyncio
async def test_an_unchanged_directory_is_not_sent_again(one_address: httpx.AsyncClient) -> None:
    """The answer carries the directory's version; a node that sends it back gets no
    directory (null) until a vault appears, moves or changes epoch, then the whole new one."""
    await node(one_address, "node-b", NODE_B, ["team"])
    made = await one_address.post(
        "/v1/nodes", json={"id": "node-a", "resource": t.RESOURCE}, headers=t.ADMIN
    )
    headers = t.bearer(made.json()["credential"])

    async def beat(**extra: object) -> dict[str, object]:
        body = {"vaults": ["own"], **extra}
        answer = await one_address.post("/v1/nodes/heartbeat", json=body, headers=headers)
        assert answer.status_code == 200, answer.text
        found: dict[str, object] = answer.json()
        return found

    first = await beat()
    version = first["directory_version"]
    assert isinstance(first["directory"], list)
    assert len(first["directory"]) == 2
    again = await beat(directory_version=version)
    assert again["directory"] is None
    assert again["directory_version"] == version
    assert (await beat(directory_version="0" * 32))["directory"] == first["directory"]
    await node(one_address, "node-c", "https://node-c.test/mcp", ["new"])
    changed = await beat(directory_version=version)
    assert changed["directory_version"] != version
    assert isinstance(changed["directory"], list)
    assert [entry["vault"] for entry in changed["directory"]] == ["new", "own", "team"]


@pytest.mark.asyncio
@pytest.mark.parametrize("version", ["", "G" * 32, "a" * 31, "a" * 33, 7, ["a" * 32]])
async def test_a_malformed_directory_version_is_refused(
    one_address: httpx.AsyncClient, version: object
) -> None:
    made = await one_address.post(
        "/v1/nodes", json={"id": "node-a", "resource": t.RESOURCE}, headers=t.ADMIN
    )
    answer = await one_address.post(
        "/v1/nodes/heartbeat",
        json={"vaults": [], "directory_version": version},
        headers=t.bearer(made.json()["credential"]),
    )
    assert answer.status_code == 422, answer.text
