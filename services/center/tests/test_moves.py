"""Moves and the operator's view: a move adds the target as a replica, waits until it is in
sync, lets the primary's lease run out and promotes the target at epoch+1, dropping the
old copy; a center that "crashed" between steps is replaced by another that resumes;
bad moves are refused; `/v1/replication`, `/metrics` and `node drain` show and act on
the state."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from center import failover, leases, moves
from center import testing as t
from center.config import Settings
from center.testing import add_node, entry, renew
from center.testing import held as copy

NODE_A, NODE_B, NODE_C = (f"https://node-{n}.test/mcp" for n in "abc")


async def audit(http: httpx.AsyncClient, prefix: str) -> list[str]:
    lines = (await http.get("/v1/audit", headers=t.ADMIN)).text.splitlines()
    return [r["action"] for r in map(json.loads, lines) if r["action"].startswith(prefix)]


async def advance(app: FastAPI) -> list[tuple[str, str]]:
    center = app.state.center
    return await moves.advance(center.store, leases.Timing.of(center.settings))


async def start(http: httpx.AsyncClient, vault: str, **body: Any) -> httpx.Response:
    return await http.post(f"/v1/replication/{vault}/move", json=body, headers=t.ADMIN)


async def placed(http: httpx.AsyncClient) -> dict[str, str]:
    """Nodes a, b, c; `team` adopted on a with its replica on b; credentials by id."""
    creds = {
        n: await add_node(http, n, url)
        for n, url in zip("abc", (NODE_A, NODE_B, NODE_C), strict=True)
    }
    await http.post(
        "/v1/nodes/heartbeat", json={"vaults": ["x", "y"]}, headers=t.bearer(creds["c"])
    )
    await renew(http, creds["a"], copy("team"))
    return creds


@pytest.mark.asyncio
async def test_a_move_catches_up_switches_at_the_lease_boundary_and_drops_the_old_copy(
    app: FastAPI, client: httpx.AsyncClient, clock: t.Clock
) -> None:
    creds = await placed(client)
    a, c = creds["a"], creds["c"]
    started = await start(client, "team", to="c")
    assert started.status_code == 200, started.text
    assert started.json()["move"] == {"target": "c", "step": "catch_up", "keep": False}
    assert entry(await renew(client, c), "team")["role"] == "replica"
    await advance(app)  # c is not in sync yet: nothing happens
    await renew(client, c, copy("team"))
    await renew(client, a, copy("team"))
    assert await advance(app) == [("team", "switch")]
    expires = entry(await renew(client, a, copy("team")), "team")["expires"]
    clock.advance(5)
    told = entry(await renew(client, a, copy("team")), "team")
    assert (told["role"], told["expires"], told["state"]) == ("primary", expires, "moving")
    assert await advance(app) == []
    clock.advance(8)
    assert await advance(app) == [("team", "serving")]
    moved = entry(await renew(client, c, copy("team")), "team")
    assert (moved["role"], moved["epoch"], moved["state"]) == ("primary", 2, "serving")
    assert [r["node"] for r in moved["replicas"]] == ["b"]
    assert (await renew(client, a, copy("team")))["vaults"] == []
    assert await audit(client, "vault.") == [
        "vault.move.start",
        "vault.move.switch",
        "vault.promote",
        "vault.demote",
        "vault.move.done",
    ]


@pytest.mark.asyncio
async def test_the_failover_watch_leaves_a_lease_a_move_let_run_out_to_the_move(
    app: FastAPI, client: httpx.AsyncClient, clock: t.Clock
) -> None:
    # Both run each second once the lease has run out plus the grace; the failover watch
    # ran first and promoted the best replica (here b), dropping the move and keeping a.
    creds = await placed(client)
    a, b, c = creds["a"], creds["b"], creds["c"]
    assert (await start(client, "team", to="c")).status_code == 200
    await renew(client, c)
    for credential in (b, c, a):
        await renew(client, credential, copy("team"))
    assert await advance(app) == [("team", "switch")]
    clock.advance(13)
    center = app.state.center
    assert await failover.watch_once(center.store, leases.Timing.of(center.settings)) == []
    assert await advance(app) == [("team", "serving")]
    moved = entry(await renew(client, c, copy("team")), "team")
    assert (moved["role"], moved["epoch"]) == ("primary", 2)
    assert (await renew(client, a, copy("team")))["vaults"] == []


@pytest.mark.asyncio
async def test_a_move_is_resumed_by_another_center_after_a_crash(
    postgres_settings: Settings,
) -> None:
    clock = t.Clock()
    async with t.running(postgres_settings, clock) as first, t.client(first) as http:
        creds = await placed(http)
        assert (await start(http, "team", to="c", keep=True)).status_code == 200
        await renew(http, creds["c"], copy("team"))
        await renew(http, creds["a"], copy("team"))
        assert await advance(first) == [("team", "switch")]
    clock.advance(13)
    async with t.running(postgres_settings, clock) as second, t.client(second) as http:
        assert await advance(second) == [("team", "serving")]
        listed = (await http.get("/v1/replication", headers=t.ADMIN)).json()["vaults"]
        team = next(v for v in listed if v["name"] == "team")
        assert (team["node"], team["epoch"], team["state"], team["move"]) == (
            "c",
            2,
            "serving",
            None,
        )
        roles = sorted((c["node"], c["role"]) for c in team["copies"])
        assert roles == [("a", "replica"), ("b", "replica"), ("c", "primary")]


@pytest.mark.asyncio
async def test_a_target_out_of_sync_at_the_switch_sends_the_move_back_to_catch_up(
    app: FastAPI, client: httpx.AsyncClient, clock: t.Clock
) -> None:
    creds = await placed(client)
    await start(client, "team", to="c")
    await renew(client, creds["c"], copy("team"))
    await renew(client, creds["a"], copy("team"))
    await advance(app)
    marked = await client.post(
        "/v1/nodes/replicas/out-of-sync",
        json={"vault": "team", "epoch": 1, "node": "c"},
        headers=t.bearer(creds["a"]),
    )
    assert marked.status_code == 200
    clock.advance(13)
    assert await advance(app) == [("team", "catch_up")]
    back = entry(await renew(client, creds["a"], copy("team")), "team")
    assert (back["role"], back["epoch"], back["expires"]) == (
        "primary",
        1,
        int(clock() * 1000) + 10_000,
    )


@pytest.mark.asyncio
async def test_bad_moves_are_refused(client: httpx.AsyncClient) -> None:
    await placed(client)
    t.refused(await start(client, "nope", to="c"), 404, "not_found", "nope")
    t.refused(await start(client, "team", to="zz"), 404, "not_found", "zz")
    t.refused(await start(client, "team", to="a"), 409, "conflict", "primary of team already")
    t.refused(await start(client, "Team", to="c"), 400, "invalid_argument")
    assert (await start(client, "team", to="c")).status_code == 200
    t.refused(await start(client, "team", to="b"), 409, "conflict", "moving to c")
    member = await client.post(
        "/v1/replication/team/move", json={"to": "b"}, headers=t.bearer("sbm_nobody")
    )
    assert member.status_code == 401
    promote = await client.post("/v1/replication/team/promote", json={"node": "b"}, headers=t.ADMIN)
    t.refused(promote, 400, "invalid_argument", "--force")


@pytest.mark.asyncio
async def test_draining_a_node_moves_its_primaries_and_replaces_its_replicas(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    creds = await placed(client)
    await renew(client, creds["b"], copy("ops"))
    drained = await client.post("/v1/nodes/b/drain", headers=t.ADMIN)
    assert drained.status_code == 200, drained.text
    body = drained.json()
    assert body["moves"] == [{"vault": "ops", "to": "a"}]
    assert body["replicas"] == [{"vault": "team", "by": "c"}]
    listed = (await client.get("/v1/replication", headers=t.ADMIN)).json()["vaults"]
    team = next(v for v in listed if v["name"] == "team")
    assert sorted((c["node"], c["role"]) for c in team["copies"]) == [
        ("a", "primary"),
        ("c", "replica"),
    ]
    assert await audit(client, "node.drain") == ["node.drain"]
    t.refused(await client.post("/v1/nodes/zz/drain", headers=t.ADMIN), 404, "not_found")


@pytest.mark.asyncio
async def test_metrics_export_epochs_leases_and_lag(
    client: httpx.AsyncClient, clock: t.Clock
) -> None:
    creds = await placed(client)
    await renew(client, creds["b"], copy("team", commits=1, head="2" * 40))
    await renew(client, creds["a"], copy("team"))
    text = (await client.get("/metrics", headers=t.ADMIN)).text
    assert 'secondbrain_vault_epoch{vault="team"} 1' in text
    assert 'secondbrain_vault_lease_seconds{vault="team"} 10' in text
    assert 'secondbrain_vault_state{vault="team",state="serving"} 1' in text
    assert 'secondbrain_vault_replicas_in_sync{vault="team"} 0' in text
    assert 'secondbrain_vault_replica_lag_commits{vault="team",node="b"} 2' in text
    assert (await client.get("/metrics")).status_code == 401
    assert (await client.get("/metrics", headers=t.bearer(creds["a"]))).status_code == 401


@pytest.mark.asyncio
async def test_the_factor_and_mode_of_a_vault_are_set_within_the_nodes_there_are(
    client: httpx.AsyncClient,
) -> None:
    creds = await placed(client)

    async def configure(vault: str, **body: Any) -> httpx.Response:
        return await client.patch(f"/v1/replication/{vault}", json=body, headers=t.ADMIN)

    grown = await configure("team", factor=5, mode="async")
    assert grown.status_code == 200, grown.text
    assert grown.json() == {
        "vault": "team",
        "mode": "async",
        "factor": 5,
        "added": ["c"],
        "dropped": [],
    }
    assert entry(await renew(client, creds["a"], copy("team")), "team")["mode"] == "async"
    await renew(client, creds["c"], copy("team"))
    await renew(client, creds["a"], copy("team"))
    shrunk = await configure("team", factor=2)
    assert shrunk.json()["dropped"] == ["b"]  # b never reported: lagging, dropped first
    t.refused(await configure("team", factor=0), 422, "invalid_request")
    t.refused(await configure("team", mode="fast"), 422, "invalid_request")
    t.refused(await configure("nope", factor=2), 404, "not_found")
    assert await audit(client, "vault.configure") == ["vault.configure", "vault.configure"]
