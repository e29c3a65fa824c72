"""A member's own page: its vaults (with the node serving each) and rights, the grants
it holds or issued, its agent tokens (not its OAuth sign-ins' tokens), the OAuth clients
it allowed, asking for access, and changing its password — which ends its sign-ins, this
session too. Each part is the API's own code: `/v1/vaults`, `/v1/grants`, `/v1/tokens`,
`/v1/consents`, `/v1/requests` and `PUT /v1/session/password`.
"""

from __future__ import annotations

from fastapi import APIRouter, Response
from fastapi.responses import RedirectResponse
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from center import grants, members, nodes, tokens
from center.auth import as_member
from center.console.web import CHANNEL, HEADERS, PREFIX, ConsoleRoute, Posted, SignedIn
from center.db.models import OAuthFamily
from center.oauth import consent
from tickets import SCOPES

router = APIRouter(prefix=PREFIX, route_class=ConsoleRoute)


@router.get("/me")
async def show(page: SignedIn) -> Response:
    me = as_member(page.me)
    now = page.center.store.now()
    async with page.center.store.read() as session:
        vaults = await nodes.visible_vaults(session, me)
        held = [g for g in await grants.listing(session, me, None, now) if g["revoked"] is None]
        mine = await tokens.listing(session, me, now)
        allowed = await consent.listing(session, me)
        signed_in = await _oauth_jtis(session, me.id)
    return page.render(
        "me.html",
        vaults=vaults,
        received=[g for g in held if g["grantee"] == me.id],
        issued=[g for g in held if g["issued_by"] == me.id and g["grantee"] != me.id],
        tokens=[t for t in mine if t["subject"] == me.id and t["jti"] not in signed_in],
        consents=allowed,
        permissions=sorted(me.permissions),
        scopes=SCOPES,
        ask_vaults=[v for v in me.vaults if v != "*"],
    )


async def _oauth_jtis(session: AsyncSession, member: str) -> set[str]:
    """The access tokens of the member's OAuth sign-ins: not agent tokens it minted."""
    held = await session.scalars(
        select(OAuthFamily.access_jtis).where(OAuthFamily.member_id == member)
    )
    return {str(pair[0]) for pairs in held for pair in pairs}


@router.post("/me/password")
async def password(page: Posted) -> Response:
    if page.raw("new") != page.raw("repeat"):
        return page.render(
            "message.html",
            400,
            title="Passwords differ",
            message="The new password and its repetition differ; nothing was changed.",
            back=f"{PREFIX}/me",
        )
    await members.change_password(
        page.center.store,
        page.center.passwords,
        page.me,
        old=page.raw("current"),
        new=page.raw("new"),
        channel=CHANNEL,
    )
    target = f"{PREFIX}/sign-in?ended=password"
    return RedirectResponse(target, status_code=303, headers=HEADERS)
