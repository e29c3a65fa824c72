"""The requests page: pending requests first, each with approve (optionally narrower in
scope, minutes or path rules) and reject (with a reason); decided and expired ones below; a member's
own requests with cancel (and claim, once approved: the token shown once), and a form to
ask for access.

Every action is `center.requests`, as the API's routes call it: the same checks, the
same refusals (a second decision, an expired request) with the same messages.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response

from center import requests as domain
from center.auth import as_member
from center.console.web import PAGE_SIZE, PREFIX, ConsoleRoute, Page, Posted, SignedIn
from center.errors import InvalidArgumentError
from center.principals import check_vault
from center.routes.deps import scope_arg
from tickets import SCOPES
from tickets.scopes import EXPANSION

router = APIRouter(prefix=PREFIX, route_class=ConsoleRoute)


def narrower(scope: str) -> list[str]:
    """The scopes an approver may grant instead of `scope` (itself and below)."""
    held = EXPANSION.get(scope, frozenset())  # type: ignore[call-overload]
    return [s for s in SCOPES if EXPANSION[s] <= held]


def _may_decide(page: Page, row: dict[str, Any]) -> bool:
    """Whether to offer the decision forms; `center.requests.decide` still decides."""
    me = page.me
    named = not row["approvers"] or me.id in row["approvers"]
    return row["requester"] != me.id and named and (me.is_operator or me.manages(row["vault"]))


async def _listing(page: Page) -> list[dict[str, Any]]:
    store = page.center.store
    if store.locked is not None:
        async with store.read() as session:
            return await domain.listing(session, page.me, None, None)
    async with page.change() as work:
        await domain.housekeep(work)
        return await domain.listing(work.session, page.me, None, None)


@router.get("/requests")
async def show(page: SignedIn) -> Response:
    rows = await _listing(page)
    now = page.center.store.now()
    for row in rows:
        row["age"] = now - row["created"]
        row["narrower"] = narrower(row["scope"])
        row["decidable"] = row["state"] == "pending" and _may_decide(page, row)
    pending = [r for r in rows if r["state"] == "pending"]
    done = sorted(
        (r for r in rows if r["state"] != "pending"),
        key=lambda r: r["decided"] or r["created"],
        reverse=True,
    )
    offset = page.offset()
    vaults = [] if page.me.is_operator else [v for v in page.me.vaults if v != "*"]
    return page.render(
        "requests.html",
        pending=pending,
        done=done[offset : offset + PAGE_SIZE],
        total=len(done),
        offset=offset,
        size=PAGE_SIZE,
        scopes=SCOPES,
        vaults=vaults,
    )


def _minutes(page: Page, name: str = "minutes") -> int | None:
    value = page.value(name)
    if not value:
        return None
    if not value.isdigit() or not 1 <= int(value) <= 60:
        raise InvalidArgumentError(name, "give 1 to 60 minutes")
    return int(value)


def _reason(page: Page) -> str | None:
    reason = page.value("reason")
    if len(reason) > 256:
        raise InvalidArgumentError("reason", "use at most 256 characters")
    return reason or None


@router.post("/requests/{request_id}/approve")
async def approve(page: Posted) -> Response:
    request_id = page.request.path_params["request_id"]
    scope = scope_arg(page.value("scope") or None)
    decision = domain.Decision(scope, _minutes(page), _reason(page), page.rules() or None)
    async with page.change() as work:
        done = await domain.decide(work, page.me, request_id, "approve", decision)
    notice = f"Approved {done['requester']}'s request: {done['scope']} for {done['minutes']} min."
    return page.see_other("/requests", notice)


@router.post("/requests/{request_id}/reject")
async def reject(page: Posted) -> Response:
    request_id = page.request.path_params["request_id"]
    decision = domain.Decision(reason=_reason(page))
    async with page.change() as work:
        done = await domain.decide(work, page.me, request_id, "reject", decision)
    return page.see_other("/requests", f"Rejected {done['requester']}'s request.")


@router.post("/requests/{request_id}/cancel")
async def cancel(page: Posted) -> Response:
    request_id = page.request.path_params["request_id"]
    async with page.change() as work:
        await domain.cancel(work, as_member(page.me), request_id)
    return page.see_other("/requests", "Request withdrawn.")


@router.post("/requests/{request_id}/claim")
async def claim(page: Posted) -> Response:
    """The requester takes its approved grant: the token is shown once, to copy."""
    request_id = page.request.path_params["request_id"]
    center = page.center
    async with page.change() as work:
        issued = await domain.claim(
            work, center.keyring, center.settings.issuer, as_member(page.me), request_id
        )
    return page.render("grant_claimed.html", issued=issued)


@router.post("/requests")
async def create(page: Posted) -> Response:
    ask = domain.RequestAsk(
        vault=check_vault(page.value("vault")),
        scope=scope_arg(page.value("scope") or "read") or "read",
        minutes=_minutes(page) or 15,
        reason=_reason(page),
        paths=page.rules() or None,
    )
    async with page.change() as work:
        made = await domain.create(work, as_member(page.me), ask)
    notice = f"Asked for {made['scope']} in {made['vault']}; an approver decides."
    return page.see_other("/requests", notice)
