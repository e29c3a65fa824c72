"""The tokens page: unexpired agent tokens with their path rules (all for the operator, a
member's own and those it minted otherwise), minting one (a member, within its path
rules; the token shown once) and revoking one by jti (not one whose signing key was
revoked: no node takes it). Minting and revoking are
`center.tokens`, as `/v1/tokens` calls them.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from center import nodes, tokens
from center.auth import as_member
from center.console.web import PAGE_SIZE, PREFIX, ConsoleRoute, Page, Posted, SignedIn
from center.db.models import Key
from center.errors import InvalidArgumentError
from center.principals import MANAGERS, check_member_id
from center.routes.deps import scope_arg
from tickets import SCOPES

router = APIRouter(prefix=PREFIX, route_class=ConsoleRoute)
DAY = 1440


@router.get("/tokens")
async def show(page: SignedIn) -> Response:
    now, offset = page.center.store.now(), page.offset()
    async with page.center.store.read() as session:
        listed, total = await tokens.page(session, page.me, now, offset=offset, limit=PAGE_SIZE)
        vaults = [] if page.me.is_operator else await nodes.visible_vaults(session, page.me)
        await mark_dead_keys(session, listed)
    return page.render(
        "tokens.html",
        tokens=listed,
        total=total,
        offset=offset,
        size=PAGE_SIZE,
        scopes=SCOPES,
        vaults=vaults,
        manager=page.me.role in MANAGERS and not page.me.is_operator,
    )


async def mark_dead_keys(session: AsyncSession, rows: list[dict[str, Any]]) -> None:
    """Set `key_revoked` on each token signed by a key revoked since (`key revoke`): no
    node takes it any more, so the page offers no Revoke. The signer is the key that was
    active when the token was made: the newest created by then."""
    keys = (await session.execute(select(Key.created, Key.revoked).order_by(Key.created))).all()
    for row in rows:
        signers = [key for key in keys if key.created <= row["created"]]
        row["key_revoked"] = bool(signers) and signers[-1].revoked


def _minutes(page: Page) -> int:
    days, minutes = page.value("days"), page.value("minutes")
    if days:
        if not days.isdigit() or not 1 <= int(days) <= tokens.MAX_MINUTES // DAY:
            raise InvalidArgumentError("days", "give 1 to 90 days")
        return int(days) * DAY
    if minutes and (not minutes.isdigit() or not 1 <= int(minutes) <= tokens.MAX_MINUTES):
        raise InvalidArgumentError("minutes", f"give 1 to {tokens.MAX_MINUTES} minutes")
    return int(minutes) if minutes else tokens.DEFAULT_MINUTES


def _ask(page: Page) -> tokens.TokenAsk:
    vaults = [v for v in page.value("vaults").replace(",", " ").split() if v]
    member = page.value("member") or None
    resources = [r for r in page.value("resource").split() if r]
    return tokens.TokenAsk(
        resources=tuple(resources),
        scope=scope_arg(page.value("scope") or None),
        vaults=tuple(vaults) if vaults else None,
        minutes=_minutes(page),
        member=check_member_id(member) if member else None,
        paths=page.rules() or None,
    )


@router.post("/tokens")
async def mint(page: Posted) -> Response:
    ask = _ask(page)
    async with page.change() as work:
        minted = await tokens.exchange(
            work, page.center.keyring, page.center.settings.issuer, as_member(page.me), ask
        )
    return page.render("token_minted.html", minted=minted)


@router.post("/tokens/{jti}/revoke")
async def revoke(page: Posted) -> Response:
    jti = page.request.path_params["jti"]
    async with page.change() as work:
        await tokens.revoke(work, page.me, jti)
    return page.see_other("/tokens", f"Revoked token {jti}.")
