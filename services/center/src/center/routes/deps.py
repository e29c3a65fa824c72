"""What every route shares: the running center, who is calling, and the answer shapes.

The bearer scheme is declared once (`HTTPBearer`) so the OpenAPI schema documents it;
the credential itself is handed straight to `center.auth` and never logged.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, Field

from center.errors import InvalidArgumentError
from center.names import Rules
from center.principals import SCOPE_HELP, Principal
from center.runtime import Center
from tickets import Scope, UnknownScopeError, parse_scope

_bearer = HTTPBearer(
    auto_error=False,
    description="Admin token or member credential; a grant token where a route says so",
)
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
_node_bearer = HTTPBearer(
    auto_error=False, scheme_name="NodeCredential", description="A node's credential (sbn_…)"
)
NodeCredentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_node_bearer)]
NO_STORE = {"Cache-Control": "no-store"}
"""Headers for a response that carries a credential or a token."""


class Out(BaseModel):
    """Base of every response model. A key the model does not declare fails the answer
    (500) instead of vanishing, so the schema cannot fall behind what the domain says."""

    model_config = ConfigDict(extra="forbid")


class PathRulesIn(BaseModel):
    """Folders of one vault (vault-relative): read under `read` (omitted: the whole vault),
    write under `write` (inside `read`; omitted: wherever it reads), neither under `exclude`."""

    model_config = ConfigDict(extra="forbid")

    read: list[str] | None = Field(
        None, max_length=64, description="Folders it may read, e.g. projects/acme; omitted: all"
    )
    write: list[str] | None = Field(None, max_length=64, description="Omitted: same as read")
    exclude: list[str] = Field(default_factory=list, max_length=64)


class PathRulesOut(Out):
    read: list[str] | None = Field(description="Folders it may read; null: the whole vault")
    write: list[str] | None = Field(description="Folders it may write; null: the whole vault")
    exclude: list[str]


PathsIn = dict[str, PathRulesIn]
PathsOut = dict[str, PathRulesOut]
PATHS_HELP = "Path rules per vault; a vault not named is reached whole"


def path_rules(value: PathsIn | None) -> Rules | None:
    """Rules a request sent in their one shape (`center.rules.parse` cleans them)."""
    if value is None:
        return None
    return {vault: rules.model_dump() for vault, rules in value.items()}


class ErrorDetail(Out):
    code: str = Field(description="Stable machine code, e.g. not_found, forbidden, conflict")
    message: str = Field(description="What happened and what to do next")


class ErrorBody(Out):
    """The one error body of the center's API (the OAuth endpoints speak OAuth's)."""

    error: ErrorDetail


ERRORS: dict[int | str, dict[str, Any]] = {
    "4XX": {"model": ErrorBody, "description": "Refused; `error.code` says which rule"},
    "5XX": {"model": ErrorBody, "description": "Unavailable (503) or internal (500)"},
}
"""The error answers every API route declares, once, where the routers are mounted."""


def get_center(request: Request) -> Center:
    center: Center = request.app.state.center
    return center


CenterDep = Annotated[Center, Depends(get_center)]


def _value(credentials: HTTPAuthorizationCredentials | None) -> str | None:
    return credentials.credentials if credentials is not None else None


async def get_caller(center: CenterDep, credentials: Credentials) -> Principal:
    """The operator or a member."""
    return await center.auth.caller(_value(credentials))


async def get_member(center: CenterDep, credentials: Credentials) -> Principal:
    """A member; the admin token gets 401 (content routes)."""
    return await center.auth.member(_value(credentials))


async def get_caller_or_grant(center: CenterDep, credentials: Credentials) -> Principal:
    """The operator, a member, or the holder of a live grant token acting within it."""
    return await center.auth.caller(_value(credentials), grants=True)


async def get_member_or_grant(center: CenterDep, credentials: Credentials) -> Principal:
    """A member, or the holder of a live grant token; the admin token gets 401."""
    return await center.auth.member(_value(credentials), grants=True)


async def get_operator(center: CenterDep, credentials: Credentials) -> Principal:
    """The operator; a member gets 403."""
    return await center.auth.operator(_value(credentials))


async def get_node(center: CenterDep, credentials: NodeCredentials) -> str:
    """A registered node's id; every other bearer (admin token, member) gets 401."""
    return await center.auth.node(_value(credentials))


Caller = Annotated[Principal, Depends(get_caller)]
MemberCaller = Annotated[Principal, Depends(get_member)]
GrantCaller = Annotated[Principal, Depends(get_caller_or_grant)]
GrantMember = Annotated[Principal, Depends(get_member_or_grant)]
Operator = Annotated[Principal, Depends(get_operator)]
NodeCaller = Annotated[str, Depends(get_node)]


def scope_arg(value: str | None) -> Scope | None:
    """A wire scope or alias from a request (`rw`, `read+write`, ...); 400 if unknown."""
    if value is None:
        return None
    try:
        return parse_scope(value)
    except UnknownScopeError:
        raise InvalidArgumentError("scope", SCOPE_HELP) from None
