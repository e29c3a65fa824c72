"""The members pages (the operator's, as `/v1/members` is): the list with role, scope,
vaults, path rules, generation and last sign-in; add (the credential shown once); change
role, scope, vaults, path rules or e-mail; set a password; rotate the credential;
remove. A change that revokes — new authority, a new credential, removal — first shows
what it will revoke and asks to confirm. Each action is `center.members`, as the API calls it.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response

from center import grants, members, rules, tokens
from center.auth import as_operator
from center.console.web import PAGE_SIZE, PREFIX, ConsoleRoute, Page, Posted, SignedIn
from center.oauth import consent
from center.principals import OPERATOR
from tickets import ROLES, SCOPES

router = APIRouter(prefix=PREFIX, route_class=ConsoleRoute)


def _vaults(text: str) -> list[str]:
    return [name.strip() for name in text.replace(",", " ").split() if name.strip()]


@router.get("/members")
async def show(page: SignedIn) -> Response:
    as_operator(page.me)
    offset = page.offset()
    async with page.center.store.read() as session:
        listed = await members.listing(session, offset, PAGE_SIZE)
        total = await members.count(session)
    return page.render(
        "members.html",
        members=listed,
        offset=offset,
        size=PAGE_SIZE,
        total=total,
        roles=ROLES,
        scopes=SCOPES,
    )


async def _hash(page: Page) -> str | None:
    password = page.raw("password")
    return await page.center.passwords.hash(password) if password else None


@router.post("/members")
async def add(page: Posted) -> Response:
    as_operator(page.me)
    ask = members.MemberAsk(
        id=page.value("id"),
        vaults=_vaults(page.value("vaults")),
        role=page.value("role") or None,
        scope=page.value("scope") or None,
        password_hash=await _hash(page),
        email=page.value("email") or None,
        paths=page.rules() or None,
    )
    async with page.change() as work:
        created = await members.add(work, ask)
    return page.render("member_created.html", member=created, credential=created["credential"])


@router.get("/members/{member_id}")
async def one(page: SignedIn) -> Response:
    as_operator(page.me)
    member_id = page.request.path_params["member_id"]
    async with page.center.store.read() as session:
        member = await members.get(session, member_id)
        allowed = await consent.listing(session, page.me, member_id)
    return page.render("member.html", member=member, roles=ROLES, scopes=SCOPES, consents=allowed)


async def _revokes(page: Page, member_id: str) -> dict[str, Any]:
    """What a change of authority or a removal of `member_id` revokes now."""
    now = page.center.store.now()
    async with page.center.store.read() as session:
        involved = await grants.involving(session, member_id, now)
        minted = [
            row
            for row in await tokens.listing(session, OPERATOR, now)
            if row["revoked"] is None and row["issued_by"] == member_id != row["subject"]
        ]
    return {"grants": involved, "tokens": minted}


def _patch(page: Page, member: dict[str, Any]) -> members.MemberPatch:
    vaults = _vaults(page.value("vaults"))
    email = page.value("email")
    return members.MemberPatch(
        role=page.value("role") or None,
        scope=page.value("scope") or None,
        vaults=vaults or None,
        email=email if email != (member["email"] or "") else None,
        rotate_credential=page.value("rotate") == "yes",
        paths=page.rules(),
    )


def _authority(patch: members.MemberPatch, member: dict[str, Any]) -> bool:
    wanted = (
        patch.role or member["role"],
        patch.scope or member["scope"],
        sorted(patch.vaults) if patch.vaults else member["vaults"],
        rules.loaded(member["paths"] if patch.paths is None else patch.paths),
    )
    held = (member["role"], member["scope"], member["vaults"], rules.loaded(member["paths"]))
    return wanted != held or patch.rotate_credential


@router.post("/members/{member_id}")
async def change(page: Posted) -> Response:
    as_operator(page.me)
    member_id = page.request.path_params["member_id"]
    async with page.center.store.read() as session:
        member = await members.get(session, member_id)
    patch = _patch(page, member)
    if _authority(patch, member) and page.value("confirm") != "yes":
        return page.render(
            "confirm.html",
            title=f"Change {member_id}?",
            what=f"Changing the role, scope, vaults or path rules of {member_id}, or its "
            "credential, "
            "ends its tokens at every node and revokes these:",
            action=f"{PREFIX}/members/{member_id}",
            fields=dict(page.form),
            revokes=await _revokes(page, member_id),
            button="Change and revoke",
        )
    async with page.change() as work:
        changed = await members.update(work, member_id, patch)
    if "credential" in changed:
        return page.render("member_created.html", member=changed, credential=changed["credential"])
    return page.see_other(f"/members/{member_id}", f"Changed {member_id}.")


@router.post("/members/{member_id}/password")
async def password(page: Posted) -> Response:
    as_operator(page.me)
    member_id = page.request.path_params["member_id"]
    password_hash = await _hash(page)
    if password_hash is None:
        return page.see_other(f"/members/{member_id}", "No password given; nothing changed.")
    async with page.change() as work:
        await members.update(work, member_id, members.MemberPatch(password_hash=password_hash))
    return page.see_other(
        f"/members/{member_id}", f"New password set; {member_id}'s sign-ins ended."
    )


@router.post("/members/{member_id}/remove")
async def remove(page: Posted) -> Response:
    as_operator(page.me)
    member_id = page.request.path_params["member_id"]
    if page.value("confirm") != "yes":
        async with page.center.store.read() as session:
            await members.get(session, member_id)
        return page.render(
            "confirm.html",
            title=f"Remove {member_id}?",
            what=f"Removing {member_id} ends its credential, sessions and tokens, and revokes:",
            action=f"{PREFIX}/members/{member_id}/remove",
            fields={},
            revokes=await _revokes(page, member_id),
            button="Remove",
        )
    async with page.change() as work:
        removed = await members.remove(work, member_id)
    revoked = len(removed["revoked_grants"])
    return page.see_other("/members", f"Removed {member_id}; {revoked} grant(s) revoked.")
