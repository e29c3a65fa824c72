"""Revocation lag: how long after the center revokes a token each node first refuses it.

A real center (SQLite) and two real nodes run as processes on 127.0.0.1, the nodes polling
the revocation feed every 1 s, then (a fresh cluster) every 10 s, the default. Each round
mints an agent token for both nodes, checks that both accept it, waits a random part of the
interval (so revocations land anywhere in the nodes' poll cycle), revokes it and polls each
node every 20 ms until it answers 401. Printed per node: median, p95 and max lag, and
their ratio to the poll interval (docs/design.md#revocation-feed promises at most one
interval, plus the
fetch). BENCH_PROPAGATION_ROUNDS sets the revocations per interval (default 5).
"""

from __future__ import annotations

import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from tickets import SigningKey
from vault_node.testing import free_port, stop, wait_ready

ROUNDS = int(os.environ.get("BENCH_PROPAGATION_ROUNDS", "5"))
INTERVALS = (1.0, 10.0)
PROBE_EVERY = 0.02
GIVE_UP = 120.0
ADMIN = "bench-admin-token-" + "b" * 32
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def env(**extra: str) -> dict[str, str]:
    kept = {k: v for k, v in os.environ.items() if not k.startswith("SECONDBRAIN_")}
    return {**kept, **extra}


def python(module: str, *args: str) -> list[str]:
    return [sys.executable, "-c", f"from {module} import main; main()", *args]


class Cluster:
    """The center's URL, the nodes' MCP URLs and an HTTP client for all of them."""

    def __init__(self, center: str, nodes: list[str]) -> None:
        self.center, self.nodes = center, nodes
        self.http = httpx.Client(timeout=30)

    def call(self, method: str, path: str, token: str = ADMIN, body: Any = None) -> Any:
        answer = self.http.request(
            method, f"{self.center}{path}", json=body, headers={"Authorization": f"Bearer {token}"}
        )
        answer.raise_for_status()
        return answer.json()

    def status(self, url: str, token: str, http: httpx.Client) -> int:
        return http.post(url, json=PING, headers={"Authorization": f"Bearer {token}"}).status_code


def start(command: list[str], environment: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as sink:
        return subprocess.Popen(command, env=environment, stdout=sink, stderr=subprocess.STDOUT)


def start_center(root: Path, **settings: str) -> tuple[str, subprocess.Popen[bytes]]:
    """A center on a free port, its SQLite data under `root`/center, ready: its URL and
    process. `settings` adds SECONDBRAIN_CENTER_<NAME> values."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    values = {
        "SECRET": SigningKey.generate().export_secret(),
        "ADMIN_TOKEN": ADMIN,
        "DATA_DIR": str(root / "center"),
        "ISSUER": url,
        "PORT": str(port),
        "LOG_LEVEL": "warning",
        **{name.upper(): value for name, value in settings.items()},
    }
    environment = env(**{f"SECONDBRAIN_CENTER_{name}": value for name, value in values.items()})
    process = start(python("center.cli", "serve"), environment, root / "center.log")
    if problem := wait_ready(url, process, root / "center.log", 60):
        stop(process)
        raise SystemExit(problem)
    return url, process


def start_node(
    running: Cluster, root: Path, name: str, vault: str, settings: str
) -> subprocess.Popen[bytes]:
    """Node `name` registered with the center and serving `vault` from `root`/data, ready;
    `settings` adds lines to its config. Its MCP URL joins `running.nodes`."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    (root / "data" / vault).mkdir(parents=True, exist_ok=True)
    body = {"id": name, "resource": f"{base}/mcp"}
    credential = running.call("POST", "/v1/nodes", body=body)["credential"]
    config = root / "node.yaml"
    config.write_text(
        f"public_url: {base}\nlisten: 127.0.0.1:{port}\ndata_dir: {root / 'data'}\n"
        f"default_vault: {vault}\nwatch: false\ncenter_url: {running.center}\nnode_id: {name}\n"
        f"rate_limit: 1000000000\nlog_level: warn\n{settings}"
    )
    process = start(
        python("vault_node.cli", "serve", "--config", str(config)),
        env(SECONDBRAIN_NODE_CREDENTIAL=credential),
        root / "node.log",
    )
    if problem := wait_ready(base, process, root / "node.log", 60):
        stop(process)
        raise SystemExit(problem)
    running.nodes.append(f"{base}/mcp")
    return process


@contextmanager
def cluster(root: Path, poll: float) -> Iterator[Cluster]:
    """A center and two nodes polling every `poll` seconds; all stopped by their PIDs."""
    center_url, center = start_center(root)
    processes = [center]
    try:
        running = Cluster(center_url, [])
        for name in ("node-a", "node-b"):
            setting = f"revocation_poll: {poll}s\nmax_stale: 1h\n"
            processes.append(start_node(running, root / name, name, "team", setting))
        yield running
    finally:
        for process in reversed(processes):
            stop(process)


def first_refusal(running: Cluster, url: str, token: str, since: float, lags: list[float]) -> None:
    """Poll `url` until it refuses `token`; append the seconds since `since`."""
    with httpx.Client(timeout=30) as http:
        while running.status(url, token, http) != 401:
            if time.perf_counter() - since > GIVE_UP:
                raise SystemExit(f"{url} still accepts a revoked token after {GIVE_UP:.0f} s")
            time.sleep(PROBE_EVERY)
    lags.append(time.perf_counter() - since)


def measure(running: Cluster, credential: str, poll: float) -> list[list[float]]:
    """ROUNDS revocations; the lag of each per node."""
    lags: list[list[float]] = [[] for _ in running.nodes]
    body = {"resource": running.nodes, "minutes": 60}
    jitter = random.Random(6)
    for _ in range(ROUNDS):
        minted = running.call("POST", "/v1/tokens", token=credential, body=body)
        for url in running.nodes:
            if running.status(url, minted["token"], running.http) != 200:
                raise SystemExit(f"{url} refused a fresh token")
        time.sleep(jitter.uniform(0, poll))
        since = time.perf_counter()
        running.call("DELETE", f"/v1/tokens/{minted['jti']}", token=credential)
        watchers = [
            threading.Thread(
                target=first_refusal, args=(running, url, minted["token"], since, lags[i])
            )
            for i, url in enumerate(running.nodes)
        ]
        for watcher in watchers:
            watcher.start()
        for watcher in watchers:
            watcher.join()
    return lags


def report(poll: float, lags: list[list[float]]) -> None:
    for name, values in zip(("node-a", "node-b"), lags, strict=True):
        median, p95, worst = statistics.median(values), pct(values, 0.95), max(values)
        print(
            f"poll {poll:4.0f} s  {name}  lag median {median:6.2f} s  p95 {p95:6.2f} s  "
            f"max {worst:6.2f} s   max/poll {worst / poll:4.2f}  median/poll {median / poll:4.2f}"
            f"  ({len(values)} revocations)"
        )


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        for poll in INTERVALS:
            root = Path(folder) / f"poll-{poll:g}"
            root.mkdir()
            started = time.perf_counter()
            with cluster(root, poll) as running:
                member = {"id": "alice", "vaults": ["team"], "role": "editor", "scope": "read"}
                credential = running.call("POST", "/v1/members", body=member)["credential"]
                lags = measure(running, credential, poll)
                running.http.close()
            report(poll, lags)
            print(f"poll {poll:4.0f} s  run took {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
