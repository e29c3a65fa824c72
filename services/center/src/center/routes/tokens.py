"""A member's node tokens (`/v1/tokens`): minted from its credential, listed, revoked.

Content routes: the operator's admin token may list and revoke but not mint. No response
except the one that mints a token carries token material.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Response
from pydantic import BaseModel, ConfigDict, Field

from center import tokens
from center.routes.deps import (
    NO_STORE,
    Caller,
    CenterDep,
    MemberCaller,
    Out,
    PathsIn,
    PathsOut,
    path_rules,
    scope_arg,
)

router = APIRouter(tags=["tokens"])
Resources = list[str]
SECONDS = "Unix time, seconds"


class TokenOut(Out):
    """A node token as listings show it: no token material."""

    jti: str
    subject: str = Field(description="The member the token acts as")
    issued_by: str
    scope: str
    vaults: list[str]
    created: int = Field(description=SECONDS)
    expires_at: int = Field(description=SECONDS)
    revoked: int | None = Field(description=SECONDS)
    paths: PathsOut = Field(description="The path rules it carries")


class MintedToken(Out):
    token: str = Field(description="The signed token (JWS), shown once")
    token_type: Literal["Bearer"]
    jti: str
    subject: str
    issued_by: str
    scope: str
    vaults: list[str]
    created: int = Field(description=SECONDS)
    expires_at: int = Field(description=SECONDS)
    revoked: int | None
    audience: list[str] = Field(description="The node MCP URLs it is for (`aud`)")
    paths: PathsOut = Field(description="The path rules it carries")


class TokenList(Out):
    tokens: list[TokenOut]


class TokenIn(BaseModel):
    """Exchange the member credential for a node token."""

    model_config = ConfigDict(extra="forbid")

    resource: Resources = Field(
        default_factory=list, max_length=16, description="Node MCP URL(s); default: its nodes"
    )
    scope: str | None = Field(None, description="At most the member's scope (default: all)")
    vaults: list[str] | None = Field(None, min_length=1, max_length=1000)
    minutes: int = Field(tokens.DEFAULT_MINUTES, ge=1, le=tokens.MAX_MINUTES)
    member: str | None = Field(
        None,
        max_length=64,
        description="Mint for this member instead (admins and owners: vaults you manage "
        "and it holds, within both your scopes); it dies if your authority changes",
    )
    paths: PathsIn | None = Field(
        None, description="Path rules per vault, within the member's; a vault left out keeps its"
    )


@router.post(
    "/v1/tokens",
    status_code=201,
    summary="A token for oneself, or for a member one manages",
    response_model=MintedToken,
)
async def mint_token(
    body: TokenIn, center: CenterDep, caller: MemberCaller, response: Response
) -> dict[str, Any]:
    vaults = tuple(body.vaults) if body.vaults is not None else None
    ask = tokens.TokenAsk(
        tuple(body.resource),
        scope_arg(body.scope),
        vaults,
        body.minutes,
        body.member,
        vouched=center.settings.vouched_resources,
        paths=path_rules(body.paths),
    )
    async with center.store.change() as work:
        minted = await tokens.exchange(work, center.keyring, center.settings.issuer, caller, ask)
    response.headers.update(NO_STORE)
    return minted


@router.get(
    "/v1/tokens",
    summary="Unexpired tokens: one's own, or all for the operator",
    response_model=TokenList,
)
async def list_tokens(center: CenterDep, caller: Caller) -> dict[str, Any]:
    async with center.store.read() as db:
        return {"tokens": await tokens.listing(db, caller, center.store.now())}


@router.delete(
    "/v1/tokens/{jti}",
    summary="Revoke a token by jti (kept in the feed until exp)",
    response_model=TokenOut,
)
async def revoke_token(jti: str, center: CenterDep, caller: Caller) -> dict[str, Any]:
    async with center.store.change() as work:
        return await tokens.revoke(work, caller, jti)
