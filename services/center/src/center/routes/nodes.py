"""Nodes (`/v1/nodes`), their heartbeat, and the vault directory (`/v1/vaults`).

The operator registers, lists and removes nodes; a node's credential is in the
registration response and nowhere else. Only a node credential may send a heartbeat.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response
from pydantic import BaseModel, ConfigDict, Field

from center import directory, nodes
from center.routes.deps import NO_STORE, Caller, CenterDep, NodeCaller, Operator, Out

router = APIRouter(tags=["nodes"])
BIGINT = 2**63 - 1
"""The largest seq a BIGINT column holds; a larger one is a 422, not a database error."""


class NodeIn(BaseModel):
    """A node to register: its id and the MCP URL clients and tokens (`aud`) use for it."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(max_length=64, description="1-64 of A-Z a-z 0-9 - _")
    resource: str = Field(
        max_length=512, description="The node's MCP URL; https, or http on loopback"
    )


class CheckpointIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    seq: int = Field(ge=1, le=BIGINT)
    hash: str = Field(pattern=r"^[0-9a-f]{64}$")


class HeartbeatIn(BaseModel):
    """What a node reports: its vaults, the highest revocation seq it accepted and the
    latest audit checkpoint from the feed (null before its first snapshot)."""

    model_config = ConfigDict(extra="forbid")

    vaults: list[str] = Field(default_factory=list, max_length=nodes.MAX_VAULTS)
    revocation_seq: int | None = Field(None, ge=0, le=BIGINT)
    audit_checkpoint: CheckpointIn | None = None
    directory_version: str | None = Field(
        None,
        pattern=r"^[0-9a-f]{32}$",
        description="The `directory_version` of the directory the node holds: an unchanged "
        "directory is not sent again",
    )


class Checkpoint(Out):
    seq: int
    hash: str


class NodeOut(Out):
    """A node as listings show it: never its credential or the credential's digest."""

    id: str
    resource: str = Field(description="Its MCP URL")
    vaults: list[str] = Field(description="The vaults its last heartbeat reported")
    placements: list[str] = Field(description="Vaults the center placed on it")
    created: int = Field(description="Unix time, seconds")
    last_seen: int | None = Field(description="Its last heartbeat, Unix time, seconds")
    revocation_seq: int | None = Field(description="The feed seq it last accepted")
    checkpoint: Checkpoint | None = Field(description="The audit checkpoint it last held")
    checkpoint_ok: bool | None = Field(description="Whether the center's chain holds it")


class NewNode(NodeOut):
    credential: str = Field(description="The node credential (sbn_…), shown once")


class RemovedNode(Out):
    id: str
    unplaced: list[str] = Field(description="Vaults placed on it, now placed nowhere")


class NodeList(Out):
    nodes: list[NodeOut]


class Holders(Out):
    vault: str = Field(description="The vault's name")
    nodes: list[str] = Field(description="MCP URLs of the nodes holding it, primary first")
    epoch: int | None = Field(description="The primary's lease epoch; null without a lease")


class Heartbeat(Out):
    node: str
    placements: list[str] = Field(description="Vaults placed on it that it does not report")
    revocation_seq: int = Field(description="The feed's seq now")
    checkpoint_ok: bool | None = Field(description="Whether the center's chain holds it")
    mcp_url: str | None = Field(description="The deployment's one MCP address, if set")
    directory: list[Holders] | None = Field(
        description="Where every vault lives; null when it is the one the node holds"
    )
    directory_version: str = Field(description="The directory's version, to send back")


class Vault(Out):
    name: str
    node: str | None = Field(description="The node holding it")
    mcp_url: str | None = Field(description="Null where no node holds it")
    reported: bool = Field(description="Whether that node reported it (not only placed)")
    last_seen: int | None = Field(description="That node's last heartbeat")
    replicas: list[str] = Field(description="The MCP URLs of its replicas")
    epoch: int | None = Field(description="Its primary's epoch (null: no lease yet)")


class VaultList(Out):
    vaults: list[Vault]


@router.post(
    "/v1/nodes",
    status_code=201,
    summary="Register a node; its credential is shown once",
    response_model=NewNode,
)
async def add_node(
    body: NodeIn, center: CenterDep, _: Operator, response: Response
) -> dict[str, Any]:
    async with center.store.change() as work:
        created = await nodes.register(work, body.id, body.resource)
    response.headers.update(NO_STORE)
    return created


@router.get(
    "/v1/nodes", summary="Nodes with their last heartbeat (no credentials)", response_model=NodeList
)
async def list_nodes(center: CenterDep, _: Operator) -> dict[str, Any]:
    async with center.store.read() as session:
        return {"nodes": await nodes.listing(session)}


@router.delete(
    "/v1/nodes/{node_id}",
    summary="Remove a node; its credential stops working",
    response_model=RemovedNode,
)
async def remove_node(node_id: str, center: CenterDep, _: Operator) -> dict[str, Any]:
    async with center.store.change() as work:
        return await nodes.remove(work, node_id)


@router.post(
    "/v1/nodes/heartbeat",
    summary="A node reports; answers its placements, the feed's seq and where vaults live",
    response_model=Heartbeat,
)
async def heartbeat(body: HeartbeatIn, center: CenterDep, node_id: NodeCaller) -> dict[str, Any]:
    checkpoint = body.audit_checkpoint
    beat = nodes.Beat(
        vaults=tuple(body.vaults),
        revocation_seq=body.revocation_seq,
        checkpoint=(checkpoint.seq, checkpoint.hash) if checkpoint else None,
    )
    answer = await nodes.heartbeat(center.store, center.keyring, node_id, beat)
    async with center.store.read() as session:
        found = await directory.entries(session)
    version = directory.version(found)
    return {
        **answer,
        "mcp_url": center.settings.mcp_url,
        "directory": None if body.directory_version == version else found,
        "directory_version": version,
    }


@router.get(
    "/v1/vaults",
    tags=["vaults"],
    summary="Vaults the caller may see, with MCP URLs",
    response_model=VaultList,
)
async def vaults(center: CenterDep, caller: Caller) -> dict[str, Any]:
    """A member sees its vaults (`mcp_url` null where no node holds one); the operator all."""
    async with center.store.read() as session:
        return {"vaults": await nodes.visible_vaults(session, caller)}
