"""The nodes page (the operator's, as `/v1/nodes` is): each node's last heartbeat, how
far its revocation seq lags the feed, its audit checkpoint state and the vaults it holds
— with a warning for a node not heard from within `STALE` seconds — and every vault's
replication state as `/v1/replication` answers it (primary, replicas in sync or lagging,
epoch, lease, state), with a form that moves a vault to another node.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Response

from center import moves, nodes, revocations
from center.auth import as_operator
from center.console.web import PREFIX, ConsoleRoute, Posted, SignedIn
from center.names import check_vault, described

router = APIRouter(prefix=PREFIX, route_class=ConsoleRoute)
STALE = 120
"""Seconds: four missed heartbeats at the node's default 30 s, and its default max_stale."""


def state(node: dict[str, Any], seq: int, now: int) -> dict[str, Any]:
    """What the page says about a node: heartbeat age, seq lag, checkpoint, warnings."""
    seen = node["last_seen"]
    age = None if seen is None else now - seen
    lag = None if node["revocation_seq"] is None else max(seq - node["revocation_seq"], 0)
    warnings = []
    if age is None:
        warnings.append("never sent a heartbeat: is it configured with node_id and the center?")
    elif age > STALE:
        warnings.append(
            f"stale: no heartbeat for {age // 60} min — the node may be down or cut off "
            "from the center, and would miss revocations"
        )
    notes = []
    if lag:
        notes.append(
            f"{lag} revocation snapshot(s) behind the feed at its last heartbeat; normal for "
            "a heartbeat or two after a change, a problem if it stays"
        )
    if node["checkpoint_ok"] is False:
        warnings.append("its audit checkpoint is not in this center's chain: restored or forked?")
    checkpoint = {True: "verified", False: "MISMATCH", None: "none yet"}[node["checkpoint_ok"]]
    return {
        **node,
        "age": age,
        "lag": lag,
        "checkpoint_state": checkpoint,
        "warnings": warnings,
        "notes": notes,
    }


@router.get("/nodes")
async def show(page: SignedIn) -> Response:
    as_operator(page.me)
    store, now = page.center.store, page.center.store.now()
    async with store.read() as session:
        listed = await nodes.listing(session)
        vaults = [described(v, _utc) for v in await nodes.replication(session)]
    async with store.serialized() as session:
        seq = await revocations.current_seq(session, page.center.keyring, now)
    shown = [state(node, seq, now) for node in listed]
    ids = [node["id"] for node in listed]
    return page.render("nodes.html", nodes=shown, vaults=vaults, ids=ids, seq=seq, now=now)


def _utc(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


@router.post("/nodes/vaults/{vault}/move")
async def move(page: Posted) -> Response:
    """Start moving a vault's primary to the node chosen (`vault move`)."""
    as_operator(page.me)
    vault, target = page.request.path_params["vault"], page.value("to")
    async with page.change() as work:
        await moves.start(work, check_vault(vault), target, keep=page.value("keep") == "yes")
    return page.see_other(
        "/nodes",
        f"Moving {vault} to {target}: it catches up, then takes over when the primary's "
        "lease runs out. This page shows the progress.",
    )
