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
from typing import Any

import httpx
from bench_propagation import ADMIN, Cluster, env, pct, python, start

from tickets import SigningKey
from vault_node.testing import free_port, stop, wait_ready

CALLS = int(os.environ.get("BENCH_ONE_ADDRESS_CALLS", "400"))
WARMUP = 20
NODE_VAULTS = {"node-a": "team", "node-b": "other"}
ONE = "https://brain.example/mcp"


@contextmanager
def cluster(root: Path) -> Iterator[Cluster]:
    """A center with the one address set and two nodes, each holding one vault."""
    port = free_port()
    center_url = f"http://127.0.0.1:{port}"
    prefix = "SECONDBRAIN_CENTER_"
    center_env = env(
        **{
            f"{prefix}SECRET": SigningKey.generate().export_secret(),
            f"{prefix}ADMIN_TOKEN": ADMIN,
            f"{prefix}DATA_DIR": str(root / "center"),
            f"{prefix}ISSUER": center_url,
            f"{prefix}PORT": str(port),
            f"{prefix}MCP_URL": ONE,
            f"{prefix}LOG_LEVEL": "warning",
        }
    )
    processes = [start(python("center.cli", "serve"), center_env, root / "center.log")]
    try:
        if problem := wait_ready(center_url, processes[0], root / "center.log", 60):
            raise SystemExit(problem)
        running = Cluster(center_url, [])
        for name, vault in NODE_VAULTS.items():
            processes.append(node(running, root / name, name, vault))
        yield running
    finally:
        for process in reversed(processes):
            stop(process)


def node(running: Cluster, root: Path, name: str, vault: str) -> Any:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    (root / "data" / vault).mkdir(parents=True)
    (root / "data" / vault / "note.md").write_text("# Note\n\n" + "words " * 200 + "\n")
    body = {"id": name, "resource": f"{base}/mcp"}
    credential = running.call("POST", "/v1/nodes", body=body)["credential"]
    config = root / "node.yaml"
    config.write_text(
        f"public_url: {base}\nlisten: 127.0.0.1:{port}\ndata_dir: {root / 'data'}\n"
        f"default_vault: {vault}\nwatch: false\ncenter_url: {running.center}\nnode_id: {name}\n"
        "heartbeat_interval: 1s\nrate_limit: 1000000000\nlog_level: warn\nembedding: off\n"
    )
    process = start(
        python("vault_node.cli", "serve", "--config", str(config)),
        env(SECONDBRAIN_NODE_CREDENTIAL=credential),
        root / "node.log",
    )
    if problem := wait_ready(base, process, root / "node.log", 60):
        raise SystemExit(problem)
    running.nodes.append(f"{base}/mcp")
    return process


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
