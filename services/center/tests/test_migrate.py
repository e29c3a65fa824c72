"""`secondbrain-center migrate` is the one step that upgrades a PostgreSQL schema: once,
under a lock, idempotent; `serve` refuses a schema older or newer than its code with one
line saying what to run; the upgrade order (migrate, then roll the replicas one by one)
serves every request meanwhile."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from alembic import command
from sqlalchemy import Connection, text

from center import fleet
from center import testing as t
from center.config import Settings
from center.db import make_engine
from center.db.engine import HEAD, _config
from center.runtime import exclusive


@pytest.fixture
def database(postgres_database: Any) -> tuple[str, str]:
    return postgres_database.url, postgres_database.schema


def _at(database: tuple[str, str], revision: str, stamp: bool = False) -> None:
    """Bring the schema to `revision` (or only write it down, with `stamp`: a revision
    this code has no migration for, as a newer release leaves it)."""
    url, schema = database
    settings = t.settings(Path("/nonexistent"), database_url=url, database_schema=schema)

    def run(connection: Connection) -> None:
        if stamp:
            connection.execute(text("UPDATE alembic_version SET version_num = :v"), {"v": revision})
        else:
            command.upgrade(_config(connection), revision)

    async def go() -> None:
        engine = make_engine(settings)
        try:
            async with engine.begin() as connection:
                await connection.run_sync(run)
        finally:
            await engine.dispose()

    asyncio.run(go())


def _revision(database: tuple[str, str]) -> str:
    url, schema = database
    settings = t.settings(Path("/nonexistent"), database_url=url, database_schema=schema)

    async def go() -> str:
        engine = make_engine(settings)
        try:
            async with engine.connect() as connection:
                return str(await connection.scalar(text("SELECT version_num FROM alembic_version")))
        finally:
            await engine.dispose()

    return asyncio.run(go())


def _refused(env: dict[str, str], tmp_path: Path) -> str:
    env = {**env, "SECONDBRAIN_CENTER_DATA_DIR": str(tmp_path / "data")}
    env["SECONDBRAIN_CENTER_PORT"] = str(fleet.free_port())
    done = fleet.run_cli(env, "serve")
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_serve_refuses_an_older_schema_and_migrate_upgrades_it_once(
    database: tuple[str, str], tmp_path: Path
) -> None:
    _at(database, "0009")
    env = fleet.center_env(*database)
    line = _refused(env, tmp_path)
    assert line == (
        f"error (schema): the database schema is at revision 0009 and this center needs {HEAD};"
        " run `secondbrain-center migrate` once, then start the centers"
    )
    command = [sys.executable, "-m", "center.cli", "migrate", "--json"]
    runs = [
        subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(3)
    ]
    outputs = [run.communicate(timeout=120) for run in runs]
    assert [run.returncode for run in runs] == [0, 0, 0], outputs
    answers = sorted(out.decode() for out, _err in outputs)
    changed = [answer for answer in answers if '"changed": true' in answer]
    assert len(changed) == 1, answers
    assert '"from": "0009"' in changed[0]
    assert _revision(database) == HEAD
    with fleet.replicas(env, tmp_path, 1) as (replica,):
        assert httpx.get(f"{replica.url}/readyz").status_code == 200


def test_serve_refuses_a_schema_newer_than_its_code(
    database: tuple[str, str], tmp_path: Path
) -> None:
    _at(database, HEAD)
    _at(database, "9999", stamp=True)
    line = _refused(fleet.center_env(*database), tmp_path)
    assert line == (
        f"error (schema): the database schema is at revision 9999, newer than this center"
        f" knows ({HEAD}); run the center release that migrated it"
    )


def test_migrate_on_sqlite_is_idempotent_and_waits_for_no_running_center(
    sqlite_settings: Settings,
) -> None:
    folder = sqlite_settings.data_dir
    env = fleet.center_env(f"sqlite+aiosqlite:///{folder / 'center.db'}", None)
    env["SECONDBRAIN_CENTER_DATA_DIR"] = str(folder)
    first = fleet.run_cli(env, "migrate")
    assert first.returncode == 0, first.stderr
    assert "from: empty" in first.stdout
    again = fleet.run_cli(env, "migrate", "--json")
    assert '"changed": false' in again.stdout
    with exclusive(folder):  # what a running center holds
        busy = fleet.run_cli(env, "migrate")
    assert busy.returncode == 1
    assert "uses this data directory" in busy.stderr


@pytest.mark.asyncio
async def test_a_rolling_upgrade_serves_every_request(
    database: tuple[str, str], tmp_path: Path
) -> None:
    env = fleet.center_env(*database)
    with fleet.replicas(env, tmp_path, 2) as centers:
        async with fleet.spread(centers) as http:
            await t.add_member(http, "before")
            migrated = fleet.run_cli(env, "migrate", "--json")
            assert migrated.returncode == 0, migrated.stderr
            assert '"changed": false' in migrated.stdout
            statuses = []
            for index, replica in enumerate(centers):
                replica.stop()
                body = {"id": f"during-{index}", "vaults": ["team"]}
                statuses.append(
                    (await http.post("/v1/members", json=body, headers=t.ADMIN)).status_code
                )
                replica.start()
                statuses.append((await http.get("/v1/members", headers=t.ADMIN)).status_code)
            assert statuses == [201, 200, 201, 200]
            listed = (await http.get("/v1/members", headers=t.ADMIN)).json()["members"]
            assert {m["id"] for m in listed} == {"before", "during-0", "during-1"}


def test_0011_makes_every_placement_a_primary_copy_at_epoch_1(
    database: tuple[str, str],
) -> None:
    _at(database, "0010")
    url, schema = database
    settings = t.settings(Path("/nonexistent"), database_url=url, database_schema=schema)

    async def run(*statements: str) -> list[Any]:
        engine = make_engine(settings)
        try:
            async with engine.begin() as connection:
                rows: list[Any] = []
                for statement in statements:
                    result = await connection.execute(text(statement))
                    rows = list(result.all()) if result.returns_rows else rows
                return rows
        finally:
            await engine.dispose()

    asyncio.run(
        run(
            "INSERT INTO nodes (id, resource, credential_hash, vaults, created)"
            " VALUES ('a', 'https://a.test/mcp', 'h', '[]', 5)",
            "INSERT INTO placements (vault, node_id, created) VALUES ('alice', 'a', 7)",
        )
    )
    _at(database, "0011")
    copies = asyncio.run(run("SELECT vault, node_id, role, in_sync, epoch, created FROM copies"))
    assert [tuple(row) for row in copies] == [("alice", "a", "primary", True, None, 7)]
    leases = asyncio.run(
        run("SELECT vault, primary_node, epoch, expires, mode, factor, state FROM leases")
    )
    assert [tuple(row) for row in leases] == [("alice", "a", 1, None, "sync", 2, "serving")]
    _down(database, "0010")
    placements = asyncio.run(run("SELECT vault, node_id FROM placements"))
    assert [tuple(row) for row in placements] == [("alice", "a")]


def _down(database: tuple[str, str], revision: str) -> None:
    url, schema = database
    settings = t.settings(Path("/nonexistent"), database_url=url, database_schema=schema)

    async def go() -> None:
        engine = make_engine(settings)
        try:
            async with engine.begin() as connection:
                await connection.run_sync(lambda sync: command.downgrade(_config(sync), revision))
        finally:
            await engine.dispose()

    asyncio.run(go())
