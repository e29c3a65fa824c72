"""Bearer credentials: how they are made, stored (SHA-256 only) and recognised.

The operator's admin token comes from the environment; members and nodes hold durable
credentials the center shows once. All are compared as SHA-256 digests in constant time,
and a failed check says only "unauthorized", never which part failed. A grant token (a
JWS the center signed for a live grant) authenticates its holder too, but only on the
routes that opt in: delegating, asking for a grant, listing and its own session
(docs/design.md#grants).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from sqlalchemy import or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from center import rules
from center.db import Grant, Key, Member, Node
from center.errors import ForbiddenError, UnauthorizedError
from center.principals import CREDENTIAL_PREFIXES, OPERATOR, Principal, find, principal
from center.store import Store
from tickets import (
    ACCESS_TOKEN_TYP,
    ALG,
    Claims,
    ClaimsError,
    PublicKey,
    TokenError,
    jws,
    parse_role,
    parse_scope,
)
from tickets.keys import b64url_decode
from tickets.verify import DEFAULT_SKEW

MEMBER_PREFIX, NODE_PREFIX = CREDENTIAL_PREFIXES
MAX_BEARER = 8192
NOT_A_GRANT = "unknown, expired or revoked grant token; ask for a new grant"
GRANT_ONLY_HERE = (
    "a grant token may only delegate, ask for a grant, list grants or read its session; "
    "use your member credential for this"
)


def is_jws(value: str) -> bool:
    """Shaped like a compact JWS: member and node credentials never contain a dot."""
    return value.count(".") == 2


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

    async def caller(self, credential: str | None, *, grants: bool = False) -> Principal:
        """The operator or the member whose credential this is; with `grants`, also the
        holder of a live grant token (elsewhere a valid one gets 403, not 401)."""
        value = presented(credential)
        if is_jws(value):
            holder = await self.grant_holder(value)
            if not grants:
                raise ForbiddenError(GRANT_ONLY_HERE)
            return holder
        hashed = digest(value)
        if self.is_admin_digest(hashed):
            return OPERATOR
        async with self.store.read() as session:
            member = await session.scalar(select(Member).where(Member.credential_hash == hashed))
            if member is None or not hmac.compare_digest(member.credential_hash, hashed):
                raise UnauthorizedError("unknown or revoked credential; ask the operator for one")
            return await principal(session, member)

    async def member(self, credential: str | None, *, grants: bool = False) -> Principal:
        """A member only: the admin token is refused (401) on every content route."""
        return as_member(await self.caller(credential, grants=grants))

    async def operator(self, credential: str | None) -> Principal:
        """The operator only; a member is authenticated but not allowed (403)."""
        return as_operator(await self.caller(credential))

    async def grant_holder(self, token: str) -> Principal:
        """The grantee of the live grant this token was signed for, acting within that
        grant (`Principal.grant`); 401 for anything else, without saying why."""
        now = self.store.now()
        async with self.store.read() as session:
            try:
                header = jws.read_header(token)
                if not jws.typ_matches(header.typ, ACCESS_TOKEN_TYP) or header.alg != ALG:
                    raise UnauthorizedError(NOT_A_GRANT)
                key = await self._key(session, header.kid, now)
                claims = Claims.from_payload(jws.loads(jws.verify_signature(token, key)))
            except (TokenError, ClaimsError):
                raise UnauthorizedError(NOT_A_GRANT) from None
            row = await session.get(Grant, claims.gid) if claims.gid else None
            if not _live(row, claims, now):
                raise UnauthorizedError(NOT_A_GRANT)
            assert row is not None
            member = await find(session, row.grantee)
        if member is not None and member.generation != row.grantee_generation:
            raise UnauthorizedError(NOT_A_GRANT)
        return Principal(
            id=row.grantee,
            role=parse_role(row.role),
            scope=parse_scope(row.scope),
            vaults=(row.vault,),
            generation=row.grantee_generation,
            grant=row.id,
            expires=row.expires,
            paths=rules.loaded(row.paths),
        )

    async def _key(self, session: AsyncSession, kid: str, now: int) -> PublicKey:
        usable = or_(Key.not_after.is_(None), Key.not_after >= now)
        public = await session.scalar(
            select(Key.public).where(Key.kid == kid, usable, ~Key.revoked)
        )
        if public is None:
            raise UnauthorizedError(NOT_A_GRANT)
        return PublicKey(b64url_decode(public))

    async def node(self, credential: str | None) -> str:
        """The id of the node whose credential this is; any other bearer is 401."""
        hashed = digest(presented(credential))
        async with self.store.read() as session:
            node = await session.scalar(select(Node).where(Node.credential_hash == hashed))
        if node is None or not hmac.compare_digest(node.credential_hash, hashed):
            raise UnauthorizedError("unknown node credential; register the node with `node add`")
        return node.id


def as_member(caller: Principal) -> Principal:
    """`caller` if it is a member; the operator is refused (401), as on content routes.
    The API's bearer checks and the console's session checks both decide here."""
    if caller.is_operator:
        raise UnauthorizedError("the admin token is not accepted here; use a member credential")
    return caller


def as_operator(caller: Principal) -> Principal:
    """`caller` if it is the operator; a member is refused (403)."""
    if not caller.is_operator:
        raise ForbiddenError("only the operator's admin token may do this")
    return caller


def _live(row: Grant | None, claims: Claims, now: int) -> bool:
    """The grant exists, is unrevoked and unexpired, and the token is exactly its token."""
    return (
        row is not None
        and row.revoked is None
        and row.expires > now
        and claims.exp > now
        and claims.nbf <= now + DEFAULT_SKEW
        and row.grantee == claims.sub
        and list(row.chain) == list(claims.chain)
        and [row.vault] == list(claims.vaults)
        and claims.paths == rules.loaded(row.paths)
    )
