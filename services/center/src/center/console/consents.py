"""Revoking a remembered OAuth consent from the console: a member's own (listed on its
page) or, for the operator, any member's (listed on that member's page). The work is
`center.oauth.consent.revoke`, as `DELETE /v1/consents/{id}`'s.
"""

from __future__ import annotations

from fastapi import APIRouter, Response

from center.console.web import PREFIX, ConsoleRoute, Posted
from center.oauth import consent

router = APIRouter(prefix=PREFIX, route_class=ConsoleRoute)


@router.post("/consents/{consent_id}/revoke")
async def revoke(page: Posted) -> Response:
    consent_id = page.request.path_params["consent_id"]
    async with page.change() as work:
        revoked = await consent.revoke(work, page.me, consent_id)
    back = f"/members/{revoked['member']}" if page.me.is_operator else "/me"
    name = revoked["client_name"] or revoked["client_id"]
    ended = revoked["ended_sign_ins"]
    return page.see_other(back, f"Revoked the consent for {name}; {ended} sign-in(s) ended.")
