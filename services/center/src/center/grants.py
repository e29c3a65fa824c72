"""Grants: time-bound delegations inside one vault, and their transitive revocation.

A grant lives 1-60 minutes and never exceeds its issuer: not its role, scope or vault,
nor (when delegated under a parent grant) the parent's scope, vault, path rules or
remaining lifetime; delegation stops at depth 2. A grant without path rules of its own
gets its issuer's (the member's, or the parent grant's). `chain` holds a grant's
ancestors and itself, so revoking any ancestor reaches every descendant at a node with
one set lookup.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import Select, delete, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from center import rules
from center.db import Grant
from center.errors import ConflictError, ForbiddenError, LimitError, NotFoundError
from center.keyring import Keyring
from center.principals import (
    MANAGERS,
    OPERATOR_ID,
    Principal,
    current,
    find,
    of_vault,
    role_for,
    role_rank,
)
from center.store import Change
from center.tokens import audience, claims_for, narrowed, with_deployment
from tickets import ALL_VAULTS, MAX_DEPTH, Paths, Scope
from tickets.reach import NO_PATHS
from tickets.revocation import SKEW
from tickets.scopes import EXPANSION, ROLE_CAPS

MAX_ACTIVE = 10_000
MIN_MINUTES, MAX_MINUTES = 1, 60


@dataclass(frozen=True)
class GrantAsk:
    """What an issuer asks for. No grantee: the issuing member itself, or (operator) an
    anonymous principal named by the grant's id."""

    vault: str
    scope: Scope = "read"
    minutes: int = 15
    grantee: str | None = None
    parent: str | None = None
    reason: str | None = None
    resources: tuple[str, ...] = ()
    request_id: str | None = None
    until: int | None = None
    """An absolute cap on the expiry (a claimed request's approver bound)."""
    vouched: tuple[str, ...] | None = None
    """Resources the settings name besides registered nodes'; when set, any other is refused."""
    paths: Paths = NO_PATHS
    """Path rules in `vault` (center.rules); none: the issuer's."""


def view(row: Grant) -> dict[str, Any]:
    """A grant as listings show it: metadata only, never token material."""
    return {
        "id": row.id,
        "parent": row.parent,
        "chain": list(row.chain),
        "depth": row.depth,
        "issued_by": row.issued_by,
        "grantee": row.grantee,
        "scope": row.scope,
        "role": row.role,
        "vault": row.vault,
        "expiry": row.expires,
        "created": row.created,
        "generation": row.grantee_generation,
        "reason": row.reason,
        "request_id": row.request_id,
        "revoked": row.revoked,
        "paths": rules.shown(row.paths),
    }


def _check_issuer(caller: Principal, ask: GrantAsk) -> None:
    if not caller.manages(ask.vault):
        raise ForbiddenError(
            f"only an admin or owner of vault {ask.vault!r} may issue grants in it"
        )
    narrowed(caller.permissions, ask.scope)


async def _parent(
    session: AsyncSession, caller: Principal, ask: GrantAsk, now: int
) -> Grant | None:
    if ask.parent is None:
        return None
    row = await session.get(Grant, ask.parent)
    if row is None or row.expires <= now:
        raise NotFoundError("grant", ask.parent)
    if row.revoked is not None:
        raise ForbiddenError(f"parent grant {row.id} is revoked; delegate under an active one")
    if row.grantee != caller.id:
        raise ForbiddenError(f"only the grantee of {row.id} may delegate under it")
    if row.vault != ask.vault:
        raise ForbiddenError(f"a delegated grant stays in its parent's vault {row.vault!r}")
    if row.depth + 1 > MAX_DEPTH:
        raise ForbiddenError(f"delegation stops at depth {MAX_DEPTH}; {row.id} is at {row.depth}")
    narrowed(EXPANSION[row.scope], ask.scope)  # type: ignore[index]
    left = row.expires - now
    if ask.minutes * 60 > left:
        raise ForbiddenError(
            f"the parent grant ends in {left} s; ask for at most {left // 60} minutes"
        )
    return row


async def _grantee(
    session: AsyncSession, caller: Principal, ask: GrantAsk, grant_id: str
) -> Principal:
    if ask.grantee == OPERATOR_ID:
        raise ForbiddenError(f"{OPERATOR_ID} is never a grantee; name a member or leave it out")
    if ask.grantee is None:
        if caller.is_operator:
            return Principal(grant_id, role_for(ask.scope), ask.scope, (ask.vault,))
        return caller
    who = await find(session, ask.grantee)
    if who is None or not who.sees(ask.vault):
        raise ForbiddenError(f"{ask.grantee!r} is not a principal of vault {ask.vault!r}")
    if role_rank(who.role) > role_rank(caller.role):
        raise ForbiddenError(f"grantee role {who.role} is above your role {caller.role}")
    if not EXPANSION[ask.scope] <= EXPANSION[ROLE_CAPS[who.role]]:
        raise ForbiddenError(f"{ask.scope} exceeds the cap of the grantee's role {who.role}")
    return who


async def _check_capacity(session: AsyncSession, now: int) -> None:
    active = await session.scalar(
        select(func.count()).select_from(Grant).where(Grant.revoked.is_(None), Grant.expires > now)
    )
    if (active or 0) >= MAX_ACTIVE:
        raise LimitError(f"{MAX_ACTIVE} grants are active; revoke some or wait for them to expire")


def _row(
    grant_id: str,
    ask: GrantAsk,
    *,
    caller: Principal,
    grantee: Principal,
    parent: Grant | None,
    now: int,
) -> Grant:
    return Grant(
        id=grant_id,
        issued_by=caller.id,
        grantee=grantee.id,
        scope=ask.scope,
        role=grantee.role,
        vault=ask.vault,
        parent=parent.id if parent else None,
        chain=[*(parent.chain if parent else []), grant_id],
        depth=parent.depth + 1 if parent else 1,
        issuer_generation=caller.generation,
        grantee_generation=grantee.generation,
        reason=ask.reason,
        request_id=ask.request_id,
        created=now,
        expires=min(now + ask.minutes * 60, ask.until or now + ask.minutes * 60),
        paths=rules.stored(ask.paths),
    )


async def issue(
    work: Change, keyring: Keyring, issuer: str, caller: Principal, ask: GrantAsk
) -> dict[str, Any]:
    """Issue a grant and sign its token; the response is the only place the token appears."""
    caller = await current(work.session, caller)
    await prune(work.session, work.now)
    ask = _under_own_grant(caller, ask)
    _check_issuer(caller, ask)
    parent = await _parent(work.session, caller, ask, work.now)
    ask = replace(ask, paths=_paths(caller, ask, parent))
    grant_id = secrets.token_hex(16)
    grantee = await _grantee(work.session, caller, ask, grant_id)
    return await create(
        work, keyring, issuer, grant_id, ask, caller=caller, grantee=grantee, parent=parent
    )


def _paths(caller: Principal, ask: GrantAsk, parent: Grant | None) -> Paths:
    """The grant's rules: those asked for, within its issuer's (the parent grant's when
    delegated), or the issuer's when none are asked for."""
    if parent is not None:
        outer, whose = (
            rules.loaded(parent.paths).reach(ask.vault),
            f"the rules of parent grant {parent.id}",
        )
    else:
        outer, whose = caller.paths.reach(ask.vault), f"the rules of {caller.id}"
    inner = ask.paths.reach(ask.vault) if ask.paths else outer
    rules.narrowed(inner, outer, ask.vault, whose)
    return NO_PATHS if inner is None else Paths({ask.vault: inner})


def _under_own_grant(caller: Principal, ask: GrantAsk) -> GrantAsk:
    """A grant-token caller delegates under that grant, and only under it."""
    if caller.grant is None:
        return ask
    if ask.parent not in (None, caller.grant):
        raise ForbiddenError(f"with a grant token you delegate under grant {caller.grant} only")
    return replace(ask, parent=caller.grant)


async def create(
    work: Change,
    keyring: Keyring,
    issuer: str,
    grant_id: str,
    ask: GrantAsk,
    *,
    caller: Principal,
    grantee: Principal,
    parent: Grant | None = None,
) -> dict[str, Any]:
    """Store, sign and audit a grant whose issuer and grantee were already checked."""
    await _check_capacity(work.session, work.now)
    aud = with_deployment(
        await audience(work.session, [ask.vault], ask.resources, ask.vouched), keyring.deployment
    )
    row = _row(grant_id, ask, caller=caller, grantee=grantee, parent=parent, now=work.now)
    work.session.add(row)
    claims = claims_for(
        iss=issuer,
        sub=row.grantee,
        aud=aud,
        scope=ask.scope,
        vaults=[row.vault],
        role=grantee.role,
        now=work.now,
        mgen=row.grantee_generation,
        chain=row.chain,
        lifetime=row.expires - work.now,
        paths=ask.paths,
    )
    token = await keyring.sign(work, claims)
    delegated = {"issued_by": caller.id, "via_grant": row.parent} if row.parent else {}
    work.record(
        "grant.issue",
        **_fields(row, caller.id),
        reason=row.reason,
        request_id=row.request_id,
        **delegated,
        **rules.audit(ask.paths),
    )
    return {**view(row), "token": token, "audience": aud}


def _fields(row: Grant, actor: str) -> dict[str, Any]:
    return {
        "actor": actor,
        "subject": row.grantee,
        "scope": row.scope,
        "vault": row.vault,
        "expiry": row.expires,
        "parent": row.parent,
        "object": f"grant:{row.id}",
    }


async def _cascade(work: Change, roots: Sequence[Grant], actor: str, reason: str) -> list[str]:
    """Revoke `roots` and every live descendant; one audit record per grant revoked."""
    revoked: list[str] = []
    frontier = list(roots)
    while frontier:
        for row in frontier:
            if row.revoked is None:
                row.revoked = work.now
                revoked.append(row.id)
                work.record("grant.revoke", **_fields(row, actor), reason=reason)
        children = select(Grant).where(
            Grant.parent.in_([row.id for row in frontier]), Grant.expires > work.now
        )
        frontier = list((await work.session.scalars(children.with_for_update())).all())
    return revoked


async def revoke(work: Change, caller: Principal, grant_id: str) -> list[str]:
    """Revoke a grant and, transitively, everything delegated under it."""
    caller = await current(work.session, caller)
    row = await work.session.get(Grant, grant_id, with_for_update=True)
    visible = row is not None and (
        caller.is_operator or row.issued_by == caller.id or caller.manages(row.vault)
    )
    if row is not None and caller.grant is not None:
        visible = caller.grant in row.chain  # a grant token reaches only its own subtree
    if row is None or not visible or row.expires <= work.now:
        raise NotFoundError("grant", grant_id)
    if (
        not caller.is_operator
        and row.issued_by != caller.id
        and role_rank(row.role) > role_rank(caller.role)
    ):
        raise ForbiddenError(f"grant {grant_id} is for role {row.role}, above your role")
    if row.revoked is not None:
        raise ConflictError(f"grant {grant_id} is already revoked")
    return await _cascade(work, [row], caller.id, "revoked")


async def revoke_involving(work: Change, member_id: str, actor: str, reason: str) -> list[str]:
    """Revoke every live grant issued by or to `member_id`, and their descendants."""
    rows = await work.session.scalars(
        select(Grant)
        .where(
            or_(Grant.issued_by == member_id, Grant.grantee == member_id),
            Grant.revoked.is_(None),
            Grant.expires > work.now,
        )
        .with_for_update()
    )
    return await _cascade(work, list(rows.all()), actor, reason)


async def descendants(session: AsyncSession, roots: Sequence[str], now: int) -> list[Grant]:
    """The live grants delegated under `roots`, transitively: what revoking them revokes."""
    found: list[Grant] = []
    frontier = list(roots)
    while frontier:
        children = select(Grant).where(
            Grant.parent.in_(frontier), Grant.revoked.is_(None), Grant.expires > now
        )
        rows = list((await session.scalars(children.order_by(Grant.created, Grant.id))).all())
        found.extend(rows)
        frontier = [row.id for row in rows]
    return found


async def involving(session: AsyncSession, member_id: str, now: int) -> list[dict[str, Any]]:
    """What `revoke_involving` would revoke now: live grants issued by or to the member,
    and everything under them (a confirmation page lists them first)."""
    rows = list(
        (
            await session.scalars(
                select(Grant)
                .where(
                    or_(Grant.issued_by == member_id, Grant.grantee == member_id),
                    Grant.revoked.is_(None),
                    Grant.expires > now,
                )
                .order_by(Grant.created, Grant.id)
            )
        ).all()
    )
    seen = {row.id for row in rows}
    below = [row for row in await descendants(session, list(seen), now) if row.id not in seen]
    return [view(row) for row in [*rows, *below]]


async def listing(
    session: AsyncSession, caller: Principal, vault: str | None, now: int
) -> list[dict[str, Any]]:
    """Unexpired grants: all for the operator, a manager's vaults, otherwise one's own."""
    query = _visible(Grant, caller, vault, now).order_by(Grant.created, Grant.id)
    rows = (await session.scalars(query)).all()
    return [view(row) for row in rows if caller.grant is None or caller.grant in row.chain]


def _visible(table: Any, caller: Principal, vault: str | None, now: int) -> Select[Any]:
    """The unexpired grants `caller` may list, from `table` (Grant or an alias of it)."""
    query = select(table).where(table.expires > now)
    if vault is not None:
        query = query.where(table.vault == vault)
    if not caller.is_operator:
        if caller.role not in MANAGERS:
            query = query.where(or_(table.issued_by == caller.id, table.grantee == caller.id))
        elif caller.vaults != (ALL_VAULTS,):
            query = query.where(table.vault.in_(caller.vaults))
    return query


async def visible(session: AsyncSession, caller: Principal, grant_id: str, now: int) -> Grant:
    """One grant `caller` may list (a member caller), else NotFoundError."""
    query = _visible(Grant, caller, None, now).where(Grant.id == grant_id)
    row: Grant | None = await session.scalar(query)
    if row is None:
        raise NotFoundError("grant", grant_id)
    return row


@dataclass(frozen=True)
class Tree:
    """One page of the grant forest: `roots` (each with `children`, recursively) and how
    many roots there are in all. A root is a grant whose parent the caller cannot list."""

    roots: list[dict[str, Any]]
    total: int


async def forest(
    session: AsyncSession,
    caller: Principal,
    vault: str | None,
    now: int,
    *,
    offset: int = 0,
    limit: int = 50,
) -> Tree:
    """A page of the grants `listing` shows, as delegation trees (member callers only:
    a grant token lists through `listing`). Each query is bounded by the page."""
    listed = aliased(Grant)
    parents = _visible(listed, caller, vault, now).with_only_columns(listed.id)
    roots = _visible(Grant, caller, vault, now).where(
        or_(Grant.parent.is_(None), Grant.parent.not_in(parents.scalar_subquery()))
    )
    total = await session.scalar(select(func.count()).select_from(roots.subquery()))
    page = roots.order_by(Grant.created.desc(), Grant.id).offset(offset).limit(limit)
    nodes = [{**view(row), "children": []} for row in (await session.scalars(page)).all()]
    level = {node["id"]: node for node in nodes}
    while level:
        below = _visible(Grant, caller, vault, now).where(Grant.parent.in_(list(level)))
        found = {}
        for row in (await session.scalars(below.order_by(Grant.created, Grant.id))).all():
            found[row.id] = {**view(row), "children": []}
            level[row.parent or ""]["children"].append(found[row.id])
        level = found
    return Tree(nodes, total or 0)


async def access(session: AsyncSession, caller: Principal, vault: str, now: int) -> dict[str, Any]:
    """Who may reach `vault`: its member principals and its live grants."""
    if not (caller.is_operator or caller.manages(vault)):
        raise ForbiddenError(f"only an admin or owner of vault {vault!r} may see its access")
    members = [p.as_dict() for p in await of_vault(session, vault)]
    grants = [g for g in await listing(session, caller, vault, now) if g["revoked"] is None]
    return {"vault": vault, "members": members, "grants": grants}


async def prune(session: AsyncSession, now: int) -> None:
    """Forget grants that expired (plus clock skew); their descendants expired with them."""
    await session.execute(delete(Grant).where(Grant.expires + SKEW < now))
