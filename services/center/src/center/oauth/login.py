"""Signing in on the login page: a member id or e-mail address and the member's password.

An unknown name, a member without a password and a wrong password fail alike, and take
alike: each runs exactly one argon2id verification (against a dummy hash when there is
no real one), through `center.passwords` — at most two at once, never under a lock.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from sqlalchemy import select

from center.db.models import Member
from center.passwords import MAX_BYTES, Passwords
from center.store import Store

MAX_USERNAME = 320


@dataclass(frozen=True)
class SignedIn:
    """Who signed in, and the password hash that was verified (a change in between —
    a new password set meanwhile — voids the sign-in)."""

    member_id: str
    password_hash: str


class Login:
    def __init__(self, passwords: Passwords) -> None:
        self.passwords = passwords
        self._dummy: str | None = None

    async def warm(self) -> str:
        """The dummy hash, made once; the login page calls this, so that even the first
        attempt after a start takes exactly one hash."""
        if self._dummy is None:
            self._dummy = await self.passwords.hash(secrets.token_urlsafe(24))
        return self._dummy

    async def check(self, store: Store, username: str, password: str) -> SignedIn | None:
        member = None
        name = username.strip()
        if 0 < len(name) <= MAX_USERNAME:
            async with store.read() as session:
                column = Member.email if "@" in name else Member.id
                value = name.lower() if "@" in name else name
                member = await session.scalar(select(Member).where(column == value))
        stored = member.password_hash if member is not None else None
        candidate = password if len(password.encode("utf-8")) <= MAX_BYTES else ""
        verified = await self.passwords.verify(stored or await self.warm(), candidate)
        if not verified or member is None or stored is None:
            return None
        return SignedIn(member.id, stored)
