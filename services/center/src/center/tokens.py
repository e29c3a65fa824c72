"""Node tokens for members: a durable credential is exchanged here, never sent to a node.

`POST /v1/tokens` turns a member's credential into a signed agent token (at most 90 days)
for the node resource(s) it names, narrowed to a scope, vaults and path rules the member
holds (a vault without rules asked for keeps the member's). The center keeps each
token's jti and expiry (never the token) so it can be revoked by jti.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select, delete, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from center import rules
from center.config import check_public_url
from center.db import Node, Token
from center.errors import (
    ConflictError,
    ForbiddenError,
    InvalidArgumentError,
    InvalidTargetError,
    NotFoundError,
)
from center.keyring import Keyring
from center.names import Rules
from center.nodes import holders, resources_for
from center.principals import (
    MANAGERS,
    OPERATOR_ID,
    Principal,
    check_vaults,
    current,
    find,
    permissions_scope,
)
from center.store import Change
from tickets import (
    ALL_VAULTS,
    Claims,
    ClaimsError,
    Paths,
    Permissions,
    Scope,
    ScopeExceededError,
    issue,
    narrow,
)
from tickets.revocation import SKEW
from tickets.scopes import EXPANSION, to_claim
from tickets.verify import canonical_resource

MAX_MINUTES = 90 * 24 * 60
DEFAULT_MINUTES = 60


def with_deployment(aud: Sequence[str], deployment: str | None) -> list[str]:
    """`aud` naming the deployment's one address too, when there is one
    (docs/design.md#one-address)."""
    if deployment is None or canonical_resource(deployment) in map(canonical_resource, aud):
        return list(aud)
    return sorted({*aud, deployment})


async def audience(
    session: AsyncSession,
    vaults: Sequence[str],
    given: Sequence[str],
    vouched: Iterable[str] | None = None,
) -> list[str]:
    """The `aud` of a token: the resources given, else the registered nodes holding these
    vaults (reported in their heartbeats or placed there by the center). With `vouched`
    (the resources configured besides registered nodes'), a given resource neither a node
    nor the settings name is refused: every node would answer its token with a bare 401."""
    if given:
        try:
            chosen = sorted({check_public_url(url) for url in given})
        except ValueError as exc:
            raise InvalidArgumentError("resource", str(exc)) from None
        if vouched is not None:
            await _check_known(session, chosen, vouched)
        return chosen
    found = await resources_for(session, vaults)
    if not found:
        raise InvalidArgumentError("vault", await _no_node_message(session, vaults))
    return found


async def _check_known(
    session: AsyncSession, chosen: Sequence[str], vouched: Iterable[str]
) -> None:
    nodes = sorted(set((await session.scalars(select(Node.resource))).all()))
    known = {canonical_resource(url) for url in (*nodes, *vouched)}
    for url in chosen:
        if canonical_resource(url) not in known:
            listed = ", ".join(nodes) or "none yet (register one with `node add`)"
            raise InvalidTargetError(
                "resource",
                f"no registered node has the resource {url}; registered nodes: {listed}",
            )


async def _no_node_message(session: AsyncSession, vaults: Sequence[str]) -> str:
    names = ", ".join(repr(v) for v in sorted(set(vaults)))
    known = ", ".join(sorted(await holders(session))) or "none yet (start a node)"
    return f"no node reports vault {names}; known vaults: {known}"


def narrowed(held: Permissions, scope: Scope | None) -> Permissions:
    """The permissions asked for, refused (403) if any exceeds what is held."""
    if scope is None:
        return held
    try:
        return narrow(held, EXPANSION[scope])
    except ScopeExceededError as exc:
        raise ForbiddenError(exc.message) from None


def narrowed_vaults(caller: Principal, vaults: Sequence[str] | None) -> list[str]:
    if vaults is None:
        return list(caller.vaults)
    asked = check_vaults(vaults)
    if asked == [ALL_VAULTS] and caller.vaults != (ALL_VAULTS,):
        raise ForbiddenError("you may not ask for every vault; name vaults you hold")
    outside = [v for v in asked if v != ALL_VAULTS and not caller.sees(v)]
    if outside:
        raise ForbiddenError(f"vault {outside[0]!r} is not yours; ask for vaults you hold")
    return asked


def claims_for(**fields: Any) -> Claims:
    """`tickets.issue`, with a refused claim reported as the caller's argument error."""
    try:
        return issue(**fields)
    except ClaimsError as exc:
        raise InvalidArgumentError(exc.claim, exc.problem) from None


@dataclass(frozen=True)
class TokenAsk:
    """What a member asks for: the node resource(s), and optionally less than it holds;
    `member` names another member to mint for (admins and owners only)."""

    resources: tuple[str, ...] = ()
    scope: Scope | None = None
    vaults: tuple[str, ...] | None = None
    minutes: int = DEFAULT_MINUTES
    member: str | None = None
    vouched: tuple[str, ...] | None = None
    """Resources the settings name besides registered nodes'; when set, any other is refused."""
    paths: Rules | None = None
    """Path rules per vault of the token, within the member's; a vault left out keeps its."""


async def exchange(
    work: Change, keyring: Keyring, issuer: str, caller: Principal, ask: TokenAsk
) -> dict[str, Any]:
    """Sign an agent token for `caller`, or for the member it names; the response is the
    only place the token appears."""
    caller = await current(work.session, caller)
    if ask.member is None or ask.member == caller.id:
        holder, permissions = caller, narrowed(caller.permissions, ask.scope)
        vaults = narrowed_vaults(caller, ask.vaults)
        bounds = [caller]
    else:
        holder = await _other_member(work, caller, ask.member)
        permissions = narrowed(holder.permissions & caller.permissions, ask.scope)
        vaults = _vaults_for_other(caller, holder, ask.vaults)
        bounds = [holder, caller]
    paths = _paths(bounds, vaults, ask.paths)
    aud = with_deployment(
        await audience(work.session, vaults, ask.resources, ask.vouched), keyring.deployment
    )
    claims = claims_for(
        iss=issuer,
        sub=holder.id,
        aud=aud,
        scope=permissions,
        vaults=vaults,
        role=holder.role,
        now=work.now,
        mgen=holder.generation,
        lifetime=ask.minutes * 60,
        paths=paths,
    )
    token = await keyring.sign(work, claims)
    row = _remember(work, caller.id, claims)
    return {"token": token, "token_type": "Bearer", **_view(row), "audience": aud}


def _paths(bounds: Sequence[Principal], vaults: Sequence[str], asked: Rules | None) -> Paths:
    """The token's rules: those asked for, each within the rules of every one of `bounds`
    (the holder, and the minting manager); a vault not asked for gets the narrowest of
    theirs. Rules for a vault the token does not name are refused."""
    wanted = rules.parse(asked, vaults)
    named = {v for p in bounds for v in rules.only(p.paths, vaults).vaults} | set(wanted.vaults)
    found = {}
    for vault in sorted(named):
        outers = [p.paths.reach(vault) for p in bounds]
        inner = wanted.reach(vault) if vault in wanted.vaults else rules.narrowest(outers)
        for principal, outer in zip(bounds, outers, strict=True):
            rules.narrowed(inner, outer, vault, f"the rules of {principal.id}")
        if inner is not None:
            found[vault] = inner
    return Paths(found)


async def _other_member(work: Change, caller: Principal, member_id: str) -> Principal:
    """docs/design.md#tokens: an admin or owner mints agent tokens for members of its vaults (for a
    client that can only send a static header). Never for the operator."""
    if caller.grant is not None or caller.role not in MANAGERS:
        raise ForbiddenError("only an admin or owner may mint a token for another member")
    holder = await find(work.session, member_id)
    if holder is None:
        raise NotFoundError("member", member_id)
    return holder


def _vaults_for_other(
    caller: Principal, holder: Principal, asked: Sequence[str] | None
) -> list[str]:
    """The vaults both hold and the caller manages: named ones must all qualify; by
    default, those of the member's vaults that qualify."""
    if asked is None:
        if caller.vaults == holder.vaults == (ALL_VAULTS,):
            return [ALL_VAULTS]
        pool = caller.vaults if holder.vaults == (ALL_VAULTS,) else holder.vaults
        found = [v for v in pool if caller.manages(v) and holder.sees(v)]
        if not found:
            raise ForbiddenError(f"you manage none of the vaults of member {holder.id!r}")
        return found
    named = check_vaults(asked)
    if named == [ALL_VAULTS]:
        if caller.vaults == holder.vaults == (ALL_VAULTS,):
            return named
        raise ForbiddenError("name the vaults: every vault is more than you both hold")
    outside = [v for v in named if not (caller.manages(v) and holder.sees(v))]
    if outside:
        raise ForbiddenError(
            f"vault {outside[0]!r} is not one you manage and member {holder.id!r} holds"
        )
    return named


def _remember(work: Change, issuer: str, claims: Claims) -> Token:
    """Keep the token's jti and bounds (never the token) and audit its issue."""
    row = Token(
        jti=claims.jti,
        subject=claims.sub,
        issued_by=issuer,
        scope=to_claim(claims.scope),
        vaults=list(claims.vaults),
        created=work.now,
        expires=claims.exp,
        paths=rules.stored(claims.paths),
    )
    work.session.add(row)
    work.record(
        "token.issue",
        actor=issuer,
        subject=claims.sub,
        scope=permissions_scope(claims.scope),
        vault=claims.vaults[0] if len(claims.vaults) == 1 else None,
        expiry=claims.exp,
        object=f"token:{claims.jti}",
        **rules.audit(claims.paths),
    )
    return row


def _view(row: Token) -> dict[str, Any]:
    return {
        "jti": row.jti,
        "subject": row.subject,
        "issued_by": row.issued_by,
        "scope": row.scope,
        "vaults": list(row.vaults),
        "created": row.created,
        "expires_at": row.expires,
        "revoked": row.revoked,
        "paths": rules.shown(row.paths),
    }


def _visible(caller: Principal, now: int) -> Select[Any]:
    query = select(Token).where(Token.expires > now)
    if not caller.is_operator:
        query = query.where(or_(Token.subject == caller.id, Token.issued_by == caller.id))
    return query


async def listing(session: AsyncSession, caller: Principal, now: int) -> list[dict[str, Any]]:
    """Unexpired tokens: all for the operator, a member's own otherwise. No token material."""
    query = _visible(caller, now).order_by(Token.created, Token.jti)
    return [_view(row) for row in (await session.scalars(query)).all()]


async def page(
    session: AsyncSession, caller: Principal, now: int, *, offset: int, limit: int
) -> tuple[list[dict[str, Any]], int]:
    """One page of `listing`, newest first, and how many there are in all."""
    visible = _visible(caller, now)
    total = await session.scalar(select(func.count()).select_from(visible.subquery()))
    query = visible.order_by(Token.created.desc(), Token.jti).offset(offset).limit(limit)
    return [_view(row) for row in (await session.scalars(query)).all()], total or 0


async def revoke(work: Change, caller: Principal, jti: str) -> dict[str, Any]:
    """Revoke one token by jti; it stays in the revocation feed until it expires."""
    caller = await current(work.session, caller)
    row = await work.session.get(Token, jti, with_for_update=True)
    if (
        row is None
        or row.expires <= work.now
        or not (caller.is_operator or caller.id in (row.subject, row.issued_by))
    ):
        raise NotFoundError("token", jti)
    if row.revoked is not None:
        raise ConflictError(f"token {jti} is already revoked")
    row.revoked = work.now
    work.record("token.revoke", actor=caller.id, subject=row.subject, object=f"token:{jti}")
    return _view(row)


async def revoke_issued_by(work: Change, member_id: str, action: str) -> list[str]:
    """When a member's authority changes or it goes, the tokens it minted for others die
    with it (as its grants do, docs/design.md#grants); they stay in the feed until they expire."""
    rows = (
        await work.session.scalars(
            select(Token).where(
                Token.issued_by == member_id,
                Token.subject != member_id,
                Token.revoked.is_(None),
                Token.expires > work.now,
            )
        )
    ).all()
    for row in rows:
        row.revoked = work.now
        work.record(
            "token.revoke",
            actor=OPERATOR_ID,
            subject=row.subject,
            object=f"token:{row.jti}",
            reason=f"{action} of its issuer {member_id}",
        )
    return [row.jti for row in rows]


async def prune(session: AsyncSession, now: int) -> None:
    """Forget tokens that expired (plus clock skew): no node accepts them any more."""
    await session.execute(delete(Token).where(Token.expires + SKEW < now))
