"""Requests (`/v1/requests`): create, list, approve, reject, cancel and claim.

Members create, cancel and claim with their own credential; the operator and admin or
owner members decide. Listing runs the lazy expiry first, unless changes are locked,
when it only reads.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Response
from pydantic import BaseModel, ConfigDict, Field

from center import requests
from center.principals import check_vault
from center.routes.deps import (
    NO_STORE,
    Caller,
    CenterDep,
    GrantMember,
    MemberCaller,
    Out,
    PathsIn,
    PathsOut,
    path_rules,
    scope_arg,
)
from center.routes.grants import IssuedGrant

router = APIRouter(prefix="/v1/requests", tags=["requests"])
State = Literal["pending", "approved", "rejected", "cancelled", "expired", "claimed"]
SECONDS = "Unix time, seconds"


class RequestIn(BaseModel):
    """A request for a grant in one of the caller's vaults."""

    model_config = ConfigDict(extra="forbid")

    vault: str = Field(max_length=64)
    scope: str = Field("read", description="read, write, read_write, read_write_delete, allow_all")
    minutes: int = Field(15, ge=1, le=60)
    reason: str | None = Field(None, max_length=256, description="Audit metadata; no secrets")
    approvers: list[str] = Field(
        default_factory=list, max_length=requests.MAX_APPROVERS, description="Empty: any manager"
    )
    paths: PathsIn | None = Field(None, description="Path rules asked for in the vault")


class DecisionIn(BaseModel):
    """Optional: approve less than asked (`scope`, `minutes`), with a reason."""

    model_config = ConfigDict(extra="forbid")

    scope: str | None = Field(None, description="Approve at most this scope (within the ask)")
    minutes: int | None = Field(None, ge=1, le=60, description="Approve at most this long")
    reason: str | None = Field(None, max_length=256, description="Audit metadata; no secrets")
    paths: PathsIn | None = Field(None, description="Approve at most these path rules")

    def decision(self) -> requests.Decision:
        return requests.Decision(
            scope_arg(self.scope), self.minutes, self.reason, path_rules(self.paths)
        )


class RejectIn(BaseModel):
    """Optional: why the request is rejected (the requester reads it)."""

    model_config = ConfigDict(extra="forbid")

    reason: str | None = Field(None, max_length=256, description="Audit metadata; no secrets")


class ClaimIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    resource: list[str] = Field(default_factory=list, max_length=16, description="Node MCP URLs")


class RequestOut(Out):
    """A request and its decision; never token material (the claim carries the token)."""

    id: str
    requester: str
    vault: str
    scope: str = Field(description="As approved (the ask, until decided)")
    minutes: int = Field(description="As approved (the ask, until decided)")
    reason: str | None
    approvers: list[str] = Field(description="Empty: any manager of the vault")
    state: State
    created: int = Field(description=SECONDS)
    decided: int | None = Field(description=SECONDS)
    decided_by: str | None
    grant_id: str | None = Field(description="Once claimed: the grant it became")
    asked_scope: str = Field(description="The scope asked for")
    asked_minutes: int = Field(description="The minutes asked for")
    decision_reason: str | None
    paths: PathsOut = Field(description="Path rules as approved (the ask, until decided)")
    asked_paths: PathsOut = Field(description="The path rules asked for")


class RequestList(Out):
    requests: list[RequestOut]


@router.post(
    "",
    status_code=201,
    summary="Ask for a grant (member credential)",
    response_model=RequestOut,
)
async def create_request(body: RequestIn, center: CenterDep, caller: GrantMember) -> dict[str, Any]:
    ask = requests.RequestAsk(
        vault=check_vault(body.vault),
        scope=scope_arg(body.scope) or "read",
        minutes=body.minutes,
        reason=body.reason,
        approvers=tuple(body.approvers),
        paths=path_rules(body.paths),
    )
    async with center.store.change() as work:
        return await requests.create(work, caller, ask)


@router.get("", summary="Own requests, and those the caller may decide", response_model=RequestList)
async def list_requests(
    center: CenterDep, caller: Caller, vault: str | None = None, state: State | None = None
) -> dict[str, Any]:
    if vault is not None:
        check_vault(vault)
    if center.store.locked is not None:
        async with center.store.read() as session:
            return {"requests": await requests.listing(session, caller, vault, state)}
    async with center.store.change() as work:
        await requests.housekeep(work)
        return {"requests": await requests.listing(work.session, caller, vault, state)}


@router.post(
    "/{request_id}/approve",
    summary="Approve a pending request (issues nothing)",
    response_model=RequestOut,
)
async def approve(
    request_id: str, center: CenterDep, caller: Caller, body: DecisionIn | None = None
) -> dict[str, Any]:
    decision = body.decision() if body is not None else None
    async with center.store.change() as work:
        return await requests.decide(work, caller, request_id, "approve", decision)


@router.post("/{request_id}/reject", summary="Reject a pending request", response_model=RequestOut)
async def reject(
    request_id: str, center: CenterDep, caller: Caller, body: RejectIn | None = None
) -> dict[str, Any]:
    decision = requests.Decision(reason=body.reason) if body is not None else None
    async with center.store.change() as work:
        return await requests.decide(work, caller, request_id, "reject", decision)


@router.post(
    "/{request_id}/cancel", summary="Withdraw one's own request", response_model=RequestOut
)
async def cancel(request_id: str, center: CenterDep, caller: MemberCaller) -> dict[str, Any]:
    async with center.store.change() as work:
        return await requests.cancel(work, caller, request_id)


@router.post(
    "/{request_id}/claim",
    status_code=201,
    summary="Claim an approved request: the grant, once",
    response_model=IssuedGrant,
)
async def claim(
    request_id: str,
    center: CenterDep,
    caller: MemberCaller,
    response: Response,
    body: ClaimIn | None = None,
) -> dict[str, Any]:
    resources = body.resource if body is not None else []
    async with center.store.change() as work:
        issued = await requests.claim(
            work, center.keyring, center.settings.issuer, caller, request_id, resources=resources
        )
    response.headers.update(NO_STORE)
    return issued
