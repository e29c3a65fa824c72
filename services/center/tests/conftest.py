"""Fixtures: every service test runs twice, on a SQLite file and on PostgreSQL.

PostgreSQL gets one database per test session (dropped at the end) and one schema per
test; `SECONDBRAIN_TEST_POSTGRES` points at the server (default: the local one).
"""

from __future__ import annotations

import asyncio
import os
import secrets
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import httpx
import pytest
import pytest_asyncio
import uvicorn
from fastapi import FastAPI

from center import testing as t
from center.app import create_app
from center.config import Settings

POSTGRES = os.environ.get("SECONDBRAIN_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")


@dataclass(frozen=True)
class Database:
    """Where a test's center keeps its state: `url` None means SQLite in the data dir."""

    backend: str
    url: str | None = None
    schema: str | None = None


async def _admin(url: str, *statements: str) -> None:
    connection = await asyncpg.connect(url, timeout=10)
    try:
        for statement in statements:
            await connection.execute(statement)
    finally:
        await connection.close()


def _with_database(url: str, name: str) -> str:
    return url.rsplit("/", 1)[0] + "/" + name


@pytest.fixture(scope="session")
def postgres() -> Iterator[str | None]:
    """A fresh database for this session (asyncpg URL), or None if no server answers."""
    name = f"center_test_{os.getpid()}_{secrets.token_hex(4)}"
    try:
        asyncio.run(_admin(POSTGRES, f'CREATE DATABASE "{name}"'))
    except (OSError, asyncpg.PostgresError, TimeoutError):
        yield None
        return
    yield _with_database(POSTGRES, name)
    asyncio.run(_admin(POSTGRES, f'DROP DATABASE "{name}" WITH (FORCE)'))


@contextmanager
def _schema(postgres: str | None) -> Iterator[Database]:
    """A fresh schema in the session database, dropped afterwards."""
    if postgres is None:
        if os.environ.get("CI"):  # in CI a missing database is a failure, never a skip
            pytest.fail("PostgreSQL is not reachable; .ci/run should have started it")
        pytest.skip("PostgreSQL is not reachable; set SECONDBRAIN_TEST_POSTGRES")
    schema = f"t_{secrets.token_hex(6)}"
    asyncio.run(_admin(postgres, f"CREATE SCHEMA {schema}"))
    try:
        yield Database(
            "postgresql", postgres.replace("postgresql://", "postgresql+asyncpg://"), schema
        )
    finally:
        asyncio.run(_admin(postgres, f"DROP SCHEMA {schema} CASCADE"))


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, postgres: str | None) -> Iterator[Database]:
    """Each test that uses it runs twice: on a SQLite file, then on PostgreSQL."""
    if request.param == "sqlite":
        yield Database("sqlite")
        return
    with _schema(postgres) as database:
        yield database


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "center"


@pytest.fixture
def settings(data_dir: Path, database: Database) -> Settings:
    return t.settings(data_dir, database_url=database.url, database_schema=database.schema)


@pytest.fixture
def sqlite_settings(data_dir: Path) -> Settings:
    """For what only SQLite deployments have (audit.jsonl, the data-dir lock)."""
    return t.settings(data_dir)


@pytest.fixture
def postgres_settings(data_dir: Path, postgres: str | None) -> Iterator[Settings]:
    """For what only PostgreSQL deployments have (the audit table, shared databases)."""
    with _schema(postgres) as database:
        yield t.settings(data_dir, database_url=database.url, database_schema=database.schema)


@pytest.fixture
def clock() -> t.Clock:
    return t.Clock()


@pytest.fixture
def live(settings: Settings, clock: t.Clock) -> Iterator[t.Live]:
    """One running center for all examples of a property test."""
    with t.live(settings, clock) as running:
        yield running


@pytest_asyncio.fixture
async def app(settings: Settings, clock: t.Clock) -> AsyncIterator[FastAPI]:
    async with t.running(settings, clock) as running:
        yield running


@pytest_asyncio.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with t.client(app) as http:
        yield http


@pytest.fixture
def server(settings: Settings) -> Iterator[str]:
    """A real center on 127.0.0.1 at a port chosen at start-up; yields its URL."""
    quiet = settings.model_copy(update={"log_level": "error"})
    config = uvicorn.Config(
        create_app(quiet), host="127.0.0.1", port=0, log_config=None, lifespan="on"
    )
    instance = uvicorn.Server(config)
    thread = threading.Thread(target=instance.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not instance.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the center did not start")
        time.sleep(0.01)
    port = instance.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        instance.should_exit = True
        thread.join(timeout=30)
