"""Center throughput: grant issue and revoke over HTTP, and audit appends with fsync.

A real center runs under uvicorn on 127.0.0.1 (SQLite in a temporary data dir, then
PostgreSQL in a temporary database when one answers at SECONDBRAIN_BENCH_POSTGRES); a
sync httpx client issues and revokes grants one at a time. The audit figure is whole
audited changes: one record appended (fsync'd to `audit.jsonl` on SQLite, inserted into
the audit table on PostgreSQL) and one commit each.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import uvicorn

from center import testing as t
from center.app import create_app
from center.config import Settings
from center.runtime import open_center

GRANTS = 300
CHANGES = 500
POSTGRES = os.environ.get("SECONDBRAIN_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")


@contextmanager
def serving(settings: Settings, **options: Any) -> Iterator[str]:
    """A center on a free loopback port for the block, its base URL; `options` go to
    `create_app`."""
    quiet = settings.model_copy(update={"log_level": "error"})
    app = create_app(quiet, **options)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_config=None))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join()


def grant_rates(settings: Settings) -> tuple[float, float]:
    body = {"vault": "bench", "scope": "read", "minutes": 60, "resource": [t.RESOURCE]}
    with serving(settings) as url, httpx.Client(base_url=url, headers=t.ADMIN) as client:
        client.post("/v1/grants", json=body).raise_for_status()
        start = time.perf_counter()
        ids = [client.post("/v1/grants", json=body).json()["id"] for _ in range(GRANTS)]
        issued = GRANTS / (time.perf_counter() - start)
        start = time.perf_counter()
        for grant_id in ids:
            client.delete(f"/v1/grants/{grant_id}").raise_for_status()
        revoked = GRANTS / (time.perf_counter() - start)
    return issued, revoked


@contextmanager
def postgres_database() -> Iterator[str | None]:
    name = f"center_bench_{secrets.token_hex(4)}"

    async def admin(statement: str) -> None:
        connection = await asyncpg.connect(POSTGRES, timeout=5)
        try:
            await connection.execute(statement)
        finally:
            await connection.close()

    try:
        asyncio.run(admin(f'CREATE DATABASE "{name}"'))
    except (OSError, asyncpg.PostgresError, TimeoutError):
        yield None
        return
    try:
        yield POSTGRES.rsplit("/", 1)[0] + "/" + name
    finally:
        asyncio.run(admin(f'DROP DATABASE "{name}" WITH (FORCE)'))


async def audited_changes(settings: Settings) -> float:
    async with open_center(settings) as center:
        start = time.perf_counter()
        for index in range(CHANGES):
            async with center.store.change() as work:
                work.record("member.set", actor="bench", subject=f"m{index}")
        return CHANGES / (time.perf_counter() - start)


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        sqlite = t.settings(root / "sqlite")
        issued, revoked = grant_rates(sqlite)
        print(
            f"sqlite      grant issue   {issued:8.0f}/s   revoke {revoked:8.0f}/s  (HTTP, {GRANTS} each)"
        )
        with postgres_database() as url:
            if url is None:
                print("postgresql  skipped: no server at SECONDBRAIN_BENCH_POSTGRES")
            else:
                pg = t.settings(root / "pg", database_url=url)
                issued_pg, revoked_pg = grant_rates(pg)
                print(f"postgresql  grant issue   {issued_pg:8.0f}/s   revoke {revoked_pg:8.0f}/s")
                changes_pg = asyncio.run(
                    audited_changes(pg.model_copy(update={"data_dir": root / "pg2"}))
                )
                print(
                    f"postgresql  audited changes {changes_pg:6.0f}/s  (audit table, one commit each)"
                )
        changes = asyncio.run(audited_changes(t.settings(root / "changes")))
        print(f"sqlite      audited changes {changes:6.0f}/s  (fsync + commit each)")


if __name__ == "__main__":
    main()
