"""Members: durable principals the operator creates, changes and removes.

A member's credential is shown once, at creation (or rotation), and stored as its SHA-256
digest. Changing a member's role, scope, vaults or path rules, rotating its credential or
removing it bumps its generation — every token it holds dies at the nodes — and revokes every
grant it issued or received, transitively.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from center import rules, tokens
from center.auth import as_member, digest, new_credential
from center.console.sessions import end_for
from center.db import Generation, Member
from center.errors import (
    ConflictError,
    ExistsError,
    ForbiddenError,
    InvalidArgumentError,
    NotFoundError,
)
from center.grants import revoke_involving
from center.names import Rules
from center.oauth import consent, refresh
from center.passwords import Passwords, check_password
from center.principals import (
    FIRST_GENERATION,
    OPERATOR_ID,
    Principal,
    bump_generation,
    check_member_id,
    check_vaults,
    current,
    generation_of,
    role_and_scope,
)
from center.store import Change, Store

EMAIL = re.compile(r"[^@\s]{1,64}@[^@\s.]+(\.[^@\s.]+)+")
"""A login address, checked for shape only: one @, no spaces, a dotted domain."""
MAX_EMAIL = 254


@dataclass(frozen=True)
class MemberAsk:
    """A new member. Scope defaults to read; the role to the lowest that covers the scope."""

    id: str
    vaults: Sequence[str]
    role: str | None = None
    scope: str | None = None
    password_hash: str | None = None
    email: str | None = None
    paths: Rules | None = None
    """Path rules per vault (center.rules); None: every vault named is reached whole."""


@dataclass(frozen=True)
class MemberPatch:
    """Changes to a member; None leaves a field as it is."""

    role: str | None = None
    scope: str | None = None
    vaults: Sequence[str] | None = None
    password_hash: str | None = None
    rotate_credential: bool = False
    email: str | None = None
    """A new login address; "" removes it."""
    paths: Rules | None = None
    """New path rules ({} removes them); None keeps those of the vaults it still holds."""


def view(member: Member, generation: int) -> dict[str, Any]:
    """A member without any secret: no credential, no digest, no password hash."""
    return {
        "id": member.id,
        "role": member.role,
        "scope": member.scope,
        "vaults": list(member.vaults),
        "generation": generation,
        "password": member.password_hash is not None,
        "email": member.email,
        "created": member.created,
        "updated": member.updated,
        "last_sign_in": member.last_sign_in,
        "paths": rules.shown(member.paths),
    }


def _vault_field(vaults: Sequence[str]) -> str | None:
    """The audit `vault` of a member event: its vault if it has exactly one, else global."""
    return vaults[0] if len(vaults) == 1 else None


def check_email(value: str) -> str:
    """A member's login address, lowercased: unique among members, so one address names
    one member whatever its case."""
    address = value.strip().lower()
    if len(address) > MAX_EMAIL or not EMAIL.fullmatch(address) or not address.isprintable():
        raise InvalidArgumentError(
            "email", f"use an address like name@example.org (<= {MAX_EMAIL})"
        )
    return address


async def _free_email(session: AsyncSession, address: str, member_id: str) -> str:
    holder = await session.scalar(select(Member.id).where(Member.email == address))
    if holder is not None and holder != member_id:
        raise ConflictError("another member already uses this e-mail address; choose another")
    return address


async def _get(session: AsyncSession, member_id: str) -> Member:
    member = await session.get(Member, member_id, with_for_update=True)
    if member is None:
        raise NotFoundError("member", member_id)
    return member


async def add(work: Change, ask: MemberAsk) -> dict[str, Any]:
    """Create a member; the response carries its credential, which is never shown again."""
    member_id = check_member_id(ask.id)
    role, scope = role_and_scope(ask.role, ask.scope)
    vaults = check_vaults(ask.vaults)
    paths = rules.parse(ask.paths, vaults)
    if await work.session.get(Member, member_id) is not None:
        raise ExistsError("member", member_id)
    email = None
    if ask.email is not None:
        email = await _free_email(work.session, check_email(ask.email), member_id)
    if await work.session.get(Generation, member_id) is None:
        work.session.add(Generation(member_id=member_id, generation=FIRST_GENERATION))
    credential = new_credential()
    member = Member(
        id=member_id,
        role=role,
        scope=scope,
        vaults=vaults,
        credential_hash=digest(credential),
        password_hash=ask.password_hash,
        email=email,
        created=work.now,
        updated=work.now,
        paths=rules.stored(paths),
    )
    work.session.add(member)
    await work.session.flush()
    generation = await generation_of(work.session, member_id)
    work.record(
        "member.add",
        actor=OPERATOR_ID,
        subject=member_id,
        scope=scope,
        vault=_vault_field(vaults),
        **rules.audit(paths),
    )
    return {**view(member, generation), "credential": credential}


async def update(work: Change, member_id: str, patch: MemberPatch) -> dict[str, Any]:
    """Change a member; a change of authority bumps its generation and revokes its grants."""
    member = await _get(work.session, member_id)
    role, scope = role_and_scope(patch.role or member.role, patch.scope or member.scope)
    vaults = check_vaults(patch.vaults) if patch.vaults is not None else list(member.vaults)
    paths = (
        rules.parse(patch.paths, vaults)
        if patch.paths is not None
        else rules.only(rules.loaded(member.paths), vaults)
    )
    before = (member.role, member.scope, list(member.vaults), rules.loaded(member.paths))
    authority = (role, scope, vaults, paths) != before
    member.role, member.scope, member.vaults, member.updated = role, scope, vaults, work.now
    member.paths = rules.stored(paths)
    if patch.password_hash is not None:
        member.password_hash = patch.password_hash
        await refresh.end_sessions(work, member_id, "member.set password")
    if patch.email == "":
        member.email = None
    elif patch.email is not None:
        member.email = await _free_email(work.session, check_email(patch.email), member_id)
    extra: dict[str, Any] = {}
    if patch.rotate_credential:
        extra["credential"] = new_credential()
        member.credential_hash = digest(extra["credential"])
    await end_for(work, member_id)
    revoked: list[str] = []
    if authority or patch.rotate_credential:
        await bump_generation(work.session, member_id)
        revoked = await revoke_involving(work, member_id, OPERATOR_ID, "member.set")
        await tokens.revoke_issued_by(work, member_id, "member.set")
    generation = await generation_of(work.session, member_id)
    work.record(
        "member.set",
        actor=OPERATOR_ID,
        subject=member_id,
        scope=scope,
        vault=_vault_field(vaults),
        **rules.audit(paths),
    )
    return {**view(member, generation), "revoked_grants": revoked, **extra}


async def remove(work: Change, member_id: str) -> dict[str, Any]:
    """Remove a member; its generation stays, one higher, so its tokens never come back."""
    member = await _get(work.session, member_id)
    generation = await bump_generation(work.session, member_id)
    revoked = await revoke_involving(work, member_id, OPERATOR_ID, "member.remove")
    await tokens.revoke_issued_by(work, member_id, "member.remove")
    await end_for(work, member_id)
    await consent.forget_member(work, member_id)
    await work.session.delete(member)
    work.record(
        "member.remove", actor=OPERATOR_ID, subject=member_id, vault=_vault_field(member.vaults)
    )
    return {"id": member_id, "generation": generation, "revoked_grants": revoked}


async def listing(
    session: AsyncSession, offset: int = 0, limit: int | None = None
) -> list[dict[str, Any]]:
    """Members by id; `offset` and `limit` page through them."""
    query = select(Member).order_by(Member.id).offset(offset).limit(limit)
    members = (await session.scalars(query)).all()
    return [view(m, await generation_of(session, m.id)) for m in members]


async def count(session: AsyncSession) -> int:
    return (await session.scalar(select(func.count()).select_from(Member))) or 0


async def get(session: AsyncSession, member_id: str) -> dict[str, Any]:
    member = await session.get(Member, member_id)
    if member is None:
        raise NotFoundError("member", member_id)
    return view(member, await generation_of(session, member_id))


async def change_password(
    store: Store,
    passwords: Passwords,
    caller: Principal,
    *,
    old: str,
    new: str,
    channel: str | None = None,
) -> dict[str, Any]:
    """A member sets its own password, proving the one it has. Its sign-ins end (OAuth
    and console sessions alike); its credential, tokens and grants stay."""
    caller = as_member(caller)
    check_password(new)
    async with store.read() as session:
        stored = (await _get(session, caller.id)).password_hash
    if stored is None or not await passwords.verify(stored, old):
        raise ForbiddenError("the current password is wrong; nothing was changed")
    password_hash = await passwords.hash(new)
    async with store.change(channel) as work:
        await current(work.session, caller)
        member = await _get(work.session, caller.id)
        if member.password_hash != stored:
            raise ConflictError("the password changed meanwhile; sign in again and retry")
        member.password_hash, member.updated = password_hash, work.now
        ended = await refresh.end_sessions(work, caller.id, "member.password")
        await end_for(work, caller.id)
        work.record(
            "member.password", actor=caller.id, subject=caller.id, object=f"member:{caller.id}"
        )
    return {"id": caller.id, "ended_sign_ins": ended}
