"""Promotion (docs/design.md#replication-and-failover): a vault whose primary's lease ran
out more than a grace ago gets the in-sync replica with the highest (epoch, commits) as
primary at epoch+1; with none in sync it waits (`failing_over`), loudly.

Every center process runs `watch_forever`. Each promotion is one audited change that
takes the lease row under its lock and checks again (compare-and-set), so of several
centers that saw the same expired lease exactly one promotes it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy import select

from center import leases
from center.db import Copy, Node, VaultLease
from center.errors import CenterError, ConflictError, InvalidArgumentError, NotFoundError
from center.leases import FAILING_OVER, MOVING, PRIMARY, REPLICA, SERVING, SWITCH, Timing
from center.log import get_logger
from center.principals import OPERATOR_ID
from center.store import Change, Store

WATCH_EVERY = 1.0
SYSTEM = "system"


def promote(
    work: Change,
    lease: VaultLease,
    copies: list[Copy],
    target: Copy,
    ttl: int,
    *,
    reason: str,
    actor: str = SYSTEM,
) -> str | None:
    """Make `target` primary at epoch+1 with a fresh lease, serving (a move under way
    ends); the old primary (returned) becomes a replica, not in sync until it reports the
    new primary's head. Audited as `vault.promote` (and `vault.demote`) by `actor`."""
    old = next((c for c in copies if c.role == PRIMARY), None)
    if old is not None:
        old.role, old.in_sync = REPLICA, False
    target.role, target.in_sync = PRIMARY, True
    lease.primary_node = target.node_id
    lease.epoch += 1
    lease.expires = work.now * 1000 + ttl * 1000
    lease.state, lease.move_target, lease.move_step = SERVING, None, None
    new, vault = target.node_id, lease.vault
    work.record_node(
        "vault.promote",
        new,
        actor=actor,
        vault=vault,
        reason=f"epoch {lease.epoch}; {reason}".strip("; "),
    )
    if old is None:
        return None
    work.record_node(
        "vault.demote",
        old.node_id,
        actor=actor,
        vault=vault,
        reason=f"replica from epoch {lease.epoch}",
    )
    return old.node_id


def best(copies: list[Copy], alive: set[str]) -> Copy | None:
    """The in-sync replica with the highest (reported epoch, commits), ties by node id."""
    ready = [c for c in copies if c.role == REPLICA and c.in_sync and c.node_id in alive]
    ready.sort(key=lambda c: (-(c.epoch or 0), -(c.commits or 0), c.node_id))
    return ready[0] if ready else None


async def fail_over(work: Change, vault: str, grace: int, ttl: int) -> str | None:
    """Promote a replica of `vault` if its lease is still expired past `grace` (checked
    under the row lock); returns the new primary, or None (renewed meanwhile, promoted by
    another center, or no replica in sync: then `failing_over`)."""
    lease = await work.session.get(VaultLease, vault, with_for_update=True)
    now = work.now * 1000
    if lease is None or lease.expires is None or lease.state == FAILING_OVER:
        return None
    if lease.expires + grace * 1000 >= now:
        return None
    if lease.state == MOVING and lease.move_step == SWITCH:
        return None  # a lease a move let run out: the move promotes its target (center.moves)
    copies = (await leases.copies_of(work.session, [vault])).get(vault, [])
    alive = set((await work.session.scalars(select(Node.id))).all())
    target = best(copies, alive)
    log = get_logger()
    if target is None:
        lease.state = FAILING_OVER
        work.record(
            "vault.failover_stalled",
            actor=SYSTEM,
            subject=lease.primary_node,
            vault=vault,
            object=f"vault:{vault}",
            reason=f"lease of epoch {lease.epoch} expired; no replica in sync to promote",
        )
        log.error("vault.failover_stalled", vault=vault, epoch=lease.epoch)
        return None
    dropped = "; the move under way is dropped" if lease.state == MOVING else ""
    old = lease.primary_node
    promote(work, lease, copies, target, ttl, reason=f"lease of {old} expired{dropped}")
    log.warning("vault.promoted", vault=vault, node=target.node_id, epoch=lease.epoch, old=old)
    return target.node_id


async def expired(store: Store, grace: int) -> list[str]:
    """Vaults whose lease ran out more than `grace` seconds ago and that wait for no one."""
    limit = leases.now_ms(store) - grace * 1000
    query = select(VaultLease.vault).where(
        VaultLease.expires.is_not(None),
        VaultLease.expires < limit,
        VaultLease.state != FAILING_OVER,
    )
    async with store.read() as session:
        return list((await session.scalars(query.order_by(VaultLease.vault))).all())


async def watch_once(store: Store, timing: Timing) -> list[str]:
    """One look: promote what must be promoted; returns the vaults promoted."""
    promoted = []
    for vault in await expired(store, timing.grace):
        async with store.change() as work:
            if await fail_over(work, vault, timing.grace, timing.ttl) is not None:
                promoted.append(vault)
    return promoted


async def watch_forever(
    store: Store,
    timing: Timing,
    also: Callable[[], Awaitable[Any]] | None = None,
    every: float = WATCH_EVERY,
) -> None:
    """`watch_once` (then `also`, the moves) every second for the life of the app;
    failures are logged, never fatal."""
    log = get_logger()
    while True:
        await asyncio.sleep(every)
        try:
            await watch_once(store, timing)
            if also is not None:
                await also()
        except CenterError as exc:
            log.warning("failover_skipped", code=exc.code)


async def force(work: Change, vault: str, node_id: str, *, force: bool, ttl: int) -> dict[str, Any]:
    """The operator makes `node_id`'s copy primary now. Without `force` only an in-sync
    replica of a vault whose lease has run out; with it any replica (loudly: what only the
    old primary held may be lost)."""
    lease = await work.session.get(VaultLease, vault, with_for_update=True)
    if lease is None:
        raise NotFoundError("vault", vault)
    copies = (await leases.copies_of(work.session, [vault])).get(vault, [])
    target = next((c for c in copies if c.node_id == node_id), None)
    if target is None:
        known = ", ".join(c.node_id for c in copies) or "none"
        raise NotFoundError("copy", f"{vault} on {node_id} (copies: {known})")
    if target.role == PRIMARY:
        raise ConflictError(f"{node_id} is the primary of {vault} already (epoch {lease.epoch})")
    live = lease.expires is not None and lease.expires > work.now * 1000
    if not force and (live or not target.in_sync):
        why = "its lease is live" if live else f"{node_id} is not in sync"
        raise InvalidArgumentError(
            "force", f"{why}; use `vault move` to switch safely, or --force to accept the loss"
        )
    words = "forced by the operator" if force else "by the operator"
    if force:
        words += f"; {node_id} was {'in sync' if target.in_sync else 'NOT in sync'}"
    old = promote(work, lease, copies, target, ttl, reason=words, actor=OPERATOR_ID)
    if force:
        get_logger().error("vault.forced_promote", vault=vault, node=node_id, epoch=lease.epoch)
    return {"vault": vault, "primary": node_id, "epoch": lease.epoch, "demoted": old}
