"""Requests (docs/design.md#requests): a member asks for a grant, an admin or owner decides, and the
member claims the grant with its own credential — exactly once.

`pending → approved | rejected | cancelled | expired`, then `approved → claimed`. An
approval issues nothing; it records the approver's bounds, and the claim issues the grant
within them if neither side's generation moved since. Expiry (7 days pending, 7 days
approved but unclaimed) and retention (30 days after the last transition) run lazily
whenever requests are created, listed, decided or claimed — never at start.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import and_, delete, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from center import grants, rules
from center.db import Request
from center.errors import ConflictError, ForbiddenError, LimitError, NotFoundError
from center.keyring import Keyring
from center.names import Rules
from center.principals import (
    OPERATOR,
    OPERATOR_ID,
    Principal,
    check_member_id,
    current,
    find,
    role_rank,
)
from center.store import Change
from center.tokens import narrowed
from tickets import Paths, Scope, parse_scope
from tickets.reach import NO_PATHS
from tickets.scopes import EXPANSION, role_cap

DAY = 86_400
MAX_PENDING_PER_REQUESTER = 20
MAX_PENDING_PER_VAULT = 200
PENDING_TTL = 7 * DAY
RETENTION = 30 * DAY
MAX_APPROVERS = 16
TERMINAL = ("rejected", "cancelled", "expired", "claimed")
Verdict = Literal["approve", "reject"]


@dataclass(frozen=True)
class RequestAsk:
    """What a member asks for; `approvers` names who may decide (empty: any manager)."""

    vault: str
    scope: Scope = "read"
    minutes: int = 15
    reason: str | None = None
    approvers: tuple[str, ...] = ()
    paths: Rules | None = None
    """Path rules asked for in `vault`; none: the whole vault (or the approver's rules)."""


@dataclass(frozen=True)
class Decision:
    """How an approver decides: optionally narrower than asked (`scope`, `minutes`,
    `paths`), and with a reason (for a rejection, the requester reads it)."""

    scope: Scope | None = None
    minutes: int | None = None
    reason: str | None = None
    paths: Rules | None = None


def view(row: Request) -> dict[str, Any]:
    """A request as listings show it: metadata and decision, never token material."""
    return {
        "id": row.id,
        "requester": row.requester,
        "vault": row.vault,
        "scope": row.scope,
        "minutes": row.minutes,
        "reason": row.reason,
        "approvers": list(row.approvers),
        "state": row.state,
        "created": row.created,
        "decided": row.decided,
        "decided_by": row.decided_by,
        "grant_id": row.grant_id,
        "asked_scope": row.asked_scope or row.scope,
        "asked_minutes": row.asked_minutes or row.minutes,
        "decision_reason": row.decision_reason,
        "paths": rules.shown(row.paths),
        "asked_paths": rules.shown(row.paths if row.asked_paths is None else row.asked_paths),
    }


def _fields(row: Request, actor: str) -> dict[str, Any]:
    return {
        "actor": actor,
        "subject": row.requester,
        "scope": row.scope,
        "vault": row.vault,
        "request_id": row.id,
        "object": f"request:{row.id}",
    }


async def housekeep(work: Change) -> None:
    """Expire what waited too long (audited, actor `system`); forget what is long done."""
    stale = select(Request).where(
        or_(
            and_(Request.state == "pending", Request.created + PENDING_TTL < work.now),
            and_(Request.state == "approved", Request.decided + PENDING_TTL < work.now),
        )
    )
    for row in (await work.session.scalars(stale.with_for_update())).all():
        row.state, row.decided = "expired", work.now
        work.record("request.expire", **_fields(row, "system"))
    last = func.coalesce(Request.decided, Request.created)
    await work.session.execute(
        delete(Request).where(Request.state.in_(TERMINAL), last + RETENTION < work.now)
    )


def _check_approvers(names: Iterable[str], requester: str) -> list[str]:
    approvers = sorted({n if n == OPERATOR_ID else check_member_id(n) for n in names})
    if len(approvers) > MAX_APPROVERS:
        raise ForbiddenError(f"name at most {MAX_APPROVERS} approvers")
    if requester in approvers:
        raise ForbiddenError("you cannot approve your own request; name someone else")
    return approvers


async def _check_limits(session: AsyncSession, requester: str, vault: str) -> None:
    pending = select(func.count()).select_from(Request).where(Request.state == "pending")
    mine = await session.scalar(
        pending.where(Request.requester == requester, Request.vault == vault)
    )
    if (mine or 0) >= MAX_PENDING_PER_REQUESTER:
        raise LimitError(f"you have {MAX_PENDING_PER_REQUESTER} pending requests for {vault}")
    total = await session.scalar(pending.where(Request.vault == vault))
    if (total or 0) >= MAX_PENDING_PER_VAULT:
        raise LimitError(f"vault {vault} has {MAX_PENDING_PER_VAULT} pending requests")


async def create(work: Change, caller: Principal, ask: RequestAsk) -> dict[str, Any]:
    """File a request for a grant in a vault the member belongs to."""
    caller = await current(work.session, caller)
    await housekeep(work)
    if not caller.sees(ask.vault):
        raise ForbiddenError(
            f"you are not a member of vault {ask.vault!r}, so you cannot ask for access to it"
            f" (your vaults: {', '.join(caller.vaults) or 'none'}); ask its owner or the"
            " operator to add you to it"
        )
    if caller.grant is not None and await find(work.session, caller.id) is None:
        raise ForbiddenError("an anonymous grant cannot ask for grants; a member must")
    if not EXPANSION[ask.scope] <= role_cap(caller.role):
        raise ForbiddenError(f"{ask.scope} exceeds the cap of your role {caller.role}")
    approvers = _check_approvers(ask.approvers, caller.id)
    paths = rules.parse(ask.paths, [ask.vault])
    await _check_limits(work.session, caller.id, ask.vault)
    row = Request(
        id=secrets.token_hex(16),
        requester=caller.id,
        vault=ask.vault,
        scope=ask.scope,
        minutes=ask.minutes,
        reason=ask.reason,
        approvers=approvers,
        state="pending",
        created=work.now,
        paths=rules.stored(paths),
    )
    work.session.add(row)
    via = {"via_grant": caller.grant} if caller.grant else {}
    work.record(
        "request.create", **_fields(row, caller.id), reason=row.reason, **via, **rules.audit(paths)
    )
    return view(row)


def may_decide(caller: Principal, row: Request) -> bool:
    """A manager of the vault who is not the requester, and named if approvers are named."""
    if caller.id == row.requester or not caller.manages(row.vault):
        return False
    return not row.approvers or caller.id in row.approvers


async def listing(
    session: AsyncSession, caller: Principal, vault: str | None, state: str | None
) -> list[dict[str, Any]]:
    """All requests for the operator; a member's own and those it may decide otherwise."""
    query = select(Request).order_by(Request.created, Request.id)
    if vault is not None:
        query = query.where(Request.vault == vault)
    if state is not None:
        query = query.where(Request.state == state)
    rows = (await session.scalars(query)).all()
    visible = [
        r for r in rows if caller.is_operator or r.requester == caller.id or may_decide(caller, r)
    ]
    return [view(row) for row in visible]


async def _request(session: AsyncSession, caller: Principal, request_id: str) -> Request:
    row = await session.get(Request, request_id, with_for_update=True)
    if row is None or not (
        caller.is_operator or row.requester == caller.id or caller.manages(row.vault)
    ):
        raise NotFoundError("request", request_id)
    return row


async def decide(
    work: Change,
    caller: Principal,
    request_id: str,
    verdict: Verdict,
    decision: Decision | None = None,
) -> dict[str, Any]:
    """Approve or reject a pending request, once; an approval records the approver's bounds
    and may narrow the scope or the minutes asked for (never widen them)."""
    decision = decision or Decision()
    caller = await current(work.session, caller)
    await housekeep(work)
    row = await _request(work.session, caller, request_id)
    if caller.id == row.requester:
        raise ForbiddenError("you cannot decide your own request; you may cancel it")
    if not may_decide(caller, row):
        raise ForbiddenError(f"you are not an approver of request {request_id}")
    if row.state != "pending":
        raise ConflictError(f"request {request_id} is already {row.state}")
    requester = await find(work.session, row.requester)
    if requester is None:
        raise ConflictError(f"the requester {row.requester!r} no longer exists")
    narrowed(caller.permissions, parse_scope(row.scope))
    if role_rank(requester.role) > role_rank(caller.role):
        raise ForbiddenError(f"the requester's role {requester.role} is above yours")
    row.decided, row.decided_by, row.decision_reason = work.now, caller.id, decision.reason
    if verdict == "reject":
        row.state = "rejected"
    else:
        _narrow(row, decision)
        _narrow_paths(row, decision, caller)
        row.state, row.approver_scope, row.approver_role = "approved", caller.scope, caller.role
        row.approver_generation, row.requester_generation = caller.generation, requester.generation
    work.record(
        f"request.{verdict}",
        **_fields(row, caller.id),
        reason=_why(row, decision),
        **(rules.audit(rules.loaded(row.paths)) if verdict == "approve" else {}),
    )
    return view(row)


def _narrow(row: Request, decision: Decision) -> None:
    """Apply an approver's narrower scope or minutes; anything wider is refused (403)."""
    scope, minutes = decision.scope or parse_scope(row.scope), decision.minutes or row.minutes
    if not EXPANSION[scope] <= EXPANSION[parse_scope(row.scope)]:
        raise ForbiddenError(f"{scope} is more than the {row.scope} asked for; approve less")
    if not 1 <= minutes <= row.minutes:
        raise ForbiddenError(f"approve 1 to {row.minutes} minutes, the most that was asked for")
    if (scope, minutes) != (row.scope, row.minutes):
        row.asked_scope, row.asked_minutes = row.scope, row.minutes
        row.scope, row.minutes = scope, minutes


def _narrow_paths(row: Request, decision: Decision, approver: Principal) -> None:
    """The rules approved: those the approver names (within the ask), else the ask; both
    within the approver's own rules (an ask for the whole vault gets the approver's)."""
    asked = rules.loaded(row.paths).reach(row.vault)
    mine = approver.paths.reach(row.vault)
    if decision.paths:
        approved = rules.parse(decision.paths, [row.vault]).reach(row.vault)
        rules.narrowed(approved, asked, row.vault, "the rules asked for", "approve less")
    else:
        approved = asked if asked is not None else mine
    rules.narrowed(approved, mine, row.vault, f"your rules as {approver.id}", "approve less")
    chosen = NO_PATHS if approved is None else Paths({row.vault: approved})
    if chosen != rules.loaded(row.paths):
        row.asked_paths, row.paths = row.paths or {}, rules.stored(chosen)


def _why(row: Request, decision: Decision) -> str | None:
    """The audit reason of a decision: the approver's words, and any narrowing."""
    parts = [decision.reason] if decision.reason else []
    if row.asked_scope is not None and row.state == "approved":
        parts.append(
            f"narrowed from {row.asked_scope} for {row.asked_minutes} min "
            f"to {row.scope} for {row.minutes} min"
        )
    return "; ".join(parts)[:256] or None


async def cancel(work: Change, caller: Principal, request_id: str) -> dict[str, Any]:
    """The requester withdraws a pending or approved, unclaimed request."""
    caller = await current(work.session, caller)
    await housekeep(work)
    row = await _request(work.session, caller, request_id)
    if row.requester != caller.id:
        raise ForbiddenError("only the requester may cancel a request")
    if row.state not in ("pending", "approved"):
        raise ConflictError(f"request {request_id} is already {row.state}")
    row.state, row.decided = "cancelled", work.now
    work.record("request.cancel", **_fields(row, caller.id))
    return view(row)


async def _approver(session: AsyncSession, row: Request, caller: Principal) -> Principal:
    approver = (
        OPERATOR if row.decided_by == OPERATOR_ID else await find(session, row.decided_by or "")
    )
    unchanged = (
        approver is not None
        and row.approver_generation is not None
        and approver.generation == row.approver_generation
        and caller.generation == row.requester_generation
    )
    if not unchanged or approver is None:
        raise ConflictError("the approval no longer holds (a member changed); request again")
    return approver


async def claim(
    work: Change,
    keyring: Keyring,
    issuer: str,
    caller: Principal,
    request_id: str,
    *,
    resources: Sequence[str] = (),
) -> dict[str, Any]:
    """Issue the approved grant to its requester, exactly once; the token appears only here."""
    caller = await current(work.session, caller)
    await housekeep(work)
    row = await _request(work.session, caller, request_id)
    if row.requester != caller.id:
        raise ForbiddenError("only the requester may claim, with its own member credential")
    if row.state != "approved":
        raise ConflictError(f"request {request_id} is {row.state}; only an approved one is claimed")
    approver = await _approver(work.session, row, caller)
    ask = grants.GrantAsk(
        vault=row.vault,
        scope=parse_scope(row.scope),
        minutes=row.minutes,
        reason=row.reason,
        resources=tuple(resources),
        request_id=row.id,
        until=row.approver_expiry,
        paths=rules.loaded(row.paths),
    )
    issued = await grants.create(
        work, keyring, issuer, secrets.token_hex(16), ask, caller=approver, grantee=caller
    )
    row.state, row.decided, row.grant_id = "claimed", work.now, issued["id"]
    work.record("request.claim", **{**_fields(row, caller.id), "object": f"grant:{row.grant_id}"})
    return issued


OUTCOMES = {
    "request.approve": "approved",
    "request.reject": "rejected",
    "request.cancel": "cancelled",
    "request.claim": "claimed",
    "request.expire": "expired",
}


async def reconcile(work: Change, records: Iterable[Mapping[str, Any]]) -> list[str]:
    """Bring requests in line with decisions the log holds but the database lost (a crash
    between the audit fsync and the commit), so no decision or claim can happen twice.
    A restored approval has no recorded bounds, so it can never be claimed."""
    touched = []
    for record in records:
        outcome = OUTCOMES.get(record.get("action", ""))
        row = await work.session.get(Request, record.get("request_id") or "")
        if outcome is None or row is None or row.state == outcome:
            continue
        row.state, row.decided = outcome, work.now
        row.decided_by = (
            record.get("actor") if outcome in ("approved", "rejected") else row.decided_by
        )
        touched.append(row.id)
    return touched
