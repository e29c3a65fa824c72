"""Start-up and housekeeping: one process per data directory, a clear refusal when the
database is unreachable, and pruning of what expired."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import func, select

from center import testing as t
from center.config import Settings
from center.db import Grant, Token
from center.errors import ConfigError, DatabaseUnusableError, RestartRequiredError
from center.runtime import Center, open_center, prune_once


def center_of(app: FastAPI) -> Center:
    center: Center = app.state.center
    return center


@pytest.mark.asyncio
async def test_one_process_owns_a_sqlite_data_dir(sqlite_settings: Settings) -> None:
    async with open_center(sqlite_settings):
        with pytest.raises(ConfigError) as refused:
            async with open_center(sqlite_settings):
                pass
        assert refused.value.problems == [
            f"data_dir: another `secondbrain-center serve` (pid {os.getpid()}) uses this data "
            "directory"
        ]
    async with open_center(sqlite_settings):
        pass


@pytest.mark.asyncio
async def test_an_unreachable_database_refuses_to_start(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings = t.settings(tmp_path, database_url=f"postgresql://nobody@127.0.0.1:{port}/none")
    with pytest.raises(DatabaseUnusableError, match=f"no PostgreSQL answers on 127.0.0.1:{port}"):
        async with open_center(settings):
            pass


async def _count(center: Center, model: type[Grant] | type[Token]) -> int:
    async with center.store.read() as session:
        return int(await session.scalar(select(func.count()).select_from(model)) or 0)


@pytest.mark.asyncio
async def test_pruning_forgets_what_expired(
    app: FastAPI, client: httpx.AsyncClient, clock: t.Clock
) -> None:
    credential = await t.add_member(client, "alice")
    body = {"resource": [t.RESOURCE], "minutes": 1}
    await client.post("/v1/tokens", json=body, headers=t.bearer(credential))
    await client.post("/v1/grants", json={"vault": "team", **body}, headers=t.ADMIN)
    center = center_of(app)
    await prune_once(center)
    assert (await _count(center, Grant), await _count(center, Token)) == (1, 1)
    clock.advance(60 + 61)
    await prune_once(center)
    assert (await _count(center, Grant), await _count(center, Token)) == (0, 0)


@pytest.mark.asyncio
async def test_pruning_waits_while_changes_are_locked(app: FastAPI) -> None:
    center = center_of(app)
    center.store.locked = "test"
    with pytest.raises(RestartRequiredError):
        await prune_once(center)
