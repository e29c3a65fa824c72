"""Bearer credentials: how they are made, stored (SHA-256 only) and recognised.

The operator's admin token comes from the environment; members and nodes hold durable
credentials the center shows once. All are compared as SHA-256 digests in constant time,
and a failed check says only "unauthorized", never which part failed.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from sqlalchemy import select

from center.db import Member, Node
from center.errors import ForbiddenError, UnauthorizedError
from center.principals import CREDENTIAL_PREFIXES, OPERATOR, Principal, principal
from center.store import Store

MEMBER_PREFIX, NODE_PREFIX = CREDENTIAL_PREFIXES
MAX_BEARER = 8192


def digest(credential: str) -> str:
    """The SHA-256 hex digest a credential is stored and looked up by."""
    return hashlib.sha256(credential.encode("utf-8")).hexdigest()


def new_credential(prefix: str = MEMBER_PREFIX) -> str:
    """256 random bits, prefixed so a leaked one is recognisable (and redactable)."""
    return prefix + secrets.token_urlsafe(32)


def presented(credential: str | None) -> str:
    """The credential a caller presented, or UnauthorizedError if there is none."""
    value = (credential or "").strip()
    if not value or len(value) > MAX_BEARER:
        raise UnauthorizedError("send Authorization: Bearer <credential>")
    return value


class Authenticator:
    """Recognises the operator, members and nodes from their bearer credential."""

    def __init__(self, store: Store, admin_token: str | None) -> None:
        self.store = store
        self._admin = digest(admin_token) if admin_token else None

    def is_admin_digest(self, value: str) -> bool:
        return self._admin is not None and hmac.compare_digest(value, self._admin)

    async def caller(self, credential: str | None) -> Principal:
        """The operator or the member whose credential this is."""
        hashed = digest(presented(credential))
        if self.is_admin_digest(hashed):
            return OPERATOR
        async with self.store.read() as session:
            member = await session.scalar(select(Member).where(Member.credential_hash == hashed))
            if member is None or not hmac.compare_digest(member.credential_hash, hashed):
                raise UnauthorizedError("unknown or revoked credential; ask the operator for one")
            return await principal(session, member)

    async def member(self, credential: str | None) -> Principal:
        """A member only: the admin token is refused (401) on every content route."""
        caller = await self.caller(credential)
        if caller.is_operator:
            raise UnauthorizedError("the admin token is not accepted here; use a member credential")
        return caller

    async def operator(self, credential: str | None) -> Principal:
        """The operator only; a member is authenticated but not allowed (403)."""
        caller = await self.caller(credential)
        if not caller.is_operator:
            raise ForbiddenError("only the operator's admin token may do this")
        return caller

    async def node(self, credential: str | None) -> str:
        """The id of the node whose credential this is; any other bearer is 401."""
        hashed = digest(presented(credential))
        async with self.store.read() as session:
            node = await session.scalar(select(Node).where(Node.credential_hash == hashed))
        if node is None or not hmac.compare_digest(node.credential_hash, hashed):
            raise UnauthorizedError("unknown node credential; register the node with `node add`")
        return node.id
