"""The cost of the one address (docs/design.md#one-address): a read served by the node that
holds the vault against the same read passed on by another node, in the same run.

A real center (SQLite, `mcp_url` set) and two real nodes run as processes on 127.0.0.1;
node A holds vault `team` (one note), node B holds `other`. Rounds alternate: `note_read`
of the note sent to A (served there) and sent to B (forwarded to A with the caller's token,
verified again there). Printed: p50, p95 and mean of each, the forwarded/local ratio of the
p50s and what a hop adds. BENCH_ONE_ADDRESS_CALLS sets the calls of each kind (default 400).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from bench_propagation import Cluster, pct, start_center, start_node

from vault_node.testing import stop

CALLS = int(os.environ.get("BENCH_ONE_ADDRESS_CALLS", "400"))
WARMUP = 20
NODE_VAULTS = {"node-a": "team", "node-b": "other"}
ONE = "https://brain.example/mcp"


@contextmanager
def cluster(root: Path) -> Iterator[Cluster]:
    """A center with the one address set and two nodes, each holding one vault."""
    center_url, center = start_center(root, mcp_url=ONE)
    processes = [center]
    try:
        running = Cluster(center_url, [])
        for name, vault in NODE_VAULTS.items():
            folder = root / name / "data" / vault
            folder.mkdir(parents=True)
            (folder / "note.md").write_text("# Note\n\n" + "words " * 200 + "\n")
            setting = "heartbeat_interval: 1s\nembedding: off\n"
            processes.append(start_node(running, root / name, name, vault, setting))
        yield running
    finally:
        for process in reversed(processes):
            stop(process)


READ = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "note_read", "arguments": {"vault": "team", "path": "note"}},
}


def read_once(http: httpx.Client, url: str) -> float:
    started = time.perf_counter()
    answer = http.post(url, json=READ)
    seconds = time.perf_counter() - started
    if answer.status_code != 200 or answer.json()["result"]["isError"]:
        raise SystemExit(f"{url} did not serve the read: {answer.text[:300]}")
    return seconds


def wait_for_directory(http: httpx.Client, url: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        answer = http.post(url, json=READ)  # a 401 until its first revocation snapshot
        if answer.status_code == 200 and not answer.json()["result"]["isError"]:
            return
        time.sleep(0.2)
    raise SystemExit("node B never served vault team (no snapshot, or no directory)")


def main() -> None:
    with tempfile.TemporaryDirectory() as folder, cluster(Path(folder)) as running:
        member = {"id": "alice", "vaults": ["team", "other"], "role": "editor", "scope": "read"}
        credential = running.call("POST", "/v1/members", body=member)["credential"]
        minted = running.call("POST", "/v1/tokens", token=credential, body={"minutes": 60})
        local_url, far_url = running.nodes
        headers = {"Authorization": f"Bearer {minted['token']}"}
        with httpx.Client(timeout=30, headers=headers) as http:
            wait_for_directory(http, far_url)
            for _ in range(WARMUP):
                read_once(http, local_url)
                read_once(http, far_url)
            local, forwarded = [], []
            for _ in range(CALLS):
                local.append(read_once(http, local_url))
                forwarded.append(read_once(http, far_url))
        running.http.close()
    report("served locally", local)
    report("forwarded", forwarded)
    p50_local, p50_far = statistics.median(local), statistics.median(forwarded)
    print(
        f"forwarded/local p50 ratio {p50_far / p50_local:.2f}; "
        f"a hop adds {(p50_far - p50_local) * 1000:.2f} ms at p50"
    )


def report(label: str, values: list[float]) -> None:
    print(
        f"note_read {label:15s}  p50 {statistics.median(values) * 1000:6.2f} ms  "
        f"p95 {pct(values, 0.95) * 1000:6.2f} ms  mean {statistics.mean(values) * 1000:6.2f} ms"
        f"  ({len(values)} calls)"
    )


if __name__ == "__main__":
    main()
