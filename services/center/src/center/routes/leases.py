"""Vault copies and leases: a node's lease renewal and a primary's out-of-sync call
(node credential), and the operator's view and actions on replication."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter
from fastapi.responses import PlainTextResponse
from pydantic import BaseModel, ConfigDict, Field

from center import failover, leases, moves, nodes
from center.names import check_vault
from center.routes.deps import CenterDep, NodeCaller, Operator, Out

router = APIRouter(tags=["replication"])
BIGINT = 2**63 - 1


class CopyIn(BaseModel):
    """One vault a node holds: the highest epoch it has seen, its head commit (null for
    a vault without commits) and its commit count."""

    model_config = ConfigDict(extra="forbid")

    vault: str = Field(max_length=64)
    epoch: int = Field(ge=0, le=BIGINT)
    head: str | None = Field(None, pattern=r"^[0-9a-f]{40}([0-9a-f]{24})?$")
    commits: int = Field(ge=0, le=BIGINT)
    caught_up: list[Annotated[str, Field(max_length=64)]] = Field(
        default_factory=list,
        max_length=16,
        description="From the primary: the replicas it knows hold `head` and ships every "
        "write to before its ack; the center counts them in sync",
    )


class RecoveredIn(BaseModel):
    """Commits a demoted primary held that the new primary lacked, kept on a branch of
    their own when it rejoined as a replica (possible only after asynchronous replication)."""

    model_config = ConfigDict(extra="forbid")

    vault: str = Field(max_length=64)
    branch: str = Field(max_length=128, pattern=r"^recovery/[0-9A-Za-z._:-]{1,118}$")
    head: str = Field(pattern=r"^[0-9a-f]{40}([0-9a-f]{24})?$")


class LeasesIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    copies: list[CopyIn] = Field(default_factory=list, max_length=leases.MAX_COPIES)
    recovered: list[RecoveredIn] = Field(
        default_factory=list,
        max_length=leases.MAX_RECOVERED,
        description="Recovery branches made since the last renewal that answered",
    )


class NodeRef(Out):
    node: str
    resource: str = Field(description="Its MCP URL")


class ReplicaOut(NodeRef):
    in_sync: bool = Field(description="Whether it may be promoted without losing a write")
    lease: str | None = Field(
        description="For the primary only: the lease JWS (typ sb-lease+jwt) to show this replica"
    )


class VaultLeaseOut(Out):
    vault: str
    role: Literal["primary", "replica"]
    epoch: int = Field(description="The fencing token: grows by one at every new primary")
    mode: Literal["sync", "async"]
    state: Literal["serving", "failing_over", "moving"]
    expires: int | None = Field(description="The primary's lease expiry, Unix ms")
    primary: NodeRef | None
    replicas: list[ReplicaOut]


class LeasesOut(Out):
    ttl: int = Field(description="Seconds a lease lasts")
    renew: int = Field(description="Seconds between renewals")
    vaults: list[VaultLeaseOut]


class OutOfSyncIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    vault: str = Field(max_length=64)
    epoch: int = Field(ge=1, le=BIGINT)
    node: str = Field(max_length=64, description="The replica that missed a write")


class OutOfSyncOut(Out):
    vault: str
    node: str
    epoch: int
    in_sync: bool


@router.post(
    "/v1/nodes/leases",
    summary="A node reports its copies; answers its role per vault and renews its leases",
    response_model=LeasesOut,
)
async def renew(body: LeasesIn, center: CenterDep, node_id: NodeCaller) -> dict[str, Any]:
    reports = [
        leases.Report(c.vault, c.epoch, c.head, c.commits, tuple(c.caught_up)) for c in body.copies
    ]
    if body.recovered:
        kept = [leases.Recovered(r.vault, r.branch, r.head) for r in body.recovered]
        await leases.recovered(center.store, node_id, kept)
    return await leases.renew(
        center.store, center.keyring, leases.Timing.of(center.settings), node_id, reports
    )


@router.post(
    "/v1/nodes/replicas/out-of-sync",
    summary="The primary marks a replica that missed a write as not in sync",
    response_model=OutOfSyncOut,
)
async def out_of_sync(body: OutOfSyncIn, center: CenterDep, node_id: NodeCaller) -> dict[str, Any]:
    return await leases.out_of_sync(center.store, node_id, body.vault, body.epoch, body.node)


class CopyOut(Out):
    node: str
    role: Literal["primary", "replica"]
    in_sync: bool
    lag: int | None = Field(description="Commits behind the primary's last report")
    epoch: int | None = Field(description="The highest epoch it reported")
    head: str | None
    commits: int | None
    updated: int | None = Field(description="When its report last changed, Unix time, seconds")


class MoveOut(Out):
    target: str | None
    step: str | None = Field(description="catch_up or switch")
    keep: bool


class ReplicatedVault(Out):
    name: str
    node: str | None = Field(description="The primary (or the node reporting it)")
    mcp_url: str | None
    reported: bool
    last_seen: int | None
    replicas: list[str] = Field(description="The MCP URLs of its replicas")
    epoch: int | None
    expires: int | None = Field(description="The primary's lease expiry, Unix ms")
    state: Literal["serving", "failing_over", "moving"] | None = Field(
        description="Null for a vault no lease covers yet"
    )
    mode: Literal["sync", "async"] | None
    factor: int | None
    move: MoveOut | None
    copies: list[CopyOut]


class ReplicationList(Out):
    vaults: list[ReplicatedVault]


class PromoteIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    node: str = Field(max_length=64)
    force: bool = Field(False, description="Promote even if writes may be lost (audited)")


class Promoted(Out):
    vault: str
    primary: str
    epoch: int
    demoted: str | None


class MoveIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    to: str = Field(max_length=64, description="The node to make primary")
    keep: bool = Field(False, description="Keep the old primary's copy as a replica")


class MoveStarted(Out):
    vault: str
    primary: str | None
    epoch: int
    state: str
    move: MoveOut | None


class MovedVault(Out):
    vault: str
    to: str


class ReplacedReplica(Out):
    vault: str
    by: str | None


class Drained(Out):
    node: str
    moves: list[MovedVault]
    replicas: list[ReplacedReplica]
    skipped: list[str] = Field(description="Vaults failing over or moving already")


@router.get(
    "/v1/replication",
    summary="Every vault's primary, replicas, epoch, lease and state",
    response_model=ReplicationList,
)
async def replication(center: CenterDep, _: Operator) -> dict[str, Any]:
    async with center.store.read() as session:
        return {"vaults": await nodes.replication(session)}


@router.post(
    "/v1/replication/{vault}/promote",
    summary="Make a replica primary at the next epoch (force: even if writes may be lost)",
    response_model=Promoted,
)
async def promote(vault: str, body: PromoteIn, center: CenterDep, _: Operator) -> dict[str, Any]:
    check_vault(vault)
    async with center.store.change() as work:
        return await failover.force(
            work, vault, body.node, force=body.force, ttl=center.settings.lease_ttl
        )


@router.post(
    "/v1/replication/{vault}/move",
    summary="Move a vault's primary to another node (resumed by any center)",
    response_model=MoveStarted,
)
async def move(vault: str, body: MoveIn, center: CenterDep, _: Operator) -> dict[str, Any]:
    check_vault(vault)
    async with center.store.change() as work:
        return await moves.start(work, vault, body.to, keep=body.keep)


class ConfigureIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mode: Literal["sync", "async"] | None = Field(
        None, description="sync: writes wait for the replicas in sync; async: they do not"
    )
    factor: int | None = Field(None, ge=1, le=leases.MAX_FACTOR, description="Copies to keep")


class Configured(Out):
    vault: str
    mode: Literal["sync", "async"]
    factor: int
    added: list[str] = Field(description="Nodes given a new replica")
    dropped: list[str] = Field(description="Nodes whose replica was dropped")


@router.patch(
    "/v1/replication/{vault}",
    summary="Set a vault's replication mode and factor",
    response_model=Configured,
)
async def configure(
    vault: str, body: ConfigureIn, center: CenterDep, _: Operator
) -> dict[str, Any]:
    async with center.store.change() as work:
        return await leases.configure(work, vault, mode=body.mode, factor=body.factor)


@router.post(
    "/v1/nodes/{node_id}/drain",
    summary="Move every vault off a node: its primaries move, its replicas are replaced",
    response_model=Drained,
)
async def drain(node_id: str, center: CenterDep, _: Operator) -> dict[str, Any]:
    async with center.store.change() as work:
        return await moves.drain(work, node_id)


@router.get(
    "/metrics",
    tags=["operations"],
    summary="Replication state in Prometheus text format (operator)",
    response_class=PlainTextResponse,
)
async def metrics(center: CenterDep, _: Operator) -> PlainTextResponse:
    async with center.store.read() as session:
        listed = await nodes.replication(session)
    text = exposition(listed, now_ms=int(center.store.clock() * 1000))
    return PlainTextResponse(text, media_type="text/plain; version=0.0.4")


def exposition(listed: list[dict[str, Any]], *, now_ms: int) -> str:
    """The Prometheus text of `nodes.replication`'s rows (vaults no lease covers left out)."""
    families: dict[str, tuple[str, list[str]]] = {
        "secondbrain_vault_epoch": ("The primary's epoch", []),
        "secondbrain_vault_lease_seconds": ("Seconds until the primary's lease runs out", []),
        "secondbrain_vault_state": ("1 for the vault's state", []),
        "secondbrain_vault_copies": ("Copies of the vault", []),
        "secondbrain_vault_replicas_in_sync": ("Replicas in sync", []),
        "secondbrain_vault_replica_lag_commits": ("Commits a replica lags behind", []),
    }

    def add(name: str, labels: str, value: float) -> None:
        families[name][1].append(f"{name}{{{labels}}} {value:g}")

    for row in listed:
        if row["state"] is None:
            continue
        vault = f'vault="{row["name"]}"'
        add("secondbrain_vault_epoch", vault, row["epoch"])
        if row["expires"] is not None:
            add("secondbrain_vault_lease_seconds", vault, (row["expires"] - now_ms) / 1000)
        add("secondbrain_vault_state", f'{vault},state="{row["state"]}"', 1)
        add("secondbrain_vault_copies", vault, len(row["copies"]))
        replicas = [c for c in row["copies"] if c["role"] == "replica"]
        add("secondbrain_vault_replicas_in_sync", vault, sum(c["in_sync"] for c in replicas))
        for copy in replicas:
            if copy["lag"] is not None:
                labels = f'{vault},node="{copy["node"]}"'
                add("secondbrain_vault_replica_lag_commits", labels, copy["lag"])
    lines = []
    for name, (help_text, samples) in families.items():
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge", *samples]
    return "\n".join(lines) + "\n"
