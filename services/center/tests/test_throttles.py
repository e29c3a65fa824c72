"""Limits kept in the database (`center.throttles`) while another center process prunes
them: the row a take reads is the row it writes back, never one pruned in between."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import event, select
from sqlalchemy.util import await_only

from center import testing as t
from center import throttles
from center.config import Settings
from center.db.models import Throttle
from center.runtime import open_center
from center.store import Store

BUCKET = throttles.Bucket("test.limit", 2, 60.0)


async def _prune(store: Store) -> None:
    async with store.change() as work:
        await throttles.prune(work.session, work.now)


@pytest.mark.asyncio
async def test_a_take_meets_a_prune_from_another_center(
    postgres_settings: Settings, clock: t.Clock
) -> None:
    """Another replica prunes the very row a take has just made sure of (it expired): the
    take still counts, on a row of its own, instead of failing (it did: the row was read
    back missing, a 500 on the sign-in page)."""
    async with (
        open_center(postgres_settings, clock=clock) as one,
        open_center(postgres_settings, clock=clock) as two,
    ):
        assert await BUCKET.take(one.store, "10.0.0.1") is None
        clock.advance(throttles.IDLE + 61)  # idle past its keep: prunable
        pruned: list[bool] = []

        def prune_in_between(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
            if pruned or not statement.lstrip().upper().startswith("SELECT"):
                return
            if "throttles" not in statement:
                return
            try:  # the take's own lock, when it holds one, keeps the prune waiting
                await_only(asyncio.wait_for(_prune(two.store), 2.0))
                pruned.append(True)
            except TimeoutError:
                pruned.append(False)

        engine = one.store.engine.sync_engine
        event.listen(engine, "before_cursor_execute", prune_in_between)
        try:
            assert await BUCKET.take(one.store, "10.0.0.1") is None
        finally:
            event.remove(engine, "before_cursor_execute", prune_in_between)
        assert pruned, "the take read its row back"
        async with one.store.read() as session:
            rows = (await session.scalars(select(Throttle))).all()
        assert [(row.name, row.expires) for row in rows] == [
            ("test.limit", int(clock() + BUCKET.window))
        ]
        # the bucket was full again after its idle time: one token spent, one left
        assert await BUCKET.take(one.store, "10.0.0.1") is None
        assert await BUCKET.take(one.store, "10.0.0.1") is not None


@pytest.mark.asyncio
async def test_takes_and_prunes_from_two_centers_at_once(
    postgres_settings: Settings, clock: t.Clock
) -> None:
    """Many takes on expiring rows from one process while another prunes: none fails and
    the limit counts every take."""
    async with (
        open_center(postgres_settings, clock=clock) as one,
        open_center(postgres_settings, clock=clock) as two,
    ):
        limit = throttles.Bucket("test.many", 1000, 60.0)
        for round_ in range(5):
            clock.advance(throttles.IDLE + 61)
            keys = [f"10.0.{round_}.{i}" for i in range(20)]
            takes = [limit.take(one.store, key) for key in keys]
            prunes = [_prune(two.store) for _ in range(5)]
            results = await asyncio.gather(*takes, *prunes)
            assert results[: len(keys)] == [None] * len(keys)
