"""Moves (docs/design.md#replication-and-failover): a vault's primary goes to another node
as a sequence of steps kept in its lease row, so any center process resumes a move
another one began.

`catch_up`: the target is a replica and the center waits until it is in sync. `switch`:
the center stops extending the primary's lease; once the lease has run out (plus the
grace) it promotes the target at epoch+1 and drops the old copy unless told to keep
it — or, if the target fell out of sync meanwhile, goes back to `catch_up` and lets the
old primary renew again. Draining a node is a move of every vault it is primary of and
a new replica for every vault it is a replica of.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from center import leases
from center.db import Copy, Node, VaultLease
from center.errors import ConflictError, NotFoundError
from center.failover import SYSTEM, promote
from center.leases import CATCH_UP, FAILING_OVER, MOVING, PRIMARY, REPLICA, SERVING, SWITCH, Timing
from center.log import get_logger
from center.principals import OPERATOR_ID
from center.store import Change, Store


async def start(
    work: Change, vault: str, target: str, *, keep: bool = False, actor: str = OPERATOR_ID
) -> dict[str, Any]:
    """Begin moving `vault`'s primary to `target`: it becomes a replica if it is not one."""
    lease = await work.session.get(VaultLease, vault, with_for_update=True)
    if lease is None:
        raise NotFoundError("vault", vault)
    if await work.session.get(Node, target) is None:
        raise NotFoundError("node", target)
    if lease.primary_node == target:
        raise ConflictError(f"{target} is the primary of {vault} already (epoch {lease.epoch})")
    if lease.state == MOVING:
        raise ConflictError(f"{vault} is moving to {lease.move_target} already")
    if lease.state == FAILING_OVER:
        raise ConflictError(f"{vault} has no primary to move from; `vault promote` one first")
    copy = await work.session.get(Copy, (vault, target))
    added = copy is None
    if added:
        work.session.add(
            Copy(vault=vault, node_id=target, role=REPLICA, in_sync=False, created=work.now)
        )
    lease.state, lease.move_target, lease.move_step, lease.move_keep = (
        MOVING,
        target,
        CATCH_UP,
        keep,
    )
    work.record_node(
        "vault.move.start",
        target,
        actor=actor,
        vault=vault,
        reason=f"from {lease.primary_node} at epoch {lease.epoch}"
        + ("; new replica" if added else "")
        + ("; old copy kept" if keep else ""),
    )
    return view(lease)


def view(lease: VaultLease) -> dict[str, Any]:
    return {
        "vault": lease.vault,
        "primary": lease.primary_node,
        "epoch": lease.epoch,
        "state": lease.state,
        "move": move_of(lease),
    }


def move_of(lease: VaultLease) -> dict[str, Any] | None:
    if lease.state != MOVING:
        return None
    return {"target": lease.move_target, "step": lease.move_step, "keep": lease.move_keep}


def _stop(work: Change, lease: VaultLease, why: str) -> None:
    target = lease.move_target
    lease.state, lease.move_target, lease.move_step = SERVING, None, None
    work.record(
        "vault.move.abort",
        actor=SYSTEM,
        subject=target,
        vault=lease.vault,
        object=f"vault:{lease.vault}",
        reason=why,
    )
    get_logger().warning("vault.move_aborted", vault=lease.vault, target=target, reason=why)


async def step(work: Change, vault: str, timing: Timing) -> str | None:
    """Take `vault`'s move one step further if it can go; returns the step reached."""
    lease = await work.session.get(VaultLease, vault, with_for_update=True)
    if lease is None or lease.state != MOVING or lease.move_target is None:
        return None
    copies = (await leases.copies_of(work.session, [vault])).get(vault, [])
    target = next((c for c in copies if c.node_id == lease.move_target), None)
    if target is None:
        _stop(work, lease, f"target {lease.move_target} no longer holds a copy")
        return SERVING
    if lease.move_step == CATCH_UP:
        if not target.in_sync:
            return None
        lease.move_step = SWITCH
        work.record_node(
            "vault.move.switch",
            target.node_id,
            actor=SYSTEM,
            vault=vault,
            reason=f"in sync; the lease of {lease.primary_node} is not extended past"
            f" {lease.expires}",
        )
        return SWITCH
    now = work.now * 1000
    if lease.expires is not None and lease.expires + timing.grace * 1000 >= now:
        return None
    if not target.in_sync:
        lease.move_step = CATCH_UP
        work.record_node(
            "vault.move.retry",
            target.node_id,
            actor=SYSTEM,
            vault=vault,
            reason="the target fell out of sync before the switch; the old primary renews again",
        )
        return CATCH_UP
    keep = lease.move_keep
    old = promote(work, lease, copies, target, timing.ttl, reason="move")
    if old is not None and not keep:
        dropped = next(c for c in copies if c.node_id == old)
        await work.session.delete(dropped)
    work.record_node(
        "vault.move.done",
        target.node_id,
        actor=SYSTEM,
        vault=vault,
        reason=f"primary at epoch {lease.epoch}; old copy on {old} "
        + ("kept" if keep else "dropped"),
    )
    get_logger().info("vault.moved", vault=vault, node=target.node_id, epoch=lease.epoch)
    return SERVING


async def advance(store: Store, timing: Timing) -> list[tuple[str, str]]:
    """One step of every move under way (the watcher calls this every second)."""
    async with store.read() as session:
        query = select(VaultLease.vault).where(VaultLease.state == MOVING)
        moving = list((await session.scalars(query.order_by(VaultLease.vault))).all())
    done = []
    for vault in moving:
        async with store.change() as work:
            reached = await step(work, vault, timing)
        if reached is not None:
            done.append((vault, reached))
    return done


async def drain(work: Change, node_id: str) -> dict[str, Any]:
    """Move every vault `node_id` is primary of to an in-sync replica (else the
    least-loaded other node), and give every vault it is a replica of a new replica in
    its place."""
    if await work.session.get(Node, node_id) is None:
        raise NotFoundError("node", node_id)
    held = (await work.session.scalars(select(Copy).where(Copy.node_id == node_id))).all()
    grouped = await leases.copies_of(work.session, [c.vault for c in held])
    moved, replaced, skipped = [], [], []
    for mine in sorted(held, key=lambda c: c.vault):
        others = [c for c in grouped.get(mine.vault, []) if c.node_id != node_id]
        lease = await work.session.get(VaultLease, mine.vault)
        if lease is None or lease.state != SERVING:
            skipped.append(mine.vault)
            continue
        if mine.role == PRIMARY:
            ready = [c.node_id for c in others if c.in_sync]
            spare = await leases.least_loaded(
                work.session, 1, {node_id, *(c.node_id for c in others)}
            )
            choices = ready or [c.node_id for c in others] or spare
            if not choices:
                skipped.append(mine.vault)
                continue
            target = choices[0]
            await start(work, mine.vault, target)
            moved.append({"vault": mine.vault, "to": target})
            continue
        spare = await leases.least_loaded(work.session, 1, {node_id, *(c.node_id for c in others)})
        if spare:
            work.session.add(
                Copy(
                    vault=mine.vault,
                    node_id=spare[0],
                    role=REPLICA,
                    in_sync=False,
                    created=work.now,
                )
            )
        await work.session.delete(mine)
        replaced.append({"vault": mine.vault, "by": spare[0] if spare else None})
    work.record_node(
        "node.drain",
        node_id,
        actor=OPERATOR_ID,
        reason=f"{len(moved)} moves, {len(replaced)} replicas replaced, {len(skipped)} skipped",
    )
    return {"node": node_id, "moves": moved, "replicas": replaced, "skipped": skipped}
