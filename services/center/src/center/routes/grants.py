"""Grants (`/v1/grants`) and the access view of a vault (`/v1/access/{vault}`).

Issuers are the operator and members with the admin or owner role in the vault; the
grant's token is returned once, by the issuing call, and no listing ever shows it.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response
from pydantic import BaseModel, ConfigDict, Field

from center import grants, rules
from center.principals import OPERATOR_ID, check_member_id, check_vault
from center.routes.deps import (
    NO_STORE,
    PATHS_HELP,
    Caller,
    CenterDep,
    GrantCaller,
    Out,
    PathsIn,
    PathsOut,
    path_rules,
    scope_arg,
)

router = APIRouter(tags=["grants"])
SECONDS = "Unix time, seconds"


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
    paths: PathsIn | None = Field(
        None, description="Path rules in its vault, within the issuer's; omitted: the issuer's"
    )


class GrantOut(Out):
    """A grant as listings show it: metadata only, never token material."""

    id: str
    parent: str | None = Field(description="The grant it was delegated under")
    chain: list[str] = Field(description="Its ancestors and itself, root first")
    depth: int = Field(description="1 for a root grant, at most 2")
    issued_by: str
    grantee: str
    scope: str
    role: str
    vault: str
    expiry: int = Field(description=SECONDS)
    created: int = Field(description=SECONDS)
    generation: int = Field(description="The grantee's generation at issue")
    reason: str | None
    request_id: str | None = Field(description="The request it was claimed from")
    revoked: int | None = Field(description=SECONDS)
    paths: PathsOut = Field(description=PATHS_HELP)


class IssuedGrant(GrantOut):
    token: str = Field(description="The grant token (JWS), shown once")
    audience: list[str] = Field(description="The node MCP URLs it is for (`aud`)")


class GrantList(Out):
    grants: list[GrantOut]


class RevokedGrants(Out):
    revoked: list[str] = Field(description="The grant and every live grant under it")


class PrincipalOut(Out):
    id: str
    role: str
    scope: str
    vaults: list[str]
    generation: int
    paths: PathsOut = Field(description=PATHS_HELP)


class Access(Out):
    vault: str
    members: list[PrincipalOut]
    grants: list[GrantOut] = Field(description="Its live grants")


@router.post(
    "/v1/grants",
    status_code=201,
    summary="Issue a grant (1-60 min); token shown once",
    response_model=IssuedGrant,
)
async def issue_grant(
    body: GrantIn, center: CenterDep, caller: GrantCaller, response: Response
) -> dict[str, Any]:
    """A grant token as bearer delegates under that grant (its `parent`, depth + 1)."""
    vault = check_vault(body.vault)
    paths = rules.parse(path_rules(body.paths), [vault])
    grantee = body.grantee
    if grantee is not None and grantee != OPERATOR_ID:
        grantee = check_member_id(grantee)
    ask = grants.GrantAsk(
        vault=vault,
        scope=scope_arg(body.scope) or "read",
        minutes=body.minutes,
        grantee=grantee,
        parent=body.parent,
        reason=body.reason,
        resources=tuple(body.resource),
        vouched=center.settings.vouched_resources,
        paths=paths,
    )
    async with center.store.change() as work:
        issued = await grants.issue(work, center.keyring, center.settings.issuer, caller, ask)
    response.headers.update(NO_STORE)
    return issued


@router.get(
    "/v1/grants",
    summary="Unexpired grants the caller may see; never token material",
    response_model=GrantList,
)
async def list_grants(
    center: CenterDep, caller: GrantCaller, vault: str | None = None
) -> dict[str, Any]:
    if vault is not None:
        check_vault(vault)
    async with center.store.read() as session:
        return {"grants": await grants.listing(session, caller, vault, center.store.now())}


@router.delete("/v1/grants/{grant_id}", summary="Revoke a grant and everything under it")
async def revoke_grant(grant_id: str, center: CenterDep, caller: GrantCaller) -> RevokedGrants:
    async with center.store.change() as work:
        return RevokedGrants(revoked=await grants.revoke(work, caller, grant_id))


@router.get(
    "/v1/access/{vault}", summary="Members and live grants of a vault", response_model=Access
)
async def access(vault: str, center: CenterDep, caller: Caller) -> dict[str, Any]:
    check_vault(vault)
    async with center.store.read() as session:
        return await grants.access(session, caller, vault, center.store.now())
