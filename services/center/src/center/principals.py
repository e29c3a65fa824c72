"""Who can act: the operator and members, the names they may have, and their generations.

A `Principal` is what every decision looks at: id, role, scope, vaults, path rules and
generation.
The operator is the owner of every vault under the reserved id `center-admin`. The
generation counter lives in its own table and outlives the member, so removing and
re-creating an id can never bring its old tokens back.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from center.db import Generation, Grant, Member
from center.errors import InvalidArgumentError, UnauthorizedError
from center.names import CREDENTIAL_PREFIXES as CREDENTIAL_PREFIXES
from center.names import MEMBER_ID as MEMBER_ID
from center.names import OPERATOR_ID as OPERATOR_ID
from center.names import VAULT_NAME as VAULT_NAME
from center.names import check_member_id as check_member_id
from center.names import check_vault as check_vault
from center.names import rules_of as rules_of
from tickets import (
    ALL_VAULTS,
    ROLES,
    Paths,
    Permissions,
    Role,
    Scope,
    UnknownRoleError,
    UnknownScopeError,
    parse_role,
    parse_scope,
)
from tickets.reach import NO_PATHS
from tickets.scopes import EXPANSION, ROLE_CAPS, role_cap, scope_name

FIRST_GENERATION = 1
SCOPE_HELP = (
    "unknown scope; use read, write, read_write, read_write_delete or allow_all "
    "(aliases r, w, rw, rwd, all)"
)
"""Unknown values are not echoed: a misplaced password must not come back in an error."""
MANAGERS: frozenset[Role] = frozenset({"admin", "owner"})


def check_vaults(values: Iterable[str]) -> list[str]:
    """A sorted list of vault names, or `["*"]` (every vault) alone."""
    names = list(values)
    if names == [ALL_VAULTS]:
        return names
    if not names or ALL_VAULTS in names:
        raise InvalidArgumentError("vaults", 'name at least one vault, or ["*"] alone for all')
    return sorted({check_vault(name, "vaults") for name in names})


def role_rank(role: str) -> int:
    return ROLES.index(parse_role(role))


def role_for(scope: Scope) -> Role:
    """The lowest role whose cap covers `scope` (the role a member gets when none is named)."""
    held = EXPANSION[scope]
    return next(role for role in ROLES if held <= role_cap(role))


def role_and_scope(role: str | None, scope: str | None) -> tuple[Role, Scope]:
    """Validate a role and a scope together; defaults: scope read, role derived
    from the scope (docs/design.md#scopes-and-roles), and a scope above the role's cap is
    refused."""
    try:
        wire = parse_scope(scope) if scope is not None else "read"
        named = parse_role(role) if role is not None else role_for(wire)
    except UnknownScopeError:
        raise InvalidArgumentError("scope", SCOPE_HELP) from None
    except UnknownRoleError:
        raise InvalidArgumentError(
            "role", "unknown role; use reader, editor, admin or owner"
        ) from None
    if not EXPANSION[wire] <= role_cap(named):
        cap = ROLE_CAPS[named]
        raise InvalidArgumentError("scope", f"{wire} exceeds the cap of role {named} ({cap})")
    return named, wire


@dataclass(frozen=True)
class Principal:
    """A caller or a grantee as decisions see it."""

    id: str
    role: Role
    scope: Scope
    vaults: tuple[str, ...]
    generation: int = 0
    grant: str | None = None
    """Set when the caller authenticated with a grant token: it acts within that grant."""
    expires: int | None = None
    """The end of that grant."""
    paths: Paths = NO_PATHS
    """Its path rules (center.rules): the member's, or the grant's it acts within."""

    @property
    def is_operator(self) -> bool:
        return self.id == OPERATOR_ID

    @property
    def permissions(self) -> Permissions:
        return EXPANSION[self.scope] & role_cap(self.role)

    def sees(self, vault: str) -> bool:
        return self.vaults == (ALL_VAULTS,) or vault in self.vaults

    def manages(self, vault: str) -> bool:
        """May grant, revoke and inspect access within `vault` (admin or owner there)."""
        return self.role in MANAGERS and self.sees(vault)

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "role": self.role,
            "scope": self.scope,
            "vaults": list(self.vaults),
            "generation": self.generation,
            "paths": {v: rules_of(r) for v, r in sorted(self.paths.vaults.items())},
        }


OPERATOR = Principal(OPERATOR_ID, "owner", "allow_all", (ALL_VAULTS,))


def permissions_scope(permissions: Permissions) -> Scope:
    name = scope_name(permissions)
    assert name is not None, "every role cap intersection is a wire scope"
    return name


async def generation_of(session: AsyncSession, member_id: str) -> int:
    value = await session.scalar(
        select(Generation.generation).where(Generation.member_id == member_id)
    )
    return FIRST_GENERATION if value is None else value


async def bump_generation(session: AsyncSession, member_id: str) -> int:
    """Raise the member's generation by one; every token issued before is refused."""
    row = await session.get(Generation, member_id, with_for_update=True)
    if row is None:
        row = Generation(member_id=member_id, generation=FIRST_GENERATION)
        session.add(row)
    row.generation += 1
    await session.flush()
    return row.generation


async def principal(session: AsyncSession, member: Member) -> Principal:
    return Principal(
        id=member.id,
        role=parse_role(member.role),
        scope=parse_scope(member.scope),
        vaults=tuple(member.vaults),
        generation=await generation_of(session, member.id),
        paths=Paths.from_claim(member.paths),
    )


async def find(session: AsyncSession, member_id: str) -> Principal | None:
    member = await session.get(Member, member_id)
    return None if member is None else await principal(session, member)


async def of_vault(session: AsyncSession, vault: str) -> list[Principal]:
    """Every member that may see `vault`, by id."""
    members = (await session.scalars(select(Member).order_by(Member.id))).all()
    return [p for m in members if (p := await principal(session, m)).sees(vault)]


async def current(session: AsyncSession, caller: Principal) -> Principal:
    """`caller` as it stands now, inside a change: a member changed or removed since it
    authenticated is refused (401) before anything is decided on its behalf."""
    if caller.is_operator:
        return caller
    if caller.grant is not None:
        row = await session.get(Grant, caller.grant, with_for_update=True)
        if row is None or row.revoked is not None:
            raise UnauthorizedError("your grant was revoked while this request ran")
        return caller
    now = await find(session, caller.id)
    if now != caller:
        raise UnauthorizedError("your membership changed while this request ran; retry it")
    return caller
