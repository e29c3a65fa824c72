"""The grants page: unexpired grants as delegation trees, a page of roots at a time (so
10,000 grants cost one bounded query per level), and revoking one after a confirmation
that lists every grant under it. Listing and revoking are `center.grants`, as the API's.
"""

from __future__ import annotations

from fastapi import APIRouter, Response

from center import grants
from center.console.web import PAGE_SIZE, PREFIX, ConsoleRoute, Posted, SignedIn
from center.principals import check_vault

router = APIRouter(prefix=PREFIX, route_class=ConsoleRoute)


@router.get("/grants")
async def show(page: SignedIn) -> Response:
    vault = page.value("vault") or None
    if vault is not None:
        check_vault(vault)
    offset, now = page.offset(), page.center.store.now()
    async with page.center.store.read() as session:
        tree = await grants.forest(session, page.me, vault, now, offset=offset, limit=PAGE_SIZE)
    base = f"{PREFIX}/grants?" + (f"vault={vault}&" if vault else "")
    return page.render(
        "grants.html",
        tree=tree,
        vault=vault or "",
        offset=offset,
        size=PAGE_SIZE,
        base=base,
        now=now,
    )


@router.get("/grants/{grant_id}/revoke")
async def confirm(page: SignedIn) -> Response:
    grant_id = page.request.path_params["grant_id"]
    now = page.center.store.now()
    async with page.center.store.read() as session:
        row = await grants.visible(session, page.me, grant_id, now)
        below = await grants.descendants(session, [row.id], now)
    return page.render(
        "confirm.html",
        title=f"Revoke grant {grant_id[:8]}…?",
        what=f"{row.grantee} holds {row.scope} in {row.vault} through it. Revoking it "
        "revokes every grant delegated under it too:",
        action=f"{PREFIX}/grants/{grant_id}/revoke",
        fields={},
        revokes={"grants": [grants.view(row), *(grants.view(r) for r in below)]},
        button="Revoke",
        back=f"{PREFIX}/grants",
    )


@router.post("/grants/{grant_id}/revoke")
async def revoke(page: Posted) -> Response:
    grant_id = page.request.path_params["grant_id"]
    async with page.change() as work:
        revoked = await grants.revoke(work, page.me, grant_id)
    return page.see_other("/grants", f"Revoked {len(revoked)} grant(s).")
