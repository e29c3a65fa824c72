"""The signed revocation feed every node polls (docs/design.md#revocation-feed).

Each snapshot lists what is revoked and still unexpired — grant ids, token ids, member
generations, key ids — plus a signed checkpoint of the audit head. `seq` only grows and
changes exactly when that content does: the feed remembers the digest it published last,
so two snapshots with one seq always agree (a node treats disagreement as an attack),
and pruning an expired entry is published under a new seq like any revocation.
"""

from __future__ import annotations

import hashlib
from typing import Any

import rfc8785
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from center.db import Feed, Generation, Grant, Token
from center.keyring import Keyring
from center.principals import FIRST_GENERATION
from center.store import Store
from tickets import Checkpoint, RevocationSnapshot, sign_checkpoint, sign_snapshot
from tickets.revocation import SKEW


async def _revoked(session: AsyncSession, now: int) -> dict[str, Any]:
    grants = await session.execute(
        select(Grant.id, Grant.expires).where(
            Grant.revoked.is_not(None), Grant.expires + SKEW >= now
        )
    )
    tokens = await session.execute(
        select(Token.jti, Token.expires).where(
            Token.revoked.is_not(None), Token.expires + SKEW >= now
        )
    )
    generations = await session.execute(
        select(Generation.member_id, Generation.generation).where(
            Generation.generation > FIRST_GENERATION
        )
    )
    return {
        "grants": dict(grants.all()),
        "tokens": dict(tokens.all()),
        "min_gen": dict(generations.all()),
    }


def content_digest(content: dict[str, Any]) -> str:
    return hashlib.sha256(rfc8785.dumps(content)).hexdigest()


def _sequence(row: Feed, digest: str) -> int:
    """The feed's seq for this content: unchanged if it was published before, else +1."""
    if row.digest != digest:
        row.seq, row.digest = row.seq + 1, digest
    return row.seq


async def _current(
    session: AsyncSession, keyring: Keyring, now: int
) -> tuple[int, dict[str, Any], frozenset[str]]:
    # The feed row is locked before the content is read: a publisher that read before a
    # revocation committed must not take a seq after one that read it (several centers
    # on one database publish in turn, each reading what the one before it committed).
    row = await session.get(Feed, 1, with_for_update=True, populate_existing=True)
    if row is None:  # migration 0010 seeds it; a database made otherwise lacks it
        row = Feed(id=1, seq=0, digest="")
        session.add(row)
    content = await _revoked(session, now)
    kids = await keyring.revoked_kids(session)
    seq = _sequence(row, content_digest({**content, "kids": sorted(kids)}))
    return seq, content, kids


async def current_seq(session: AsyncSession, keyring: Keyring, now: int) -> int:
    """The seq the feed publishes now (in a `Store.serialized` session), unsigned."""
    seq, _content, _kids = await _current(session, keyring, now)
    return seq


async def publish(store: Store, keyring: Keyring, issuer: str) -> dict[str, Any]:
    """The current snapshot, signed: `{"seq": n, "snapshot": "<JWS>"}`."""
    now = store.now()
    async with store.serialized() as session:
        seq, content, kids = await _current(session, keyring, now)
        head = await store.audit.head(session)
    checkpoint: Checkpoint | None = None
    if head is not None:
        checkpoint = sign_checkpoint(keyring.key, *head)
    snapshot = RevocationSnapshot(
        iss=issuer,
        seq=seq,
        iat=now,
        grants=content["grants"],
        tokens=content["tokens"],
        min_gen=content["min_gen"],
        revoked_kids=kids,
        checkpoint=checkpoint,
    )
    return {"seq": seq, "iat": now, "snapshot": sign_snapshot(snapshot, keyring.key)}
