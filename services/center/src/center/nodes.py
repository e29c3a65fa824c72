"""Nodes and placement (docs/design.md#nodes-and-placement): which node holds which vault.

A vault's copies (`center.leases`) say which nodes hold it, primary first; nodes that
report a vault of that name without holding a copy of it follow.

A node is registered by the operator (its credential shown once, stored as SHA-256) and
reports its vaults, revocation seq and audit checkpoint in heartbeats. A checkpoint the
center's own chain does not hold — a center restored from an older backup, a forked log —
is logged loudly on every heartbeat and audited once per checkpoint.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from center import leases, revocations
from center.audit import AuditLog
from center.auth import NODE_PREFIX, digest, new_credential
from center.config import check_public_url
from center.db import Copy, Node, VaultLease
from center.errors import (
    ConflictError,
    ExistsError,
    InvalidArgumentError,
    NotFoundError,
    UnauthorizedError,
    UnavailableError,
)
from center.keyring import Keyring
from center.log import get_logger
from center.principals import CREDENTIAL_PREFIXES, OPERATOR_ID, Principal, check_vault
from center.store import Change, Store
from tickets import ALL_VAULTS

NODE_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
MAX_VAULTS = 4096
"""At most this many vaults in one heartbeat."""
SYSTEM = "system"


@dataclass(frozen=True)
class Beat:
    """One heartbeat: the vaults a node serves, the highest revocation seq it accepted and
    the latest audit checkpoint (seq, hash) it holds."""

    vaults: tuple[str, ...] = ()
    revocation_seq: int | None = None
    checkpoint: tuple[int, str] | None = None


def check_node_id(value: str) -> str:
    if not NODE_ID.fullmatch(value) or value == OPERATOR_ID:
        raise InvalidArgumentError("id", "use 1-64 characters of A-Z, a-z, 0-9, '-' and '_'")
    if value.startswith(CREDENTIAL_PREFIXES):
        raise InvalidArgumentError("id", "ids starting sbm_ or sbn_ look like credentials")
    return value


def check_resource(value: str) -> str:
    try:
        return check_public_url(value)
    except ValueError as exc:
        raise InvalidArgumentError("resource", f"{exc} (the node's MCP URL)") from None


def view(row: Node, placed: Sequence[str] = ()) -> dict[str, Any]:
    """A node as listings show it: never its credential or the credential's digest."""
    checkpoint = None
    if row.checkpoint_seq is not None:
        checkpoint = {"seq": row.checkpoint_seq, "hash": row.checkpoint_hash}
    return {
        "id": row.id,
        "resource": row.resource,
        "vaults": list(row.vaults),
        "placements": list(placed),
        "created": row.created,
        "last_seen": row.last_seen,
        "revocation_seq": row.revocation_seq,
        "checkpoint": checkpoint,
        "checkpoint_ok": row.checkpoint_ok,
    }


async def register(work: Change, node_id: str, resource: str) -> dict[str, Any]:
    """Register a node; the response carries its credential, which is never shown again."""
    node_id, url = check_node_id(node_id), check_resource(resource)
    if await work.session.get(Node, node_id) is not None:
        raise ExistsError("node", node_id)
    holder = await work.session.scalar(select(Node.id).where(Node.resource == url))
    if holder is not None:
        raise ConflictError(f"node {holder!r} already serves {url}; remove it or use another URL")
    credential = new_credential(NODE_PREFIX)
    row = Node(
        id=node_id, resource=url, credential_hash=digest(credential), vaults=[], created=work.now
    )
    work.session.add(row)
    work.record_node(
        "node.register",
        node_id,
        actor=OPERATOR_ID,
        reason=f"resource {url}",
    )
    return {**view(row), "credential": credential}


async def remove(work: Change, node_id: str) -> dict[str, Any]:
    """Forget a node and its copies; its credential stops working at once. A vault left
    with no copy at all loses its lease too (placed nowhere)."""
    row = await work.session.get(Node, node_id, with_for_update=True)
    if row is None:
        raise NotFoundError("node", node_id)
    placed = await _placed(work.session, node_id)
    await work.session.execute(delete(Copy).where(Copy.node_id == node_id))
    await work.session.flush()
    for vault in placed:
        left = await work.session.scalar(
            select(func.count()).select_from(Copy).where(Copy.vault == vault)
        )
        if not left:
            await work.session.execute(delete(VaultLease).where(VaultLease.vault == vault))
    await work.session.delete(row)
    work.record_node("node.remove", node_id, actor=OPERATOR_ID)
    return {"id": node_id, "unplaced": placed}


async def place(
    work: Change,
    vault: str,
    node_id: str,
    actor: str = SYSTEM,
    *,
    factor: int = 2,
    mode: str = "sync",
) -> None:
    """Assign `vault` to a node as its primary (an account's new vault), with replicas on
    the least-loaded other nodes up to `factor` copies; each node's next heartbeat or lease
    renewal asks for its copy."""
    if await work.session.get(Node, node_id) is None:
        raise NotFoundError("node", node_id)
    if await work.session.get(VaultLease, vault) is not None:
        raise ExistsError("placement of vault", vault)
    await leases.place(work, vault, node_id, factor=factor, mode=mode, actor=actor)


async def _placed(session: AsyncSession, node_id: str, *, primary: bool = False) -> list[str]:
    query = select(Copy.vault).where(Copy.node_id == node_id).order_by(Copy.vault)
    if primary:
        query = query.where(Copy.role == leases.PRIMARY)
    return list((await session.scalars(query)).all())


async def listing(session: AsyncSession) -> list[dict[str, Any]]:
    rows = (await session.scalars(select(Node).order_by(Node.id))).all()
    return [view(row, await _placed(session, row.id)) for row in rows]


async def holders(session: AsyncSession) -> dict[str, list[Node]]:
    """Vault → the nodes holding it: its copies, primary first then replicas (in sync
    before lagging), then nodes that report a vault of that name without a copy (by id)."""
    nodes = (await session.scalars(select(Node).order_by(Node.id))).all()
    by_id = {node.id: node for node in nodes}
    held: dict[str, list[Node]] = {}
    for vault, copies in (await leases.copies_of(session)).items():
        held[vault] = [by_id[c.node_id] for c in copies if c.node_id in by_id]
    for node in nodes:
        for vault in node.vaults:
            group = held.setdefault(vault, [])
            if node not in group:
                group.append(node)
    return held


async def resources_for(session: AsyncSession, vaults: Sequence[str]) -> list[str]:
    """The MCP URLs of the nodes holding any of `vaults` (every node for `["*"]`): each
    vault's primary first, then its replicas, vaults in the order given, no URL twice."""
    if ALL_VAULTS in vaults:
        return sorted(set((await session.scalars(select(Node.resource))).all()))
    held = await holders(session)
    found: dict[str, None] = {}
    for vault in vaults:
        for node in held.get(vault, []):
            found.setdefault(node.resource, None)
    return list(found)


async def visible_vaults(session: AsyncSession, caller: Principal) -> list[dict[str, Any]]:
    """The vaults `caller` may see, each with the node holding it (its primary; None if
    none does), its replicas' MCP URLs and its epoch."""
    held = await holders(session)
    copies = await leases.copies_of(session)
    resource = {
        row[0]: row[1] for row in (await session.execute(select(Node.id, Node.resource))).all()
    }
    query = select(VaultLease.vault, VaultLease.epoch)
    epochs = {row[0]: row[1] for row in (await session.execute(query)).all()}
    names = sorted(held) if caller.vaults == (ALL_VAULTS,) else sorted(caller.vaults)
    return [
        _vault(
            name,
            held.get(name, []),
            [resource[c.node_id] for c in copies.get(name, []) if c.role == leases.REPLICA],
            epochs.get(name),
        )
        for name in names
    ]


def _vault(name: str, nodes: list[Node], replicas: list[str], epoch: int | None) -> dict[str, Any]:
    node = nodes[0] if nodes else None
    return {
        "name": name,
        "node": node.id if node else None,
        "mcp_url": node.resource if node else None,
        "reported": node is not None and name in node.vaults,
        "last_seen": node.last_seen if node else None,
        "replicas": replicas,
        "epoch": epoch,
    }


async def heartbeat(store: Store, keyring: Keyring, node_id: str, beat: Beat) -> dict[str, Any]:
    """Record what a node reports; answer the placements it still lacks and the feed's seq.

    Bookkeeping, not an authorization change: it runs while changes are locked, and only
    a checkpoint mismatch goes to the audit log."""
    vaults = sorted({check_vault(name, "vaults") for name in beat.vaults})
    now = store.now()
    async with store.serialized() as session:
        row = await session.get(Node, node_id, with_for_update=True)
        if row is None:
            raise UnauthorizedError("this node was removed; register it again with `node add`")
        verdict, fresh = await _verdict(store.audit, session, row, beat.checkpoint)
        row.vaults, row.last_seen, row.revocation_seq = vaults, now, beat.revocation_seq
        row.checkpoint_seq, row.checkpoint_hash = beat.checkpoint or (None, None)
        row.checkpoint_ok = verdict
        # Only a primary copy is the node's to create: a replica is made by its primary's
        # first push, and one the node created itself would be a vault of its own
        # (docs/design.md#replication-between-nodes).
        placed = await _placed(session, node_id, primary=True)
        wanted = [v for v in placed if v not in vaults]
        seq = await revocations.current_seq(session, keyring, now)
        head = await store.audit.head(session)
    if verdict is False and beat.checkpoint is not None:
        await _mismatch(store, node_id, beat.checkpoint, head, audit=fresh)
    if beat.revocation_seq is not None and beat.revocation_seq > seq:
        get_logger().warning("node.revocation_ahead", node=node_id, node_seq=beat.revocation_seq)
    return {"node": node_id, "placements": wanted, "revocation_seq": seq, "checkpoint_ok": verdict}


async def _verdict(
    audit: AuditLog, session: AsyncSession, row: Node, checkpoint: tuple[int, str] | None
) -> tuple[bool | None, bool]:
    """Whether the center's chain holds `checkpoint`, and whether that was checked anew
    (a checkpoint the node reported before keeps its verdict: one scan, one audit)."""
    if checkpoint is None:
        return None, False
    if (row.checkpoint_seq, row.checkpoint_hash) == checkpoint and row.checkpoint_ok is not None:
        return row.checkpoint_ok, False
    return await audit.hash_at(session, checkpoint[0]) == checkpoint[1], True


async def _mismatch(
    store: Store,
    node_id: str,
    checkpoint: tuple[int, str],
    head: tuple[int, str] | None,
    *,
    audit: bool,
) -> None:
    seq, reported = checkpoint
    center_seq = head[0] if head else 0
    log = get_logger()
    log.error(
        "node.checkpoint_mismatch",
        node=node_id,
        node_seq=seq,
        node_hash=reported,
        center_seq=center_seq,
        hint="the center's audit log lacks a record this node saw: restored or forked?",
    )
    if not audit:
        return
    reason = f"node holds seq {seq} hash {reported}; the chain (head {center_seq}) does not"
    try:
        async with store.change() as work:
            work.record_node(
                "node.checkpoint_mismatch",
                node_id,
                actor=SYSTEM,
                reason=reason,
            )
    except UnavailableError as exc:
        code = exc.code
    else:
        return
    log.error("node.checkpoint_mismatch_unaudited", node=node_id, code=code)


async def replication(session: AsyncSession) -> list[dict[str, Any]]:
    """Every vault a node holds or reports, as `visible_vaults` shows it to the operator,
    with its lease (expiry, state, mode, factor, a move under way) and each copy's role,
    whether it is in sync, how many commits it lags behind the primary and what it last
    reported."""
    held = await holders(session)
    grouped = await leases.copies_of(session)
    resource = {
        row[0]: row[1] for row in (await session.execute(select(Node.id, Node.resource))).all()
    }
    rows = {row.vault: row for row in (await session.scalars(select(VaultLease))).all()}
    listed = []
    for name in sorted(set(held) | set(rows)):
        copies = grouped.get(name, [])
        lease = rows.get(name)
        replicas = [resource[c.node_id] for c in copies if c.role == leases.REPLICA]
        entry = _vault(name, held.get(name, []), replicas, lease.epoch if lease else None)
        primary = next((c for c in copies if c.role == leases.PRIMARY), None)
        entry.update(
            expires=lease.expires if lease else None,
            state=lease.state if lease else None,
            mode=lease.mode if lease else None,
            factor=lease.factor if lease else None,
            move=(
                {"target": lease.move_target, "step": lease.move_step, "keep": lease.move_keep}
                if lease is not None and lease.state == leases.MOVING
                else None
            ),
            copies=[_copy_view(c, primary) for c in copies],
        )
        listed.append(entry)
    return listed


def _copy_view(copy: Copy, primary: Copy | None) -> dict[str, Any]:
    lag = None
    if primary is not None and primary.commits is not None and copy.commits is not None:
        lag = max(0, primary.commits - copy.commits)
    return {
        "node": copy.node_id,
        "role": copy.role,
        "in_sync": copy.in_sync,
        "lag": lag,
        "epoch": copy.epoch,
        "head": copy.head,
        "commits": copy.commits,
        "updated": copy.updated // 1000 if copy.updated is not None else None,
    }
