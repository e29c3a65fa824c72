"""Leases as a node sees them: a renewal adopts the vaults it reports, names its role,
extends the primary's lease and hands it a lease JWS per replica that verifies with the
center's public keys; a replica that reports the primary's head is in sync; only the
current primary at the current epoch marks a replica out of sync."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from center import nodes
from center import testing as t
from center.testing import HEAD, Clock, add_node, entry, renew
from center.testing import held as copy
from tickets import KeySet, TokenError
from tickets.leases import verify_lease

NODE_A, NODE_B, NODE_C = (f"https://node-{n}.test/mcp" for n in "abc")
LATER = "2" * 40


@pytest.mark.asyncio
async def test_a_reported_vault_is_adopted_with_a_replica_and_the_primary_gets_leases(
    client: httpx.AsyncClient, clock: Clock
) -> None:
    a = await add_node(client, "a", NODE_A)
    b = await add_node(client, "b", NODE_B)
    answer = await renew(client, a, copy("team"))
    assert (answer["ttl"], answer["renew"]) == (10, 2)
    team = entry(answer, "team")
    assert (team["role"], team["epoch"], team["mode"], team["state"]) == (
        "primary",
        1,
        "sync",
        "serving",
    )
    assert team["expires"] == int(clock() * 1000) + 10_000
    assert team["primary"] == {"node": "a", "resource": NODE_A}
    [replica] = team["replicas"]
    assert (replica["node"], replica["resource"], replica["in_sync"]) == ("b", NODE_B, False)
    keys = KeySet.from_jwks((await client.get("/.well-known/jwks.json")).json())
    lease = verify_lease(replica["lease"], keys, issuer=t.ISSUER, audience=NODE_B, now=clock())
    assert (lease.sub, lease.vault, lease.epoch) == ("a", "team", 1)
    assert lease.exp == team["expires"] // 1000
    with pytest.raises(TokenError) as caught:
        verify_lease(replica["lease"], keys, issuer=t.ISSUER, audience=NODE_A, now=clock())
    assert caught.value.reason == "bad_aud"

    told = entry(await renew(client, b), "team")
    assert (told["role"], told["epoch"], told["primary"]["node"]) == ("replica", 1, "a")
    assert told["replicas"][0]["lease"] is None


@pytest.mark.asyncio
async def test_a_replica_reporting_the_primary_head_is_in_sync(client: httpx.AsyncClient) -> None:
    a = await add_node(client, "a", NODE_A)
    b = await add_node(client, "b", NODE_B)
    await renew(client, a, copy("team", head=LATER, commits=4))
    await renew(client, b, copy("team", head=HEAD, commits=3))
    assert (
        entry(await renew(client, a, copy("team", head=LATER, commits=4)), "team")["replicas"][0][
            "in_sync"
        ]
        is False
    )
    await renew(client, b, copy("team", head=LATER, commits=4))
    team = entry(await renew(client, a, copy("team", head=LATER, commits=4)), "team")
    assert team["replicas"][0]["in_sync"] is True


@pytest.mark.asyncio
async def test_a_lagging_replica_the_primary_names_as_caught_up_is_in_sync_again(
    client: httpx.AsyncClient,
) -> None:
    """Under writes that never pause, the replica's own report seldom names the very head
    the primary last reported; the primary's word that it holds the head (and gets every
    write first) counts instead. Only the current primary's word, and only for replicas."""
    a = await add_node(client, "a", NODE_A)
    b = await add_node(client, "b", NODE_B)
    c = await add_node(client, "c", NODE_C)
    await renew(client, a, copy("team"))
    await renew(client, b, copy("team", head=None, commits=0))
    lagging = entry(await renew(client, a, copy("team")), "team")["replicas"]
    assert [(r["node"], r["in_sync"]) for r in lagging] == [("b", False)]

    def claimed(head: str, commits: int, *nodes: str, epoch: int = 1) -> dict[str, Any]:
        return {**copy("team", epoch=epoch, head=head, commits=commits), "caught_up": list(nodes)}

    behind = "4" * 40
    await renew(client, b, claimed(behind, 5, "b"))  # a replica's word counts for nothing
    await renew(client, c, claimed(behind, 5, "b"))  # nor does a stranger's
    still = entry(await renew(client, a, copy("team", head=LATER, commits=9)), "team")
    assert still["replicas"][0]["in_sync"] is False
    stale = entry(await renew(client, a, claimed(LATER, 9, "b", epoch=0)), "team")
    assert stale["replicas"][0]["in_sync"] is False, "a word from an older epoch"
    moved_on = entry(await renew(client, a, claimed("3" * 40, 10, "b", "a", "zz")), "team")
    assert moved_on["replicas"][0]["in_sync"] is True
    assert [r["node"] for r in moved_on["replicas"]] == ["b"]
    too_many = {**copy("team"), "caught_up": [f"n{i}" for i in range(17)]}
    refused = await client.post(
        "/v1/nodes/leases", json={"copies": [too_many]}, headers=t.bearer(a)
    )
    assert refused.status_code == 422


@pytest.mark.asyncio
async def test_the_lease_is_extended_only_for_the_primary(
    client: httpx.AsyncClient, clock: Clock
) -> None:
    a = await add_node(client, "a", NODE_A)
    b = await add_node(client, "b", NODE_B)
    first = entry(await renew(client, a, copy("team")), "team")["expires"]
    clock.advance(3)
    assert entry(await renew(client, b, copy("team")), "team")["expires"] == first
    clock.advance(3)
    assert entry(await renew(client, a, copy("team")), "team")["expires"] == first + 6000


@pytest.mark.asyncio
async def test_a_vault_of_the_same_name_on_another_disk_is_not_made_a_copy(
    client: httpx.AsyncClient,
) -> None:
    a = await add_node(client, "a", NODE_A)
    b = await add_node(client, "b", NODE_B)
    await client.post("/v1/nodes/heartbeat", json={"vaults": ["notes"]}, headers=t.bearer(b))
    team = entry(await renew(client, a, copy("notes")), "notes")
    assert team["replicas"] == []
    assert (await renew(client, b, copy("notes")))["vaults"] == []


@pytest.mark.asyncio
async def test_only_the_primary_at_its_epoch_marks_a_replica_out_of_sync(
    client: httpx.AsyncClient,
) -> None:
    a = await add_node(client, "a", NODE_A)
    b = await add_node(client, "b", NODE_B)
    await renew(client, a, copy("team"))
    await renew(client, b, copy("team"))
    assert entry(await renew(client, a, copy("team")), "team")["replicas"][0]["in_sync"]

    async def mark(credential: str, **body: Any) -> httpx.Response:
        return await client.post(
            "/v1/nodes/replicas/out-of-sync", json=body, headers=t.bearer(credential)
        )

    t.refused(await mark(b, vault="team", epoch=1, node="b"), 403, "forbidden")
    t.refused(await mark(a, vault="team", epoch=2, node="b"), 403, "forbidden")
    t.refused(await mark(a, vault="team", epoch=1, node="a"), 404, "not_found")
    t.refused(await mark(a, vault="nope", epoch=1, node="b"), 404, "not_found")
    t.refused(await mark(a, vault="team", epoch=0, node="b"), 422, "invalid_request")
    assert (await mark(a, vault="team", epoch=1, node="b", extra=1)).status_code == 422
    response = await client.post(
        "/v1/nodes/replicas/out-of-sync",
        json={"vault": "team", "epoch": 1, "node": "b"},
        headers=t.ADMIN,
    )
    assert response.status_code == 401
    answer = await mark(a, vault="team", epoch=1, node="b")
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"vault": "team", "node": "b", "epoch": 1, "in_sync": False}
    assert not entry(await renew(client, a, copy("team")), "team")["replicas"][0]["in_sync"]
    await renew(client, b, copy("team"))
    assert entry(await renew(client, a, copy("team")), "team")["replicas"][0]["in_sync"]


@pytest.mark.asyncio
async def test_bad_renewals_are_refused_and_change_nothing(client: httpx.AsyncClient) -> None:
    a = await add_node(client, "a", NODE_A)
    url = "/v1/nodes/leases"
    for body in ({"copies": [copy("team"), copy("team")]}, {"copies": [copy("Team")]}):
        refused = await client.post(url, json=body, headers=t.bearer(a))
        t.refused(refused, 400, "invalid_argument", "copies")
    for body in (
        {"copies": [copy("team", head="xyz")]},
        {"copies": [copy("team", epoch=-1)]},
        {"copies": [copy("team") | {"role": "primary"}]},
        {"copies": "team"},
    ):
        response = await client.post(url, json=body, headers=t.bearer(a))
        assert response.status_code == 422, (body, response.text)
    assert (await client.post(url, json={"copies": []}, headers=t.ADMIN)).status_code == 401
    assert (await renew(client, a))["vaults"] == []


@pytest.mark.asyncio
async def test_a_vault_placed_for_an_account_has_its_copies_before_any_renewal(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    await add_node(client, "a", NODE_A)
    b = await add_node(client, "b", NODE_B)
    await add_node(client, "c", NODE_C)
    center = app.state.center
    async with center.store.change() as work:
        await nodes.place(work, "alice", "b", factor=3)
    answer = entry(await renew(client, b), "alice")
    assert (answer["role"], answer["expires"]) == (
        "primary",
        int(center.store.clock() * 1000) + 10_000,
    )
    assert [r["node"] for r in answer["replicas"]] == ["a", "c"]
    listed = (await client.get("/v1/vaults", headers=t.ADMIN)).json()["vaults"]
    alice = next(v for v in listed if v["name"] == "alice")
    assert (alice["node"], alice["replicas"], alice["epoch"]) == ("b", [NODE_A, NODE_C], 1)


@pytest.mark.asyncio
async def test_a_node_with_many_copies_renews_past_the_usual_body_limit(
    client: httpx.AsyncClient,
) -> None:
    a = await add_node(client, "a", NODE_A)
    many = [copy(f"v{n:04d}") for n in range(800)]
    assert len(json.dumps({"copies": many})) > 65536
    answer = await renew(client, a, *many)
    assert len(answer["vaults"]) == 800
    big = "x" * 70_000
    refused = await client.post("/v1/nodes", content=big, headers=t.ADMIN)
    assert refused.status_code == 413


@pytest.mark.asyncio
async def test_a_recovery_branch_a_node_reports_is_audited_and_a_bad_one_refused(
    client: httpx.AsyncClient,
) -> None:
    a = await add_node(client, "a", NODE_A)
    kept = {"vault": "team", "branch": "recovery/3-20261203T210000Z", "head": LATER}
    body = {"copies": [copy("team")], "recovered": [kept]}
    answer = await client.post("/v1/nodes/leases", json=body, headers=t.bearer(a))
    assert answer.status_code == 200, answer.text
    lines = (await client.get("/v1/audit", headers=t.ADMIN)).text.splitlines()
    [record] = [r for r in map(json.loads, lines) if r["action"] == "vault.recovery_branch"]
    assert (record["vault"], record["subject"]) == ("team", "a")
    assert kept["branch"] in record["reason"]
    assert LATER in record["reason"]
    for bad in (
        kept | {"branch": "main"},
        kept | {"branch": "recovery/../../x y"},
        kept | {"head": "nothex"},
        kept | {"vault": "Team"},
    ):
        refused = await client.post(
            "/v1/nodes/leases", json={"recovered": [bad]}, headers=t.bearer(a)
        )
        assert refused.status_code in (400, 422), (bad, refused.text)
    after = (await client.get("/v1/audit", headers=t.ADMIN)).text.splitlines()
    assert sum('"vault.recovery_branch"' in line for line in after) == 1


@pytest.mark.asyncio
async def test_a_node_holding_a_vault_of_that_name_of_its_own_is_not_made_its_replica(
    client: httpx.AsyncClient,
) -> None:
    a = await add_node(client, "a", NODE_A)
    b = await add_node(client, "b", NODE_B)
    team = entry(await renew(client, a, copy("team")), "team")
    assert [r["node"] for r in team["replicas"]] == ["b"]  # b reported nothing yet
    answer = await renew(client, b, copy("team", epoch=0, head=LATER))
    assert [v["vault"] for v in answer["vaults"]] == []  # its own team, no replica of a's
    assert entry(await renew(client, a, copy("team")), "team")["replicas"] == []
    again = await renew(client, b, copy("team", epoch=1, head=LATER))
    assert again["vaults"] == []  # a's lease covers the name: b's content stays its own
