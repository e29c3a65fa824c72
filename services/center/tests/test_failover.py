"""Promotion: an expired lease gives the most up-to-date in-sync replica the vault at
epoch+1, the old primary rejoins as a replica; with no replica in sync the vault waits
for its primary, audited once; two centers on one PostgreSQL promote exactly once; the
operator's promote refuses what would lose writes unless forced, and says so in the
audit log."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from center import failover, leases
from center import testing as t
from center.config import Settings
from center.testing import HEAD, add_node, entry, renew
from center.testing import held as copy

NODE_A, NODE_B, NODE_C = (f"https://node-{n}.test/mcp" for n in "abc")
LATER = "2" * 40
PAST = 10 + 2 + 1
"""Seconds after a renewal when the lease (10 s) and the grace (2 s) have run out."""


async def audit(http: httpx.AsyncClient, action: str) -> list[dict[str, Any]]:
    lines = (await http.get("/v1/audit", headers=t.ADMIN)).text.splitlines()
    return [r for r in map(json.loads, lines) if r["action"] == action]


async def watch(app: FastAPI) -> list[str]:
    center = app.state.center
    return await failover.watch_once(center.store, leases.Timing.of(center.settings))


async def in_sync_pair(http: httpx.AsyncClient) -> tuple[str, str]:
    a = await add_node(http, "a", NODE_A)
    b = await add_node(http, "b", NODE_B)
    await renew(http, a, copy("team"))
    await renew(http, b, copy("team"))
    assert entry(await renew(http, a, copy("team")), "team")["replicas"][0]["in_sync"]
    return a, b


@pytest.mark.asyncio
async def test_an_expired_lease_promotes_the_replica_at_the_next_epoch(
    app: FastAPI, client: httpx.AsyncClient, clock: t.Clock
) -> None:
    a, b = await in_sync_pair(client)
    clock.advance(11)
    await watch(app)
    assert entry(await renew(client, b, copy("team")), "team")["role"] == "replica"
    clock.advance(PAST - 11)
    await watch(app)
    now = entry(await renew(client, b, copy("team")), "team")
    assert (now["role"], now["epoch"], now["primary"]["node"]) == ("primary", 2, "b")
    [replica] = now["replicas"]
    assert (replica["node"], replica["in_sync"], replica["lease"] is not None) == ("a", False, True)
    back = entry(await renew(client, a, copy("team")), "team")
    assert (back["role"], back["epoch"], back["replicas"][0]["lease"]) == ("replica", 2, None)
    [promoted] = await audit(client, "vault.promote")
    assert (promoted["subject"], promoted["vault"], promoted["actor"]) == ("b", "team", "system")
    [demoted] = await audit(client, "vault.demote")
    assert (demoted["subject"], demoted["reason"]) == ("a", "replica from epoch 2")
    await renew(client, a, copy("team", epoch=2, head=LATER, commits=4))
    await renew(client, b, copy("team", epoch=2, head=LATER, commits=4))
    assert entry(await renew(client, b, copy("team", epoch=2, head=LATER, commits=4)), "team")[
        "replicas"
    ][0]["in_sync"]


@pytest.mark.asyncio
async def test_the_replica_with_the_most_commits_is_promoted(
    app: FastAPI, client: httpx.AsyncClient, clock: t.Clock
) -> None:
    a = await add_node(client, "a", NODE_A)
    b = await add_node(client, "b", NODE_B)
    c = await add_node(client, "c", NODE_C)
    center = app.state.center
    async with center.store.change() as work:
        await leases.place(work, "team", "a", factor=3)
    for node in (a, b, c):
        await renew(client, node, copy("team"))
    await renew(client, a, copy("team"))
    await renew(client, c, copy("team", head=LATER, commits=4))
    clock.advance(PAST)
    await watch(app)
    assert entry(await renew(client, b), "team")["primary"]["node"] == "c"


@pytest.mark.asyncio
async def test_with_no_replica_in_sync_the_vault_waits_for_its_primary(
    app: FastAPI, client: httpx.AsyncClient, clock: t.Clock
) -> None:
    a, b = await in_sync_pair(client)
    marked = await client.post(
        "/v1/nodes/replicas/out-of-sync",
        json={"vault": "team", "epoch": 1, "node": "b"},
        headers=t.bearer(a),
    )
    assert marked.status_code == 200
    await renew(client, b, copy("team"))
    clock.advance(PAST)
    await watch(app)
    await watch(app)
    told = entry(await renew(client, b, copy("team")), "team")
    assert (told["role"], told["state"], told["epoch"]) == ("replica", "failing_over", 1)
    [stalled] = await audit(client, "vault.failover_stalled")
    assert (stalled["vault"], stalled["subject"]) == ("team", "a")
    assert await audit(client, "vault.promote") == []
    back = entry(await renew(client, a, copy("team")), "team")
    assert (back["role"], back["state"], back["epoch"]) == ("primary", "serving", 1)
    assert back["expires"] == int(clock() * 1000) + 10_000


@pytest.mark.asyncio
async def test_a_lease_renewed_in_time_is_not_promoted(
    app: FastAPI, client: httpx.AsyncClient, clock: t.Clock
) -> None:
    a, _ = await in_sync_pair(client)
    for _ in range(10):
        clock.advance(2)
        await renew(client, a, copy("team"))
        await watch(app)
    assert entry(await renew(client, a, copy("team")), "team")["epoch"] == 1
    assert await audit(client, "vault.promote") == []


@pytest.mark.asyncio
async def test_the_operator_promotes_safely_or_by_force_and_it_is_audited(
    app: FastAPI, client: httpx.AsyncClient, clock: t.Clock
) -> None:
    a, _ = await in_sync_pair(client)
    center = app.state.center

    async def promote(node: str, *, force: bool) -> dict[str, Any]:
        async with center.store.change() as work:
            return await failover.force(work, "team", node, force=force, ttl=10)

    with pytest.raises(Exception, match="lease is live"):
        await promote("b", force=False)
    with pytest.raises(Exception, match="primary of team already"):
        await promote("a", force=True)
    with pytest.raises(Exception, match="copies: a, b"):
        await promote("c", force=True)
    done = await promote("b", force=True)
    assert done == {"vault": "team", "primary": "b", "epoch": 2, "demoted": "a"}
    [record] = await audit(client, "vault.promote")
    assert (record["actor"], record["reason"]) == (
        "center-admin",
        "epoch 2; forced by the operator; b was in sync",
    )
    assert entry(await renew(client, a, copy("team")), "team")["role"] == "replica"


@pytest.mark.asyncio
async def test_two_centers_on_one_database_promote_exactly_once(
    postgres_settings: Settings,
) -> None:
    clock = t.Clock()
    async with (
        t.running(postgres_settings, clock) as first,
        t.running(postgres_settings, clock) as second,
        t.client(first) as http,
    ):
        a, _ = await in_sync_pair(http)
        clock.advance(PAST)
        for _ in range(5):
            await asyncio.gather(watch(first), watch(second), watch(first), watch(second))
        assert len(await audit(http, "vault.promote")) == 1
        told = entry(await renew(http, a, copy("team")), "team")
        assert (told["role"], told["epoch"]) == ("replica", 2)


def test_the_chosen_replica_is_in_sync_newest_then_by_id() -> None:
    from center.db import Copy  # noqa: PLC0415 - rows made by hand

    def row(node: str, epoch: int, commits: int, *, in_sync: bool = True) -> Copy:
        return Copy(
            vault="v", node_id=node, role="replica", in_sync=in_sync, epoch=epoch, commits=commits
        )

    rows = [row("c", 2, 9, in_sync=False), row("b", 2, 5), row("a", 2, 5), row("d", 1, 50)]
    chosen = failover.best(rows, {"a", "b", "c", "d"})
    assert chosen is not None
    assert chosen.node_id == "a"
    assert failover.best(rows, {"c"}) is None
    assert HEAD != LATER
