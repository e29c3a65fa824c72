"""Vault copies and primary leases (docs/design.md#replication-and-failover): placing a
vault's copies, a node's lease renewal, and a primary marking a replica out of sync.

Renewals are bookkeeping, not authorization changes: they run in `Store.serialized`
under the lease rows' locks (taken in vault order), so a promotion in another center
process either sees the renewed expiry or the renewal sees the new epoch. Adopting a
vault no lease covers yet is a placement and goes to the audit log.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from center.config import Settings
from center.db import Copy, Node, VaultLease
from center.errors import (
    ConflictError,
    ForbiddenError,
    InvalidArgumentError,
    NotFoundError,
    UnauthorizedError,
    UnavailableError,
)
from center.keyring import Keyring
from center.log import get_logger
from center.names import check_vault
from center.principals import OPERATOR_ID
from center.store import Change, Store
from tickets.leases import Lease, sign_lease

PRIMARY, REPLICA = "primary", "replica"
SERVING, FAILING_OVER, MOVING = "serving", "failing_over", "moving"
CATCH_UP, SWITCH = "catch_up", "switch"
MODES = ("sync", "async")
MAX_FACTOR = 9
"""At most this many copies of one vault (`SECONDBRAIN_CENTER_REPLICATION_FACTOR`'s bound)."""
MAX_COPIES = 4096
"""At most this many copies in one renewal (a heartbeat's bound on vaults)."""
SYSTEM = "system"


@dataclass(frozen=True)
class Report:
    """What a node holds of one vault: the highest epoch it saw, its head commit (None
    for an empty vault), its commit count and, from the primary, the replicas it has
    brought to that head."""

    vault: str
    epoch: int
    head: str | None
    commits: int
    caught_up: tuple[str, ...] = ()
    """From the primary: replicas it knows hold `head` and ships each write to first."""


@dataclass(frozen=True)
class Timing:
    """The lease settings: `ttl`, `renew` and `grace` in seconds, the issuer that signs
    leases, and a new vault's replication factor and mode."""

    ttl: int
    renew: int
    issuer: str
    factor: int = 2
    mode: str = "sync"
    grace: int = 2

    @classmethod
    def of(cls, settings: Settings) -> Timing:
        return cls(
            ttl=settings.lease_ttl,
            renew=settings.lease_renew,
            issuer=settings.issuer,
            factor=settings.replication_factor,
            mode=settings.replication_mode,
            grace=settings.lease_grace,
        )


def now_ms(store: Store) -> int:
    return int(store.clock() * 1000)


def order(copies: Iterable[Copy]) -> list[Copy]:
    """Primary first, then replicas in sync before lagging ones, each by node id."""
    return sorted(copies, key=lambda c: (c.role != PRIMARY, not c.in_sync, c.node_id))


async def copies_of(
    session: AsyncSession, vaults: Sequence[str] | None = None
) -> dict[str, list[Copy]]:
    """Vault → its copies, primary first (`order`)."""
    query = select(Copy)
    if vaults is not None:
        query = query.where(Copy.vault.in_(list(vaults)))
    grouped: dict[str, list[Copy]] = {}
    for row in (await session.scalars(query)).all():
        grouped.setdefault(row.vault, []).append(row)
    return {vault: order(rows) for vault, rows in grouped.items()}


async def load(session: AsyncSession) -> dict[str, int]:
    """Node id → how many vaults it holds: those it reports and those it has a copy of
    (every registered node, 0 for none), as `accounts.choose_node` counts them."""
    held = {n.id: set(n.vaults) for n in (await session.scalars(select(Node))).all()}
    for vault, node_id in (await session.execute(select(Copy.vault, Copy.node_id))).all():
        held.setdefault(node_id, set()).add(vault)
    return {node_id: len(vaults) for node_id, vaults in held.items()}


async def least_loaded(session: AsyncSession, count: int, exclude: Iterable[str] = ()) -> list[str]:
    """Up to `count` node ids holding the fewest copies, ties by id, none of `exclude`."""
    skip = set(exclude)
    counts = await load(session)
    ranked = sorted((n for n in counts if n not in skip), key=lambda n: (counts[n], n))
    return ranked[:count]


def _copy(vault: str, node_id: str, role: str, now: int, *, in_sync: bool) -> Copy:
    return Copy(vault=vault, node_id=node_id, role=role, in_sync=in_sync, created=now)


async def place(
    work: Change,
    vault: str,
    node_id: str,
    *,
    factor: int = 2,
    mode: str = "sync",
    epoch: int = 1,
    actor: str = SYSTEM,
    avoid: Iterable[str] = (),
) -> list[str]:
    """Give `vault` its primary on `node_id` and replicas on the least-loaded other nodes
    (none of `avoid`) up to `factor` copies; returns the replicas' node ids."""
    check_vault(vault)
    if mode not in MODES:
        raise InvalidArgumentError("mode", "use sync or async")
    if await work.session.get(Node, node_id) is None:
        raise NotFoundError("node", node_id)
    if await work.session.get(VaultLease, vault) is not None:
        raise ConflictError(f"vault {vault!r} is placed already")
    replicas = await least_loaded(work.session, factor - 1, {node_id, *avoid})
    work.session.add(
        VaultLease(
            vault=vault,
            primary_node=node_id,
            epoch=epoch,
            mode=mode,
            factor=factor,
            state=SERVING,
            move_keep=False,
            created=work.now,
        )
    )
    work.session.add(_copy(vault, node_id, PRIMARY, work.now, in_sync=True))
    for replica in replicas:
        work.session.add(_copy(vault, replica, REPLICA, work.now, in_sync=False))
    work.record_node(
        "node.place",
        node_id,
        actor=actor,
        vault=vault,
        reason=f"primary at epoch {epoch}; replicas {','.join(replicas) or 'none'}",
    )
    return replicas


def check_reports(reports: Sequence[Report]) -> dict[str, Report]:
    if len(reports) > MAX_COPIES:
        raise InvalidArgumentError("copies", f"at most {MAX_COPIES} copies in one renewal")
    named: dict[str, Report] = {}
    for report in reports:
        check_vault(report.vault, "copies")
        if report.vault in named:
            raise InvalidArgumentError("copies", f"vault {report.vault!r} is named twice")
        named[report.vault] = report
    return named


MAX_RECOVERED = 64
"""At most this many recovery branches in one renewal."""


@dataclass(frozen=True)
class Recovered:
    """A recovery branch a node made when it rejoined as a replica: what it held that the
    new primary lacked, kept under `branch` at `head`, never dropped."""

    vault: str
    branch: str
    head: str


async def recovered(store: Store, node_id: str, branches: Sequence[Recovered]) -> None:
    """Log and audit the recovery branches a node reports, so an operator learns of every
    write that only an asynchronous primary held (docs/design.md#replication-between-nodes)."""
    async with store.change() as work:
        for kept in branches:
            vault = check_vault(kept.vault, "recovered")
            get_logger().warning(
                "vault.recovery_branch", vault=vault, node=node_id, branch=kept.branch
            )
            work.record_node(
                "vault.recovery_branch",
                node_id,
                actor=node_id,
                vault=vault,
                reason=f"kept on {kept.branch} at {kept.head}",
            )


async def renew(
    store: Store, keyring: Keyring, timing: Timing, node_id: str, reports: Sequence[Report]
) -> dict[str, Any]:
    """Record what a node holds, extend its leases where it is the current primary, and
    answer its role in every vault it holds or should hold."""
    named = check_reports(reports)
    await _adopt(store, timing, node_id, named)
    async with store.serialized() as session:
        node = await session.get(Node, node_id)
        if node is None:
            raise UnauthorizedError("this node was removed; register it again with `node add`")
        now = now_ms(store)
        mine = set((await session.scalars(select(Copy.vault).where(Copy.node_id == node_id))).all())
        query = select(VaultLease).where(VaultLease.vault.in_(sorted(mine)))
        leases = {
            row.vault: row
            for row in (
                await session.scalars(query.order_by(VaultLease.vault).with_for_update())
            ).all()
        }
        grouped = await copies_of(session, sorted(leases))
        resources = {
            row[0]: row[1] for row in (await session.execute(select(Node.id, Node.resource))).all()
        }
        answer = []
        for vault, lease in sorted(leases.items()):
            copies = grouped.get(vault, [])
            if (clash := _clash(copies, node_id, named.get(vault))) is not None:
                await session.delete(clash)
                get_logger().error(
                    "vault.name_clash",
                    vault=vault,
                    node=node_id,
                    hint="the node holds a vault of that name of its own; it gets no replica",
                )
                continue
            _record(copies, node_id, named.get(vault), now)
            _extend(lease, copies, named.get(vault), node_id=node_id, now=now, ttl=timing.ttl)
            _mark_in_sync(lease, copies)
            _confirm_in_sync(lease, copies, named.get(vault), node_id)
            answer.append(
                _entry(
                    lease,
                    copies,
                    node_id=node_id,
                    resources=resources,
                    keyring=keyring,
                    timing=timing,
                    now=now,
                )
            )
    return {"ttl": timing.ttl, "renew": timing.renew, "vaults": answer}


async def _adopt(store: Store, timing: Timing, node_id: str, named: dict[str, Report]) -> None:
    """Place the reported vaults no lease covers yet with this node as primary; other
    nodes reporting a vault of that name get no copy of it (their content is theirs)."""
    if not named:
        return
    async with store.read() as session:
        known = set(
            (
                await session.scalars(
                    select(VaultLease.vault).where(VaultLease.vault.in_(list(named)))
                )
            ).all()
        )
        if await session.get(Node, node_id) is None:
            return
        reporters = (await session.scalars(select(Node))).all()
    fresh = sorted(set(named) - known)
    if not fresh:
        return
    try:
        async with store.change() as work:
            for vault in fresh:
                if await work.session.get(VaultLease, vault) is not None:
                    continue
                others = [n.id for n in reporters if n.id != node_id and vault in n.vaults]
                replicas = await place(
                    work,
                    vault,
                    node_id,
                    factor=timing.factor,
                    mode=timing.mode,
                    epoch=max(1, named[vault].epoch),
                    avoid=others,
                )
                get_logger().info("vault.adopt", vault=vault, node=node_id, replicas=replicas)
    except (UnavailableError, ConflictError) as exc:
        get_logger().warning("vault.adopt_deferred", node=node_id, code=exc.code)


def _clash(copies: list[Copy], node_id: str, report: Report | None) -> Copy | None:
    """The replica copy assigned to `node_id` when the node turns out to hold a vault of
    that name of its own: it reports commits at epoch 0 (no copy it took from a primary
    ever does) before it reported anything for that copy. Its content is its own, so the
    copy goes; pushes to it would be refused anyway."""
    if report is None or report.epoch != 0 or report.head is None:
        return None
    for copy in copies:
        if copy.node_id == node_id and copy.role == REPLICA and copy.head is None:
            return copy
    return None


def _record(copies: list[Copy], node_id: str, report: Report | None, now: int) -> None:
    if report is None:
        return
    for copy in copies:
        fresh = (report.epoch, report.head, report.commits)
        if copy.node_id == node_id and (copy.epoch, copy.head, copy.commits) != fresh:
            copy.epoch, copy.head, copy.commits = fresh
            copy.updated = now


def _extend(
    lease: VaultLease,
    copies: list[Copy],
    report: Report | None,
    *,
    node_id: str,
    now: int,
    ttl: int,
) -> None:
    """Extend the lease of the current primary at the current epoch, unless a move is
    switching away from it; a primary back from a stalled failover serves again."""
    primary = next((c for c in copies if c.role == PRIMARY), None)
    if primary is None or primary.node_id != node_id or lease.primary_node != node_id:
        return
    if report is not None and report.epoch > lease.epoch:
        get_logger().error(
            "lease.epoch_ahead",
            vault=lease.vault,
            node=node_id,
            node_epoch=report.epoch,
            epoch=lease.epoch,
        )
        return
    if lease.state == MOVING and lease.move_step == SWITCH:
        return
    lease.expires = max(lease.expires or 0, now + ttl * 1000)
    if lease.state == FAILING_OVER:
        lease.state = SERVING
        get_logger().warning("lease.primary_returned", vault=lease.vault, node=node_id)


def _mark_in_sync(lease: VaultLease, copies: list[Copy]) -> None:
    """A lagging replica that reports the head the primary last reported, both at the
    current epoch, is in sync again."""
    primary = next((c for c in copies if c.role == PRIMARY), None)
    if primary is None or primary.epoch != lease.epoch or primary.commits is None:
        return
    for copy in copies:
        lagging = copy.role == REPLICA and not copy.in_sync and copy.epoch == lease.epoch
        if lagging and (copy.head, copy.commits) == (primary.head, primary.commits):
            copy.in_sync = True
            get_logger().info("replica.in_sync", vault=lease.vault, node=copy.node_id)


def _confirm_in_sync(
    lease: VaultLease, copies: list[Copy], report: Report | None, node_id: str
) -> None:
    """The current primary at the current epoch says these replicas hold the head it
    reports and get every write before its ack (it reports any write one misses before
    acknowledging it, and a node's renewals and reports reach the center in order): they
    are in sync. Under writes that never pause, a replica's own report seldom names the
    very head the primary last reported, so this is how a lagging one comes back."""
    if report is None or not report.caught_up or lease.primary_node != node_id:
        return
    primary = next((c for c in copies if c.role == PRIMARY), None)
    if primary is None or primary.node_id != node_id or report.epoch != lease.epoch:
        return
    for copy in copies:
        if copy.role == REPLICA and not copy.in_sync and copy.node_id in report.caught_up:
            copy.in_sync = True
            get_logger().info("replica.in_sync", vault=lease.vault, node=copy.node_id, by="primary")


def _entry(
    lease: VaultLease,
    copies: list[Copy],
    *,
    node_id: str,
    resources: dict[str, str],
    keyring: Keyring,
    timing: Timing,
    now: int,
) -> dict[str, Any]:
    """One vault of a renewal's answer; the primary holding a live lease gets a lease JWS
    per replica (`exp` the lease's expiry, rounded down to the second)."""
    mine = next(c for c in copies if c.node_id == node_id)
    primary = next((c for c in copies if c.role == PRIMARY), None)
    expires = lease.expires or 0
    leading = primary is not None and primary.node_id == node_id and expires // 1000 > now // 1000
    replicas = []
    for copy in copies:
        if copy.role != REPLICA:
            continue
        signed = None
        if leading:
            claims = Lease(
                iss=timing.issuer,
                aud=resources[copy.node_id],
                sub=node_id,
                vault=lease.vault,
                epoch=lease.epoch,
                iat=now // 1000,
                exp=expires // 1000,
            )
            signed = sign_lease(claims, keyring.key)
        replicas.append(
            {
                "node": copy.node_id,
                "resource": resources[copy.node_id],
                "in_sync": copy.in_sync,
                "lease": signed,
            }
        )
    return {
        "vault": lease.vault,
        "role": mine.role,
        "epoch": lease.epoch,
        "mode": lease.mode,
        "state": lease.state,
        "expires": lease.expires,
        "primary": (
            {"node": primary.node_id, "resource": resources[primary.node_id]}
            if primary is not None
            else None
        ),
        "replicas": replicas,
    }


async def out_of_sync(
    store: Store, caller: str, vault: str, epoch: int, replica: str
) -> dict[str, Any]:
    """The current primary at `epoch` says `replica` missed a write: it is no longer in
    sync (not promotable) until both report again after this and the heads match."""
    check_vault(vault)
    async with store.serialized() as session:
        lease = await session.get(VaultLease, vault, with_for_update=True)
        if lease is None:
            raise NotFoundError("vault", vault)
        if lease.primary_node != caller or lease.epoch != epoch:
            raise ForbiddenError(
                f"only the primary of {vault} at epoch {lease.epoch} may mark its replicas"
            )
        copy = await session.get(Copy, (vault, replica))
        if copy is None or copy.role != REPLICA:
            raise NotFoundError("replica", replica)
        was = copy.in_sync
        copy.in_sync = False
        # Both reports predate the missed write: in sync again only on fresh ones.
        copy.epoch = None
        primary = await session.get(Copy, (vault, caller))
        if primary is not None:
            primary.epoch = None
    if was:
        get_logger().warning("replica.out_of_sync", vault=vault, node=replica, epoch=epoch)
    return {"vault": vault, "node": replica, "epoch": epoch, "in_sync": False}


async def configure(
    work: Change, vault: str, *, mode: str | None = None, factor: int | None = None
) -> dict[str, Any]:
    """Set a vault's replication mode and factor. A larger factor adds replicas on the
    least-loaded nodes without a copy (as many as there are); a smaller one drops
    replicas, lagging ones first — never the primary."""
    check_vault(vault)
    lease = await work.session.get(VaultLease, vault, with_for_update=True)
    if lease is None:
        raise NotFoundError("vault", vault)
    if mode is not None:
        if mode not in MODES:
            raise InvalidArgumentError("mode", "use sync or async")
        lease.mode = mode
    copies = (await copies_of(work.session, [vault])).get(vault, [])
    added: list[str] = []
    dropped: list[str] = []
    if factor is not None:
        if not 1 <= factor <= MAX_FACTOR:
            raise InvalidArgumentError("factor", f"use 1 to {MAX_FACTOR} copies")
        if lease.state == MOVING and factor < len(copies):
            raise ConflictError(f"{vault} is moving to {lease.move_target}; wait, then shrink")
        lease.factor = factor
        if factor > len(copies):
            held = {c.node_id for c in copies}
            added = await least_loaded(work.session, factor - len(copies), held)
            for node_id in added:
                work.session.add(_copy(vault, node_id, REPLICA, work.now, in_sync=False))
        replicas = [c for c in copies if c.role == REPLICA]
        replicas.sort(key=lambda c: (c.in_sync, c.commits or 0, c.node_id))
        for copy in replicas[: max(0, len(copies) - factor)]:
            dropped.append(copy.node_id)
            await work.session.delete(copy)
    work.record(
        "vault.configure",
        actor=OPERATOR_ID,
        vault=vault,
        object=f"vault:{vault}",
        reason=f"mode {lease.mode}, factor {lease.factor}; added {','.join(added) or 'none'}"
        f"; dropped {','.join(dropped) or 'none'}",
    )
    return {
        "vault": vault,
        "mode": lease.mode,
        "factor": lease.factor,
        "added": added,
        "dropped": dropped,
    }
