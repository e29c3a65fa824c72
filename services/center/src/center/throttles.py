"""Limits that hold across every center process on one database: each limit's state for
one key is a row of `throttles`, read and written under that row's lock, so three
replicas behind a proxy admit together exactly what one center would.

Keys (a source IP, an identity) are kept as SHA-256 digests only. A row idle long enough
to be back at its start is pruned with the expired grants.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass

from sqlalchemy import delete
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from center.db.models import Throttle
from center.store import Store

IDLE = 600.0
"""A bucket idle this long starts full again (as `tickets.Buckets`)."""

State = list[float]
KEY = ("name", "key_hash")


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


async def _locked(session: AsyncSession, name: str, key: str, now: float) -> Throttle:
    """The row of (`name`, `key`), made if missing, locked until the transaction ends.

    One statement makes and locks it: an upsert whose update changes nothing locks the row
    it meets, and a row another process prunes meanwhile is made anew. An insert that did
    nothing on a conflict, then a SELECT FOR UPDATE, found the row gone when another
    center pruned it in between (an expired row: a source idle for a while)."""
    insert = postgresql.insert if session.get_bind().dialect.name == "postgresql" else sqlite.insert
    values = {"name": name, "key_hash": _digest(key), "state": "[]", "expires": int(now)}
    upsert = insert(Throttle).values(**values)
    kept = {"expires": Throttle.__table__.c.expires}
    await session.execute(upsert.on_conflict_do_update(index_elements=KEY, set_=kept))
    row = await session.get(Throttle, (name, values["key_hash"]), populate_existing=True)
    assert row is not None  # locked by the upsert: no other transaction can delete it
    return row


@asynccontextmanager
async def held(
    store: Store, keys: Sequence[tuple[str, str]], keep: float
) -> AsyncIterator[tuple[float, list[State]]]:
    """The time and the states of `keys` (limit name, key), locked in the order given;
    the states as left by the block are written back, kept at least `keep` seconds. A
    block that raises changes nothing."""
    async with store.serialized() as session:
        now = store.clock()
        rows = [await _locked(session, name, key, now) for name, key in keys]
        states: list[State] = [json.loads(row.state) for row in rows]
        yield now, states
        for row, state in zip(rows, states, strict=True):
            row.state = json.dumps(state)
            row.expires = math.ceil(now + keep)


@dataclass(frozen=True)
class Bucket:
    """`capacity` tokens per key, refilled continuously over `window` seconds: `take`
    spends one, `give_back` refunds one (a sign-in that succeeded)."""

    name: str
    capacity: int
    window: float

    def _tokens(self, state: State, now: float) -> float:
        if not state or now - state[1] > IDLE:
            return float(self.capacity)
        return min(float(self.capacity), state[0] + (now - state[1]) * self.capacity / self.window)

    async def take(self, store: Store, key: str) -> int | None:
        """None if allowed (a token is spent), else the whole seconds until one is free."""
        async with held(store, [(self.name, key)], self.window) as (now, (state,)):
            tokens = self._tokens(state, now)
            state[:] = [tokens - 1 if tokens >= 1 else tokens, now]
            if tokens >= 1:
                return None
            return max(1, math.ceil((1 - tokens) * self.window / self.capacity))

    async def give_back(self, store: Store, key: str) -> None:
        async with held(store, [(self.name, key)], self.window) as (now, (state,)):
            state[:] = [min(float(self.capacity), self._tokens(state, now) + 1), now]


@dataclass(frozen=True)
class Window:
    """At most `limit` hits per key in any `period` seconds (a sliding log per key)."""

    name: str
    limit: int
    period: float

    def wait(self, hits: State, now: float) -> float:
        """Seconds until the key may hit again (0: now); forgets hits out of the period."""
        hits[:] = [hit for hit in hits if hit > now - self.period][-self.limit :]
        return 0.0 if len(hits) < self.limit else hits[0] + self.period - now

    def hit(self, hits: State, now: float) -> None:
        self.wait(hits, now)
        hits[:] = [*hits, now][-self.limit :]


async def prune(session: AsyncSession, now: int) -> None:
    """Forget rows back at their start (a full bucket, a log with no recent hit)."""
    await session.execute(delete(Throttle).where(Throttle.expires < now))
