"""What replication costs a write, and what async mode can lose: two `secondbrain serve`
processes on loopback, node A primary of three vaults — `solo` (not replicated), `synced`
(sync replica on node B) and `lazy` (async replica on B) — and a stand-in center answering
the lease routes. Creates and edits take turns between the vaults, so load from other
processes falls on all alike; the figures are p50/p95 in ms and their ratio.

The async figure is how many acknowledged commits node B lacked at the moment of each
ack (read from its ref file), and the most it lacked: what a primary dying then loses.
BENCH_REPLICATION_CALLS sets the calls per kind and vault (default 200).
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx

from tickets import testing as tt
from vault_node.testing import (
    LeaseCenter,
    ServedNode,
    mint,
    serving_node,
    write_files,
)

CALLS = int(os.environ.get("BENCH_REPLICATION_CALLS", "200"))
VAULTS = ("solo", "synced", "lazy")
NODES = {"cred-a": "node-a", "cred-b": "node-b"}


@contextmanager
def cluster(root: Path) -> Iterator[tuple[ServedNode, ServedNode, LeaseCenter, Any]]:
    key = tt.throwaway_key()
    center = LeaseCenter(key, NODES)
    with ExitStack() as stack:
        stack.callback(center.close)
        for vault in VAULTS:
            write_files(root / "a" / "data" / vault, {"start.md": "# Start\n"})
        (root / "b" / "data").mkdir(parents=True)
        served = []
        for name, credential in (("a", "cred-a"), ("b", "cred-b")):
            extra = (
                f"center_url: {center.url}\nnode_id: node-{name}\nnode_credential: {credential}\n"
                "heartbeat_interval: 5s\nrate_limit: 1000000\nwatch: false\nembedding: off\n"
            )
            served.append(stack.enter_context(serving_node(root / name, key, extra)))
        a, b = served
        for vault, mode, replicas in (
            ("synced", "sync", [("node-b", b.base)]),
            ("lazy", "async", [("node-b", b.base)]),
            ("solo", "sync", []),
        ):
            center.assign(
                vault,
                epoch=1,
                primary=("node-a", a.base),
                replicas=replicas,
                ttl=30,
                renew=2,
                mode=mode,
            )
        wait_caught_up(root)
        yield a, b, center, key


def head(root: Path, node: str, vault: str) -> str:
    try:
        return (
            (root / node / "data" / vault / ".git" / "refs" / "heads" / "main").read_text().strip()
        )
    except OSError:
        return ""


def wait_caught_up(root: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if all(
            head(root, "b", v) and head(root, "b", v) == head(root, "a", v)
            for v in ("synced", "lazy")
        ):
            return
        time.sleep(0.1)
    heads = {v: (head(root, "a", v)[:8], head(root, "b", v)[:8]) for v in ("synced", "lazy")}
    lines = [
        line
        for node in ("a", "b")
        for line in (root / node / "node.log").read_text().splitlines()
        if "replicat" in line or "lease" in line
    ]
    raise SystemExit(f"node B never caught up: {heads}\n" + "\n".join(lines[-30:]))


def call(client: httpx.Client, tool: str, arguments: dict[str, Any]) -> float:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    started = time.perf_counter()
    answer = client.post("/mcp", json=body)
    took = time.perf_counter() - started
    result = answer.json()["result"]
    if result["isError"]:
        raise SystemExit(f"{tool} failed: {result['content'][0]['text']}")
    return took * 1000


def figures(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[int(len(ordered) * 0.95) - 1]
    return f"p50 {statistics.median(ordered):6.2f} ms  p95 {p95:6.2f} ms"


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        with cluster(root) as (a, _b, _center, key):
            token = mint(key, audience=f"{a.base}/mcp")
            headers = {"Authorization": f"Bearer {token}"}
            timings: dict[tuple[str, str], list[float]] = {}
            lag: list[int] = []
            acked: list[str] = []
            with httpx.Client(base_url=a.base, headers=headers, timeout=60) as client:
                for i in range(CALLS):
                    for vault in VAULTS:
                        path = f"bench/n{i}.md"
                        took = call(
                            client,
                            "note_create",
                            {"vault": vault, "path": path, "content": f"# N{i}\n\nbody {i}\n"},
                        )
                        timings.setdefault(("create", vault), []).append(took)
                        if vault == "lazy":
                            acked.append(head(root, "a", "lazy"))
                            held = head(root, "b", "lazy")
                            lag.append(
                                len(acked) - 1 - acked.index(held) if held in acked else len(acked)
                            )
                for i in range(CALLS):
                    for vault in VAULTS:
                        took = call(
                            client,
                            "note_edit",
                            {
                                "vault": vault,
                                "path": f"bench/n{i}.md",
                                "old_string": f"body {i}",
                                "new_string": f"edited {i}",
                            },
                        )
                        timings.setdefault(("edit", vault), []).append(took)
            wait_caught_up(root)
    print(f"replication cost per write, {CALLS} calls each, node A over loopback HTTP:")
    for kind in ("create", "edit"):
        base = statistics.median(timings[(kind, "solo")])
        for vault in VAULTS:
            samples = timings[(kind, vault)]
            ratio = statistics.median(samples) / base
            print(f"  {kind:6} {vault:6}  {figures(samples)}  ×{ratio:4.2f} of solo")
    print(
        f"async: commits acknowledged but not yet on the replica at each ack: "
        f"p50 {statistics.median(lag):.0f}, max {max(lag)} (of {len(lag)} creates)"
    )


if __name__ == "__main__":
    sys.exit(main())
