"""Any node answers any vault (vault_node.forward, vault_node.directory), in-process: which
calls go elsewhere, what the caller is told when they cannot, tokens for the one address,
and the metadata by host. Forwarding to a live node is tests/deploy/test_one_address.py."""

from __future__ import annotations

from typing import Any

import pytest

from vault_node.directory import Entry, deployment_url, parse
from vault_node.forward import FORWARDED, named_vault
from vault_node.testing import RESOURCE, Harness, NodeFactory, free_port

ONE = "https://brain.test/mcp"


def closed_url() -> str:
    return f"http://127.0.0.1:{free_port()}/mcp"  # nothing listens there


async def one_address_node(
    start_node: NodeFactory, metrics: bool = False, **entries: tuple[str, ...]
) -> Harness:
    harness = await start_node(mcp_url=ONE, metrics=metrics)
    harness.app.state.node.directory.replace(
        Entry(vault, nodes) for vault, nodes in entries.items()
    )
    return harness


def tool_message(tool: str, arguments: dict[str, Any], ident: int = 1) -> dict[str, Any]:
    params = {"name": tool, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": params}


def test_the_vault_a_message_names_and_whether_it_writes() -> None:
    assert named_vault(tool_message("note_read", {"vault": "far", "path": "x"}), "d") == (
        "far",
        False,
    )
    assert named_vault(tool_message("note_create", {"path": "x"}), "d") == ("d", True)
    assert named_vault(tool_message("vault_list", {}), "d") is None
    read = {"jsonrpc": "2.0", "id": 1, "method": "resources/read"}
    assert named_vault({**read, "params": {"uri": "secondbrain://far/a.md"}}, "d") == (
        "far",
        False,
    )
    assert named_vault({**read, "params": {"uri": "file:///etc/passwd"}}, "d") is None
    notification = tool_message("note_read", {"vault": "far"})
    del notification["id"]
    assert named_vault(notification, "d") is None
    complete = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "completion/complete",
        "params": {"argument": {"name": "path", "value": "a"}, "context": {"arguments": {}}},
    }
    complete["params"]["context"]["arguments"]["vault"] = "far"
    assert named_vault(complete, "d") == ("far", False)
    complete["params"]["argument"]["name"] = "vault"
    assert named_vault(complete, "d") is None


def test_the_directory_keeps_only_valid_entries() -> None:
    found = parse(
        [
            {"vault": "team", "nodes": ["HTTPS://Node-A.example/mcp/"], "epoch": 3},
            {"vault": "../etc", "nodes": ["https://a.example/mcp"]},
            {"vault": "ops", "nodes": []},
            {"vault": "ops", "nodes": ["ftp://a.example/mcp"]},
            {"vault": "ops", "nodes": ["https://a.example/mcp"], "epoch": -1},
            "garbage",
        ]
    )
    assert found == [Entry("team", ("https://node-a.example/mcp",), 3)]
    assert parse({"team": []}) == []
    assert deployment_url("https://Brain.example/mcp") == "https://brain.example/mcp"
    assert deployment_url("javascript:alert(1)") is None


@pytest.mark.asyncio
async def test_a_token_for_the_one_address_is_taken(start_node: NodeFactory) -> None:
    node = await one_address_node(start_node)
    listed = await node.ok("vault_list", token=node.token(audience=ONE))
    assert [row["name"] for row in listed["vaults"]] == ["default"]
    other = await node.post(
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        token=node.token(audience="https://elsewhere.test/mcp"),
    )
    assert other.status_code == 401


@pytest.mark.asyncio
async def test_without_a_one_address_a_token_for_it_is_refused(start_node: NodeFactory) -> None:
    node = await start_node()
    answer = await node.post(
        {"jsonrpc": "2.0", "id": 1, "method": "ping"}, token=node.token(audience=ONE)
    )
    assert answer.status_code == 401


@pytest.mark.asyncio
async def test_vault_list_shows_the_remote_vaults_the_token_reaches(
    start_node: NodeFactory,
) -> None:
    node = await one_address_node(start_node, far=(closed_url(),), hidden=(closed_url(),))
    token = node.token(vaults=["default", "far"], audience=ONE)
    listed = await node.ok("vault_list", token=token)
    assert [(row["name"], row.get("remote")) for row in listed["vaults"]] == [
        ("default", None),
        ("far", True),
    ]
    everything = await node.ok("vault_list")
    assert [row["name"] for row in everything["vaults"]] == ["default", "far", "hidden"]


@pytest.mark.asyncio
async def test_without_a_one_address_nothing_is_forwarded(start_node: NodeFactory) -> None:
    node = await start_node()
    node.app.state.node.directory.replace([Entry("far", (closed_url(),))])
    assert [row["name"] for row in (await node.ok("vault_list"))["vaults"]] == ["default"]
    code, _ = await node.fails("note_read", {"vault": "far", "path": "a"})
    assert code == "unknown_vault"


@pytest.mark.asyncio
async def test_a_vault_whose_node_is_down_answers_unavailable(start_node: NodeFactory) -> None:
    node = await one_address_node(start_node, True, far=(closed_url(), closed_url()))
    token = node.token(audience=ONE)
    code, message = await node.fails("note_read", {"vault": "far", "path": "a"}, token=token)
    assert code == "unavailable"
    assert "none of its nodes answers now; retry in a few seconds" in message
    code, message = await node.fails(
        "note_create", {"vault": "far", "path": "a", "content": "x"}, token=token
    )
    assert (code, "its primary does not answer now" in message) == ("unavailable", True)
    scraped = (await node.client.get("/metrics")).text
    assert 'secondbrain_forwarded_calls_total{outcome="unavailable"} 2.0' in scraped


@pytest.mark.asyncio
async def test_a_write_to_a_replica_goes_to_the_primary(start_node: NodeFactory) -> None:
    node = await one_address_node(start_node)
    node.app.state.node.directory.replace([Entry("default", (closed_url(), RESOURCE), 4)])
    token = node.token(audience=ONE)
    read = await node.ok("note_list", {}, token=token)  # a replica serves reads itself
    assert read["vault"] == "default"
    code, _ = await node.fails("note_create", {"path": "new", "content": "x"}, token=token)
    assert code == "unavailable"
    assert not (node.data / "default" / "new.md").exists()


@pytest.mark.asyncio
async def test_a_copy_of_the_same_name_without_a_lease_takes_its_own_writes(
    start_node: NodeFactory,
) -> None:
    node = await one_address_node(start_node, default=(closed_url(), RESOURCE))
    made = await node.ok(
        "note_create", {"path": "new", "content": "x"}, token=node.token(audience=ONE)
    )
    assert made["path"] == "new.md"


@pytest.mark.asyncio
async def test_a_forwarded_request_is_not_forwarded_again(start_node: NodeFactory) -> None:
    node = await one_address_node(start_node, far=(closed_url(),))
    answer = await node.post(
        tool_message("note_read", {"vault": "far", "path": "a"}),
        token=node.token(audience=ONE),
        headers={FORWARDED: "https://node-b.test/mcp"},
    )
    result = answer.json()["result"]
    assert result["_meta"]["secondbrain/error"]["code"] == "misdirected"


@pytest.mark.asyncio
async def test_a_token_for_this_node_only_is_told_to_ask_for_the_one_address(
    start_node: NodeFactory,
) -> None:
    node = await one_address_node(start_node, far=(closed_url(),))
    code, message = await node.fails("note_read", {"vault": "far", "path": "a"})
    assert code == "wrong_audience"
    assert ONE in message


@pytest.mark.asyncio
async def test_no_vault_the_token_does_not_name_is_forwarded(start_node: NodeFactory) -> None:
    node = await one_address_node(start_node, far=(closed_url(),))
    token = node.token(vaults=["default"], audience=ONE)
    code, _ = await node.fails("note_read", {"vault": "far", "path": "a"}, token=token)
    assert code == "unknown_vault"  # the same answer as for a vault that does not exist
    reader = node.token("read", role="reader", audience=ONE)
    refused = await node.post(
        tool_message("note_create", {"vault": "far", "path": "a", "content": "x"}), token=reader
    )
    assert refused.status_code == 403


@pytest.mark.asyncio
async def test_a_batch_answers_here_what_it_can_and_forwards_the_rest(
    start_node: NodeFactory,
) -> None:
    node = await one_address_node(start_node, far=(closed_url(),))
    batch = [
        tool_message("note_list", {}, 1),
        tool_message("note_read", {"vault": "far", "path": "a"}, 2),
    ]
    answer = await node.post(batch, token=node.token(audience=ONE))
    replies = {reply["id"]: reply["result"] for reply in answer.json()}
    assert replies[1]["isError"] is False
    assert replies[2]["_meta"]["secondbrain/error"]["code"] == "unavailable"


@pytest.mark.asyncio
async def test_the_metadata_names_the_address_the_client_used(start_node: NodeFactory) -> None:
    node = await one_address_node(start_node)
    path = "/.well-known/oauth-protected-resource"
    own = (await node.client.get(path)).json()
    one = (await node.client.get(path, headers={"Host": "brain.test"})).json()
    port = (await node.client.get(path, headers={"Host": "brain.test:443"})).json()
    other = (await node.client.get(path, headers={"Host": "brain.test:8443"})).json()
    assert (own["resource"], one["resource"], port["resource"]) == (RESOURCE, ONE, ONE)
    assert other["resource"] == RESOURCE
    refused = await node.client.post("/mcp", json={}, headers={"Host": "brain.test"})
    challenge = refused.headers["www-authenticate"]
    assert (
        'resource_metadata="https://brain.test/.well-known/oauth-protected-resource"' in challenge
    )


@pytest.mark.asyncio
async def test_initialize_and_completions_name_the_remote_vaults_too(
    start_node: NodeFactory,
) -> None:
    node = await one_address_node(start_node, far=(closed_url(),), hidden=(closed_url(),))
    token = node.token(vaults=["default", "far"], audience=ONE)
    started = await node.rpc("initialize", {"protocolVersion": "2025-06-18"}, token=token)
    assert "Vaults you can use: default, far." in started["result"]["instructions"]
    ref = {"type": "ref/resource", "uri": "secondbrain://{vault}/{+path}"}
    asked = {"ref": ref, "argument": {"name": "vault", "value": ""}}
    completed = await node.rpc("completion/complete", asked, token=token)
    assert completed["result"]["completion"]["values"] == ["default", "far"]


@pytest.mark.asyncio
async def test_resources_list_says_when_a_node_holding_a_vault_is_down(
    start_node: NodeFactory,
) -> None:
    node = await one_address_node(start_node, zzz=(closed_url(),))
    token = node.token(audience=ONE)
    reply = await node.rpc("resources/list", {}, token=token)
    assert reply["error"]["data"]["code"] == "unavailable"
    alone = node.token(vaults=["default"], audience=ONE)
    assert (await node.rpc("resources/list", {}, token=alone))["result"]["resources"]
