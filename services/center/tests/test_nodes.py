"""Nodes and placement: registration (credential shown once), node-only heartbeats,
checkpoint mismatches logged and audited, `/v1/vaults` per caller, the default `aud`
of grants and tokens, and removal."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from center import audit as audit_module
from center import directory, nodes
from center import testing as t
from center.log import configure_logging

NODE_A = "https://node-a.test/mcp"
NODE_B = "https://node-b.test/mcp"


def assert_error_shape(response: httpx.Response, status: int, code: str) -> None:
    """The center's one error body (as `test_app` checks it) with this status and code."""
    assert response.status_code == status, response.text
    assert response.json() == {
        "error": {"code": code, "message": response.json()["error"]["message"]}
    }


async def add_node(http: httpx.AsyncClient, node_id: str = "a", resource: str = NODE_A) -> str:
    response = await http.post(
        "/v1/nodes", json={"id": node_id, "resource": resource}, headers=t.ADMIN
    )
    assert response.status_code == 201, response.text
    credential: str = response.json()["credential"]
    return credential


async def beat(http: httpx.AsyncClient, credential: str, **body: Any) -> httpx.Response:
    return await http.post("/v1/nodes/heartbeat", json=body, headers=t.bearer(credential))


async def audit_actions(http: httpx.AsyncClient) -> list[dict[str, Any]]:
    lines = (await http.get("/v1/audit", headers=t.ADMIN)).text.splitlines()
    return [json.loads(line) for line in lines]


async def head(http: httpx.AsyncClient) -> dict[str, Any]:
    return (await audit_actions(http))[-1]


@pytest.fixture
def logs() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    configure_logging("info", stream)
    yield stream
    configure_logging("info")


# ---------------------------------------------------------------- registration


@pytest.mark.asyncio
async def test_registration_shows_the_credential_once(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/v1/nodes", json={"id": "a", "resource": NODE_A + "/"}, headers=t.ADMIN
    )
    assert response.status_code == 201
    assert response.headers["Cache-Control"] == "no-store"
    created = response.json()
    assert created["credential"].startswith("sbn_")
    assert (created["id"], created["resource"], created["last_seen"]) == ("a", NODE_A, None)
    listed = await client.get("/v1/nodes", headers=t.ADMIN)
    assert [n["id"] for n in listed.json()["nodes"]] == ["a"]
    assert created["credential"] not in listed.text
    assert "credential" not in listed.json()["nodes"][0]


@pytest.mark.asyncio
async def test_registration_refuses_bad_ids_urls_and_duplicates(
    client: httpx.AsyncClient,
) -> None:
    await add_node(client)
    member = await t.add_member(client, "olga", role="owner", scope="all")
    cases = [
        ({"id": "a b", "resource": NODE_B}, t.ADMIN, 400, "invalid_argument"),
        ({"id": "sbn_x", "resource": NODE_B}, t.ADMIN, 400, "invalid_argument"),
        ({"id": "b", "resource": "http://node-b.test/mcp"}, t.ADMIN, 400, "invalid_argument"),
        ({"id": "a", "resource": NODE_B}, t.ADMIN, 409, "exists"),
        ({"id": "b", "resource": NODE_A}, t.ADMIN, 409, "conflict"),
        ({"id": "b", "resource": NODE_B}, t.bearer(member), 403, "forbidden"),
        ({"id": "b", "resource": NODE_B}, {}, 401, "unauthorized"),
    ]
    for body, headers, status, code in cases:
        assert_error_shape(await client.post("/v1/nodes", json=body, headers=headers), status, code)
    loopback = {"id": "dev", "resource": "http://127.0.0.1:8765/mcp"}
    assert (await client.post("/v1/nodes", json=loopback, headers=t.ADMIN)).status_code == 201


@pytest.mark.asyncio
async def test_only_a_node_credential_may_send_a_heartbeat(client: httpx.AsyncClient) -> None:
    node = await add_node(client)
    member = await t.add_member(client, "olga", role="owner", scope="all")
    for headers in (
        {},
        t.bearer("sbn_" + "x" * 43),
        t.bearer(node + "x"),
        t.ADMIN,
        t.bearer(member),
    ):
        response = await client.post("/v1/nodes/heartbeat", json={}, headers=headers)
        assert_error_shape(response, 401, "unauthorized")
        assert response.headers["WWW-Authenticate"] == "Bearer"
    for path in ("/v1/session", "/v1/members", "/v1/vaults"):
        assert_error_shape(await client.get(path, headers=t.bearer(node)), 401, "unauthorized")


# ---------------------------------------------------------------- heartbeat


@pytest.mark.asyncio
async def test_a_heartbeat_records_what_the_node_reports(
    client: httpx.AsyncClient, clock: t.Clock
) -> None:
    node = await add_node(client)
    feed = (await client.get("/v1/revocations")).json()
    last = await head(client)
    clock.advance(30)
    checkpoint = {"seq": last["seq"], "hash": last["hash"]}
    body = {"vaults": ["team", "ops", "team"], "revocation_seq": feed["seq"]}
    answer = await beat(client, node, **body, audit_checkpoint=checkpoint)
    assert answer.status_code == 200, answer.text
    where = [
        {"vault": "ops", "nodes": [NODE_A], "epoch": None},
        {"vault": "team", "nodes": [NODE_A], "epoch": None},
    ]
    assert answer.json() == {
        "node": "a",
        "placements": [],
        "revocation_seq": feed["seq"],
        "checkpoint_ok": True,
        "mcp_url": None,
        "directory": where,
        "directory_version": directory.version(where),
    }
    (listed,) = (await client.get("/v1/nodes", headers=t.ADMIN)).json()["nodes"]
    assert listed["vaults"] == ["ops", "team"]
    assert listed["last_seen"] == int(clock())
    assert listed["revocation_seq"] == feed["seq"]
    assert (listed["checkpoint"], listed["checkpoint_ok"]) == (checkpoint, True)


@pytest.mark.asyncio
async def test_a_heartbeat_refuses_bad_vault_names(client: httpx.AsyncClient) -> None:
    node = await add_node(client)
    for vaults in (["*"], ["Team"], ["../x"]):
        assert_error_shape(await beat(client, node, vaults=vaults), 400, "invalid_argument")
    bad_hash = {"seq": 1, "hash": "z" * 64}
    assert_error_shape(await beat(client, node, audit_checkpoint=bad_hash), 422, "invalid_request")


@pytest.mark.asyncio
async def test_a_checkpoint_the_chain_lacks_is_logged_every_time_and_audited_once(
    client: httpx.AsyncClient, logs: io.StringIO
) -> None:
    node = await add_node(client)
    last = await head(client)
    ahead = {"seq": last["seq"] + 5, "hash": "a" * 64}
    for _ in range(2):
        answer = await beat(client, node, audit_checkpoint=ahead)
        assert answer.json()["checkpoint_ok"] is False
    events = [json.loads(line) for line in logs.getvalue().splitlines()]
    loud = [e for e in events if e["event"] == "node.checkpoint_mismatch"]
    assert len(loud) == 2
    assert {e["level"] for e in loud} == {"error"}
    assert (loud[0]["node"], loud[0]["node_seq"]) == ("a", ahead["seq"])
    recorded = [r for r in await audit_actions(client) if r["action"].startswith("node.check")]
    assert len(recorded) == 1
    assert (recorded[0]["action"], recorded[0]["subject"]) == ("node.checkpoint_mismatch", "a")


@pytest.mark.asyncio
async def test_a_forked_hash_at_a_known_seq_is_a_mismatch(client: httpx.AsyncClient) -> None:
    node = await add_node(client)
    first = (await audit_actions(client))[0]
    forked = {"seq": first["seq"], "hash": "0" * 63 + "1"}
    assert (await beat(client, node, audit_checkpoint=forked)).json()["checkpoint_ok"] is False
    held = {"seq": first["seq"], "hash": first["hash"]}
    assert (await beat(client, node, audit_checkpoint=held)).json()["checkpoint_ok"] is True
    actions = [r["action"] for r in await audit_actions(client)]
    assert actions.count("node.checkpoint_mismatch") == 1


@pytest.mark.asyncio
async def test_an_old_checkpoint_is_found_beyond_the_in_memory_window(
    settings: Any, clock: t.Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(audit_module, "RECENT", 2)
    async with t.running(settings, clock) as app, t.client(app) as http:
        node = await add_node(http)
        for name in ("m1", "m2", "m3"):
            await t.add_member(http, name)
        first = (await audit_actions(http))[0]
        good = {"seq": first["seq"], "hash": first["hash"]}
        assert (await beat(http, node, audit_checkpoint=good)).json()["checkpoint_ok"] is True
        bad = {"seq": first["seq"] + 1, "hash": first["hash"]}
        assert (await beat(http, node, audit_checkpoint=bad)).json()["checkpoint_ok"] is False


@pytest.mark.asyncio
async def test_a_node_ahead_of_the_feed_is_logged(
    client: httpx.AsyncClient, logs: io.StringIO
) -> None:
    node = await add_node(client)
    answer = await beat(client, node, revocation_seq=1000)
    assert answer.json()["revocation_seq"] < 1000
    assert '"event": "node.revocation_ahead"' in logs.getvalue()


@pytest.mark.asyncio
async def test_heartbeats_go_on_while_changes_are_locked(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    node = await add_node(client)
    app.state.center.store.locked = "test"
    accepted = await beat(client, node, vaults=["team"])
    assert (accepted.status_code, accepted.json()["node"]) == (200, "a"), accepted.text
    refused = await client.post("/v1/nodes", json={"id": "b", "resource": NODE_B}, headers=t.ADMIN)
    assert_error_shape(refused, 503, "restart_required")
    (listed,) = (await client.get("/v1/nodes", headers=t.ADMIN)).json()["nodes"]
    assert (listed["vaults"], listed["last_seen"] is not None) == (["team"], True)


# ---------------------------------------------------------------- placement


@pytest.mark.asyncio
async def test_a_placement_comes_back_until_the_node_reports_the_vault(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    node = await add_node(client)
    async with app.state.center.store.change() as work:
        await nodes.place(work, "alice", "a")
    assert (await beat(client, node, vaults=["team"])).json()["placements"] == ["alice"]
    assert (await beat(client, node, vaults=["team", "alice"])).json()["placements"] == []
    (listed,) = (await client.get("/v1/nodes", headers=t.ADMIN)).json()["nodes"]
    assert listed["placements"] == ["alice"]
    placed = [r for r in await audit_actions(client) if r["action"] == "node.place"]
    assert [(r["vault"], r["subject"]) for r in placed] == [("alice", "a")]


@pytest.mark.asyncio
async def test_a_replica_is_no_placement_for_its_node_to_create(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    node_a, node_b = await add_node(client), await add_node(client, "b", NODE_B)
    async with app.state.center.store.change() as work:
        await nodes.place(work, "alice", "a")
    assert (await beat(client, node_a, vaults=[])).json()["placements"] == ["alice"]
    # Node B holds alice's replica, created by the primary's first push: a vault it made
    # itself on a tool call would be one of its own, never to take the primary's commits.
    assert (await beat(client, node_b, vaults=[])).json()["placements"] == []
    listed = (await client.get("/v1/nodes", headers=t.ADMIN)).json()["nodes"]
    assert {n["id"]: n["placements"] for n in listed} == {"a": ["alice"], "b": ["alice"]}


@pytest.mark.asyncio
async def test_the_vault_directory_shows_each_caller_its_vaults(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    node_a, node_b = await add_node(client), await add_node(client, "b", NODE_B)
    await beat(client, node_a, vaults=["team", "ops"])
    await beat(client, node_b, vaults=["lab"])
    async with app.state.center.store.change() as work:
        await nodes.place(work, "fresh", "b")
    alice = await t.add_member(client, "alice", ["team", "solo"])
    everyone = await t.add_member(client, "root", ["*"], role="owner", scope="all")

    async def directory(headers: dict[str, str]) -> dict[str, tuple[str | None, bool]]:
        listed = (await client.get("/v1/vaults", headers=headers)).json()["vaults"]
        return {v["name"]: (v["mcp_url"], v["reported"]) for v in listed}

    assert await directory(t.bearer(alice)) == {"solo": (None, False), "team": (NODE_A, True)}
    expected = {
        "fresh": (NODE_B, False),
        "lab": (NODE_B, True),
        "ops": (NODE_A, True),
        "team": (NODE_A, True),
    }
    assert await directory(t.ADMIN) == expected
    assert await directory(t.bearer(everyone)) == expected
    assert_error_shape(await client.get("/v1/vaults"), 401, "unauthorized")


# ---------------------------------------------------------------- default audience


@pytest.mark.asyncio
async def test_grants_and_tokens_default_to_the_node_holding_the_vault(
    client: httpx.AsyncClient, clock: t.Clock
) -> None:
    node = await add_node(client)
    owner = await t.add_member(client, "olga", ["team"], role="owner", scope="all")
    unplaced = await client.post("/v1/grants", json={"vault": "team"}, headers=t.ADMIN)
    assert_error_shape(unplaced, 400, "invalid_argument")
    await beat(client, node, vaults=["team"])
    grant = await client.post("/v1/grants", json={"vault": "team"}, headers=t.ADMIN)
    assert grant.status_code == 201, grant.text
    assert grant.json()["audience"] == [NODE_A]
    verifier = await t.verifier(client, clock, audience=NODE_A)
    assert verifier.verify(grant.json()["token"])
    token = await client.post("/v1/tokens", json={}, headers=t.bearer(owner))
    assert token.json()["audience"] == [NODE_A]
    explicit = {"vault": "team", "resource": [NODE_B]}
    unknown = await client.post("/v1/grants", json=explicit, headers=t.ADMIN)
    assert_error_shape(unknown, 400, "invalid_target")
    assert NODE_B in unknown.json()["error"]["message"]
    await add_node(client, "b", NODE_B)
    named = await client.post("/v1/grants", json=explicit, headers=t.ADMIN)
    assert named.json()["audience"] == [NODE_B]
    elsewhere = await client.post("/v1/grants", json={"vault": "lab"}, headers=t.ADMIN)
    assert_error_shape(elsewhere, 400, "invalid_argument")
    assert elsewhere.json()["error"]["message"] == (
        "vault: no node reports vault 'lab'; known vaults: team"
    )


@pytest.mark.asyncio
async def test_a_claim_defaults_to_the_node_holding_the_vault(client: httpx.AsyncClient) -> None:
    await beat(client, await add_node(client), vaults=["team"])
    rita = await t.add_member(client, "rita", ["team"], role="editor", scope="rw")
    asked = await client.post("/v1/requests", json={"vault": "team"}, headers=t.bearer(rita))
    request_id = asked.json()["id"]
    await client.post(f"/v1/requests/{request_id}/approve", headers=t.ADMIN)
    claimed = await client.post(f"/v1/requests/{request_id}/claim", headers=t.bearer(rita))
    assert claimed.status_code == 201, claimed.text
    assert claimed.json()["audience"] == [NODE_A]


# ---------------------------------------------------------------- removal


@pytest.mark.asyncio
async def test_removing_a_node_stops_its_credential_and_drops_its_placements(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    node = await add_node(client)
    async with app.state.center.store.change() as work:
        await nodes.place(work, "alice", "a")
    member = await t.add_member(client, "olga", role="owner", scope="all")
    assert_error_shape(
        await client.delete("/v1/nodes/a", headers=t.bearer(member)), 403, "forbidden"
    )
    removed = await client.delete("/v1/nodes/a", headers=t.ADMIN)
    assert removed.json() == {"id": "a", "unplaced": ["alice"]}
    assert_error_shape(await beat(client, node), 401, "unauthorized")
    assert (await client.get("/v1/nodes", headers=t.ADMIN)).json() == {"nodes": []}
    assert_error_shape(await client.delete("/v1/nodes/a", headers=t.ADMIN), 404, "not_found")
    unplaced = await client.post("/v1/grants", json={"vault": "alice"}, headers=t.ADMIN)
    assert_error_shape(unplaced, 400, "invalid_argument")


@pytest.mark.asyncio
async def test_registration_and_removal_are_audited_without_the_credential(
    client: httpx.AsyncClient,
) -> None:
    credential = await add_node(client)
    await client.delete("/v1/nodes/a", headers=t.ADMIN)
    records = [r for r in await audit_actions(client) if r["action"].startswith("node.")]
    assert [(r["action"], r["actor"], r["subject"]) for r in records] == [
        ("node.register", "center-admin", "a"),
        ("node.remove", "center-admin", "a"),
    ]
    assert NODE_A in (records[0]["reason"] or "")
    text = (await client.get("/v1/audit", headers=t.ADMIN)).text
    assert credential not in text
    assert credential.removeprefix("sbn_") not in text
