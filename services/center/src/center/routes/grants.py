"""Grants (`/v1/grants`) and the access view of a vault (`/v1/access/{vault}`).

Issuers are the operator and members with the admin or owner role in the vault; the
grant's token is returned once, by the issuing call, and no listing ever shows it.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response
from pydantic import BaseModel, ConfigDict, Field

from center import grants
from center.principals import check_member_id, check_vault
from center.routes.deps import NO_STORE, Caller, CenterDep, GrantCaller, scope_arg

router = APIRouter(tags=["grants"])


class GrantIn(BaseModel):
    """A grant to issue. Without `grantee`: the issuing member, or for the operator an
    anonymous principal named by the grant id. `parent` delegates under a grant the
    caller received."""

    model_config = ConfigDict(extra="forbid")

    vault: str = Field(max_length=64)
    scope: str = Field("read", description="read, write, read_write, read_write_delete, allow_all")
    minutes: int = Field(15, ge=grants.MIN_MINUTES, le=grants.MAX_MINUTES)
    grantee: str | None = Field(None, max_length=64)
    parent: str | None = Field(None, max_length=32)
    reason: str | None = Field(None, max_length=256, description="Audit metadata; no secrets")
    resource: list[str] = Field(default_factory=list, max_length=16, description="Node MCP URLs")


@router.post("/v1/grants", status_code=201, summary="Issue a grant (1-60 min); token shown once")
async def issue_grant(
    body: GrantIn, center: CenterDep, caller: GrantCaller, response: Response
) -> dict[str, Any]:
    """A grant token as bearer delegates under that grant (its `parent`, depth + 1)."""
    grantee = body.grantee
    if grantee is not None and grantee != "center-admin":
        grantee = check_member_id(grantee)
    ask = grants.GrantAsk(
        vault=check_vault(body.vault),
        scope=scope_arg(body.scope) or "read",
        minutes=body.minutes,
        grantee=grantee,
        parent=body.parent,
        reason=body.reason,
        resources=tuple(body.resource),
        vouched=center.settings.oauth_resources,
    )
    async with center.store.change() as work:
        issued = await grants.issue(work, center.keyring, center.settings.issuer, caller, ask)
    response.headers.update(NO_STORE)
    return issued


@router.get("/v1/grants", summary="Unexpired grants the caller may see; never token material")
async def list_grants(
    center: CenterDep, caller: GrantCaller, vault: str | None = None
) -> dict[str, Any]:
    if vault is not None:
        check_vault(vault)
    async with center.store.read() as session:
        return {"grants": await grants.listing(session, caller, vault, center.store.now())}


@router.delete("/v1/grants/{grant_id}", summary="Revoke a grant and everything under it")
async def revoke_grant(grant_id: str, center: CenterDep, caller: GrantCaller) -> dict[str, Any]:
    async with center.store.change() as work:
        return {"revoked": await grants.revoke(work, caller, grant_id)}


@router.get("/v1/access/{vault}", summary="Members and live grants of a vault")
async def access(vault: str, center: CenterDep, caller: Caller) -> dict[str, Any]:
    check_vault(vault)
    async with center.store.read() as session:
        return await grants.access(session, caller, vault, center.store.now())
