"""The heartbeat answer at 10,000 vaults: its size and the center's time for it when the
node holds no directory (the whole one is sent) and when it sends back the version of the
one it holds (nothing is sent while nothing changed).

A real center in process on SQLite, three nodes reporting 3,334 vaults each (a heartbeat
takes at most 4,096), driven over httpx's ASGI transport as nodes call it. Figures are
medians of one run, printed, never asserted.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from center import testing as t

VAULTS = 10_000
NODES = 3
ROUNDS = 15
ROUTE = "/v1/nodes/heartbeat"


async def _beat(
    http: Any, credential: str, body: dict[str, Any]
) -> tuple[float, int, dict[str, Any]]:
    start = time.perf_counter()
    answer = await http.post(ROUTE, json=body, headers=t.bearer(credential))
    took = time.perf_counter() - start
    assert answer.status_code == 200, answer.text
    return took, len(answer.content), answer.json()


async def run(folder: Path) -> None:
    async with t.running(t.settings(folder / "center"), t.Clock()) as app, t.client(app) as http:
        credentials = []
        share = -(-VAULTS // NODES)
        for n in range(NODES):
            credential = await t.add_node(http, f"n{n}", f"https://node-{n}.test/mcp")
            names = [f"v{k:05d}" for k in range(n * share, min(VAULTS, (n + 1) * share))]
            await _beat(http, credential, {"vaults": names})
            credentials.append((credential, names))
        credential, names = credentials[0]
        whole, since = [], []
        for _ in range(ROUNDS):
            took, size, answer = await _beat(http, credential, {"vaults": names})
            whole.append((took, size))
            body = {"vaults": names, "directory_version": answer["directory_version"]}
            took, unchanged, again = await _beat(http, credential, body)
            assert again["directory"] is None
            since.append((took, unchanged))
        for label, runs in (("whole directory", whole), ("unchanged, by version", since)):
            median = statistics.median(took for took, _ in runs) * 1000
            print(
                f"heartbeat at {VAULTS:,} vaults, {label:<22}: {runs[0][1]:>9,} bytes, "
                f"{median:6.1f} ms at the center"
            )
        print(f"bytes ratio: {whole[0][1] / since[0][1]:.0f}x fewer")


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(run(Path(folder)))


if __name__ == "__main__":
    main()
