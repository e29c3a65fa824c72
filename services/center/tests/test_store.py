"""The unit of work: one serialized, audited change; a failure after the audit file's
append locks the store, anything before it (and anything at all with the audit table,
which commits with the change) rolls back and leaves no trace."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import event, select
from sqlalchemy.exc import OperationalError

from center import testing as t
from center.config import Settings
from center.db import Generation
from center.errors import (
    ConflictError,
    InvalidArgumentError,
    RestartRequiredError,
    StorageError,
)
from center.runtime import Center


def center_of(app: FastAPI) -> Center:
    center: Center = app.state.center
    return center


async def audit_seqs(client: httpx.AsyncClient) -> list[int]:
    lines = (await client.get("/v1/audit", headers=t.ADMIN)).text.splitlines()
    return [json.loads(line)["seq"] for line in lines]


@pytest.mark.asyncio
async def test_a_refused_change_leaves_no_state_and_no_record(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    before = await audit_seqs(client)
    store = center_of(app).store

    async def refused() -> None:
        async with store.change() as work:
            work.session.add(Generation(member_id="ghost", generation=5))
            work.record("member.add", subject="ghost")
            raise InvalidArgumentError("id", "refused on purpose")

    with pytest.raises(InvalidArgumentError):
        await refused()
    async with store.read() as session:
        assert await session.get(Generation, "ghost") is None
    assert await audit_seqs(client) == before
    assert store.locked is None


@pytest.mark.asyncio
async def test_a_token_shaped_field_is_refused_before_anything_is_written(app: FastAPI) -> None:
    store = center_of(app).store
    with pytest.raises(InvalidArgumentError, match="looks like a token"):
        async with store.change() as work:
            work.record("member.add", reason="eyJhbGciOiJFZDI1NTE5In0.eyJzdWIiOiJ4In0.c2ln")
    assert store.locked is None


@pytest.mark.asyncio
async def test_a_collision_before_the_append_is_a_conflict_not_a_lock(app: FastAPI) -> None:
    store = center_of(app).store
    async with store.change() as work:
        work.session.add(Generation(member_id="twice", generation=1))

    async def again() -> None:
        async with store.change() as work:
            work.session.add(Generation(member_id="twice", generation=1))
            work.record("member.add", subject="twice")

    with pytest.raises(ConflictError):
        await again()
    assert store.locked is None


async def _commit_fails(app: FastAPI) -> None:
    """One change whose commit fails after its audit records were appended."""

    def fail(_session: object) -> None:
        raise OperationalError("COMMIT", {}, Exception("disk I/O error"))

    async with center_of(app).store.change() as work:
        work.session.add(Generation(member_id="lost", generation=1))
        work.record("member.add", subject="lost")
        event.listen(work.session.sync_session, "before_commit", fail)


@pytest.mark.asyncio
async def test_a_commit_failing_after_the_file_append_locks_changes(
    sqlite_settings: Settings,
) -> None:
    async with t.running(sqlite_settings) as app, t.client(app) as client:
        store = center_of(app).store
        with pytest.raises(RestartRequiredError):
            await _commit_fails(app)
        assert store.locked is not None
        with pytest.raises(RestartRequiredError):
            async with store.change():
                pass
        async with store.read() as session:
            assert (await session.scalars(select(Generation.member_id))).all() == []
        response = await client.post(
            "/v1/members", json={"id": "a", "vaults": ["t"]}, headers=t.ADMIN
        )
        t.refused(response, 503, "restart_required", "changes are locked after a persistence")
        assert (await client.get("/healthz")).json()["status"] == "restart_required"


@pytest.mark.asyncio
async def test_a_commit_failing_with_the_audit_table_is_a_retry_not_a_lock(
    postgres_settings: Settings,
) -> None:
    async with t.running(postgres_settings) as app, t.client(app) as client:
        before = await audit_seqs(client)
        with pytest.raises(StorageError):
            await _commit_fails(app)
        assert center_of(app).store.locked is None
        assert await audit_seqs(client) == before
        await t.add_member(client, "after")
        assert (await client.get("/healthz")).json()["status"] == "ok"


@pytest.mark.asyncio
async def test_changes_are_serialized(app: FastAPI, client: httpx.AsyncClient) -> None:
    store = center_of(app).store
    order: list[str] = []

    async def change(name: str) -> None:
        async with store.change() as work:
            order.append(f"{name}:in")
            await client.get("/healthz")
            work.record("member.set", subject=name)
            order.append(f"{name}:out")

    await asyncio.gather(*(change(f"c{i}") for i in range(5)))
    pairs = list(zip(order[::2], order[1::2], strict=True))
    assert all(a.split(":")[0] == b.split(":")[0] for a, b in pairs)
    assert (await audit_seqs(client))[-5:] == list(range(2, 7))
