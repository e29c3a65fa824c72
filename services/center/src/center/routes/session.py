"""A member's own view: its session (`GET /v1/session`) and its password
(`PUT /v1/session/password`). Its node tokens are `center.routes.tokens`.

These are content routes: the operator's admin token gets 401 on each of them.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from center import members
from center.routes.deps import CenterDep, GrantMember, MemberCaller, Out, PathsOut

router = APIRouter(tags=["session"])


class Session(Out):
    principal: str
    kind: Literal["member", "grant"]
    grant: str | None = Field(description="The grant id, for a grant token")
    role: str
    scope: str
    vaults: list[str]
    generation: int
    expires_at: int | None = Field(description="When a grant token expires; null for a member")
    can_read: bool
    can_write: bool
    can_delete: bool
    paths: PathsOut = Field(description="Path rules per vault; its tokens carry them")


class PasswordChanged(Out):
    id: str
    ended_sign_ins: int = Field(description="OAuth sign-ins that ended")


@router.get("/v1/session", summary="What the caller's credential or grant token may do")
async def session(caller: GrantMember) -> Session:
    """A snapshot for a UI, not a permission: every later call is checked again."""
    held = caller.permissions
    return Session(
        principal=caller.id,
        kind="grant" if caller.grant else "member",
        grant=caller.grant,
        role=caller.role,
        scope=caller.scope,
        vaults=list(caller.vaults),
        generation=caller.generation,
        expires_at=caller.expires,
        can_read="read" in held,
        can_write="write" in held,
        can_delete="delete" in held,
        paths=caller.as_dict()["paths"],
    )


class PasswordIn(BaseModel):
    """The member's current password and the new one (12-256 UTF-8 bytes)."""

    model_config = ConfigDict(extra="forbid")

    current: SecretStr = Field(min_length=1, max_length=256)
    new: SecretStr = Field(min_length=1, max_length=256)


@router.put(
    "/v1/session/password",
    summary="Change one's own password; one's sign-ins end",
    response_model=PasswordChanged,
)
async def change_password(
    body: PasswordIn, center: CenterDep, caller: MemberCaller
) -> dict[str, Any]:
    return await members.change_password(
        center.store,
        center.passwords,
        caller,
        old=body.current.get_secret_value(),
        new=body.new.get_secret_value(),
    )
