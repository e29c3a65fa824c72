"""Members CRUD for the operator's admin token (`/v1/members`).

A new member's credential is in the creation response and nowhere else; passwords are
hashed (argon2id) before the change begins, so no lock is held while hashing.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from center import members
from center.principals import OPERATOR_ID
from center.routes.deps import (
    NO_STORE,
    PATHS_HELP,
    CenterDep,
    Operator,
    Out,
    PathsIn,
    PathsOut,
    path_rules,
)
from center.runtime import Center

router = APIRouter(prefix="/v1/members", tags=["members"])
Vaults = list[str]


class MemberIn(BaseModel):
    """A new member. `vaults` lists vault names, or is `["*"]` for every vault."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(max_length=64, description=f"1-64 of A-Z a-z 0-9 - _; not {OPERATOR_ID}")
    vaults: Vaults = Field(min_length=1, max_length=1000, description='Vault names, or ["*"]')
    role: str | None = Field(None, description="reader, editor, admin or owner")
    scope: str | None = Field(None, description="read (default), write, read_write, …")
    password: SecretStr | None = Field(None, description="Optional; 12-256 UTF-8 bytes")
    email: str | None = Field(None, max_length=320, description="Optional login address (unique)")
    paths: PathsIn | None = Field(None, description=PATHS_HELP)


class MemberPatch(BaseModel):
    """Changes to a member; omitted fields stay as they are."""

    model_config = ConfigDict(extra="forbid")

    role: str | None = None
    scope: str | None = None
    vaults: Vaults | None = Field(None, min_length=1, max_length=1000)
    password: SecretStr | None = None
    rotate_credential: bool = Field(False, description="Issue a new credential (shown once)")
    email: str | None = Field(None, max_length=320, description='Login address; "" removes it')
    paths: PathsIn | None = Field(
        None, description="New path rules per vault ({} removes them); omitted: kept"
    )


class MemberOut(Out):
    """A member as the operator sees it: never its credential, digest or password hash."""

    id: str
    role: str
    scope: str
    vaults: Vaults
    generation: int = Field(description="Bumped by every change of authority")
    password: bool = Field(description="Whether it has a password (can sign in)")
    email: str | None
    created: int = Field(description="Unix time, seconds")
    updated: int = Field(description="Unix time, seconds")
    last_sign_in: int | None = Field(description="Unix time, seconds")
    paths: PathsOut = Field(description="Path rules per vault; a vault not named is whole")


class NewMember(MemberOut):
    credential: str = Field(description="The member credential (sbm_…), shown once")


class ChangedMember(MemberOut):
    """The member after the change; `credential` only when it was rotated."""

    revoked_grants: list[str] = Field(description="Grants the change revoked")
    credential: str | None = Field(None, description="The new credential, shown once")


class RemovedMember(Out):
    id: str
    generation: int = Field(description="One higher, so its tokens never come back")
    revoked_grants: list[str]


class MemberList(Out):
    members: list[MemberOut]


async def _hash(center: Center, password: SecretStr | None) -> str | None:
    return None if password is None else await center.passwords.hash(password.get_secret_value())


@router.post(
    "",
    status_code=201,
    summary="Create a member; its credential is shown once",
    response_model=NewMember,
)
async def add_member(
    body: MemberIn, center: CenterDep, _: Operator, response: Response
) -> dict[str, Any]:
    password_hash = await _hash(center, body.password)
    ask = members.MemberAsk(
        body.id,
        body.vaults,
        body.role,
        body.scope,
        password_hash,
        body.email,
        path_rules(body.paths),
    )
    async with center.store.change() as work:
        created = await members.add(work, ask)
    response.headers.update(NO_STORE)
    return created


@router.get("", summary="List members (no credentials)", response_model=MemberList)
async def list_members(center: CenterDep, _: Operator) -> dict[str, Any]:
    async with center.store.read() as session:
        return {"members": await members.listing(session)}


@router.get("/{member_id}", summary="One member (no credential)", response_model=MemberOut)
async def get_member(member_id: str, center: CenterDep, _: Operator) -> dict[str, Any]:
    async with center.store.read() as session:
        return await members.get(session, member_id)


@router.patch(
    "/{member_id}",
    summary="Change a member; authority changes revoke its grants",
    response_model=ChangedMember,
    response_model_exclude_unset=True,
)
async def set_member(
    member_id: str, body: MemberPatch, center: CenterDep, _: Operator, response: Response
) -> dict[str, Any]:
    password_hash = await _hash(center, body.password)
    patch = members.MemberPatch(
        body.role,
        body.scope,
        body.vaults,
        password_hash,
        body.rotate_credential,
        body.email,
        path_rules(body.paths),
    )
    async with center.store.change() as work:
        changed = await members.update(work, member_id, patch)
    response.headers.update(NO_STORE)
    return changed


@router.delete(
    "/{member_id}",
    summary="Remove a member; its tokens and grants die",
    response_model=RemovedMember,
)
async def remove_member(member_id: str, center: CenterDep, _: Operator) -> dict[str, Any]:
    async with center.store.change() as work:
        return await members.remove(work, member_id)
