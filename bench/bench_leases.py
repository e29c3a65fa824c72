"""Lease renewals at the center: the time one node's renewal takes as the copies it holds
grow (100, 500, 2,000 vaults, as a node of a 10,000-vault deployment might hold).

A real center in process on SQLite (PostgreSQL when SECONDBRAIN_BENCH_POSTGRES names a
database URL with an empty schema, as the tests use), driven over httpx's ASGI
transport as nodes call it. Figures are medians of one run, printed, never asserted.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from center import testing as t

SIZES = (100, 500, 2000)
ROUNDS = 15


def _copies(count: int, prefix: str) -> list[dict[str, Any]]:
    return [t.held(f"{prefix}{n:05d}") for n in range(count)]


async def _median(http: Any, credential: str, copies: list[dict[str, Any]]) -> float:
    times = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        await t.renew(http, credential, *copies)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


async def run(folder: Path) -> None:
    clock = t.Clock()
    settings = t.settings(folder / "center", lease_grace=300)  # the app's own loop waits
    async with t.running(settings, clock) as app, t.client(app) as http:
        primary = await t.add_node(http, "a", "https://node-a.test/mcp")
        replica = await t.add_node(http, "b", "https://node-b.test/mcp")
        for size in SIZES:
            copies = _copies(size, f"v{size}-")
            await t.renew(http, primary, *copies)  # adopts them, replicas on b
            await t.renew(http, replica, *copies)
            as_primary = await _median(http, primary, copies)
            as_replica = await _median(http, replica, copies)
            print(
                f"renewal with {size:>5} copies: primary {as_primary:7.1f} ms"
                f" (a lease JWS per vault), replica {as_replica:7.1f} ms;"
                f" per copy {as_primary / size * 1000:6.0f} µs"
            )


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(run(Path(folder)))


if __name__ == "__main__":
    main()
