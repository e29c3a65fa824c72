"""Console sessions, kept server-side: the browser holds only a random cookie, the center
its SHA-256, so signing out, a new password, a member change or removal end a session at
once. A session idles out after `idle` seconds without a request and ends for good
`absolute` seconds after sign-in.

For a member the row keeps its generation at sign-in; for the operator a fingerprint of
the admin token, so a new admin token (or none) ends every operator session too.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncSession

from center.auth import digest
from center.db.models import ConsoleSession, Member
from center.principals import OPERATOR, OPERATOR_ID, Principal, find
from center.store import Change, Store

TOUCH_EVERY = 60
"""Seconds between two updates of a session's `seen` (each view need not write)."""


@dataclass(frozen=True)
class Session:
    """A live session: its cookie's digest, who holds it, and when it ends for good."""

    id_hash: str
    principal: Principal
    expires: int


@dataclass(frozen=True)
class Lifetimes:
    idle: int
    absolute: int


def operator_fingerprint(admin_token: str | None) -> int:
    """A 48-bit fingerprint of the admin token (0 when there is none)."""
    return int(digest(admin_token)[:12], 16) if admin_token else 0


async def start(
    work: Change,
    principal: Principal,
    generation: int,
    limits: Lifetimes,
    replaced: str | None = None,
) -> str:
    """A new session for `principal`; the cookie value, which only the browser keeps. The
    session of the cookie it `replaced` (signing in again in the same browser) ends."""
    await prune(work.session, work.now)
    if replaced:
        await work.session.execute(
            delete(ConsoleSession).where(ConsoleSession.id_hash == digest(replaced))
        )
    cookie = secrets.token_urlsafe(32)
    work.session.add(
        ConsoleSession(
            id_hash=digest(cookie),
            principal=principal.id,
            generation=generation,
            created=work.now,
            seen=work.now,
            expires=work.now + limits.absolute,
        )
    )
    if not principal.is_operator:
        member = await work.session.get(Member, principal.id, with_for_update=True)
        if member is not None:
            member.last_sign_in = work.now
    return cookie


async def resume(
    store: Store, cookie: str | None, limits: Lifetimes, operator: int
) -> Session | None:
    """The live session this cookie names, touched; None (and the row gone) if it idled
    out, ended, or its principal changed since sign-in."""
    if not cookie or len(cookie) > 128:
        return None
    now, id_hash = store.now(), digest(cookie)
    async with store.read() as session:
        row = await session.get(ConsoleSession, id_hash)
        if row is None:
            return None
        who = await _holder(session, row, operator)
    if who is None or row.expires <= now or row.seen + limits.idle <= now:
        await end(store, id_hash)
        return None
    if now - row.seen >= TOUCH_EVERY:
        async with store.serialized() as session:
            live = await session.get(ConsoleSession, id_hash, with_for_update=True)
            if live is not None:
                live.seen = now
    return Session(id_hash, who, row.expires)


async def _holder(session: AsyncSession, row: ConsoleSession, operator: int) -> Principal | None:
    if row.principal == OPERATOR_ID:
        return OPERATOR if operator and row.generation == operator else None
    member = await find(session, row.principal)
    return member if member is not None and member.generation == row.generation else None


async def end(store: Store, id_hash: str) -> None:
    """End one session (sign-out, or one found dead); bookkeeping outside the audit."""
    async with store.serialized() as session:
        await session.execute(delete(ConsoleSession).where(ConsoleSession.id_hash == id_hash))


async def end_for(work: Change, principal_id: str) -> None:
    """End every console session of a member (changed, removed, or a new password)."""
    await work.session.execute(
        delete(ConsoleSession).where(ConsoleSession.principal == principal_id)
    )


async def prune(session: AsyncSession, now: int) -> None:
    await session.execute(delete(ConsoleSession).where(ConsoleSession.expires <= now))
