"""Failover and a move under write load, with the default lease settings (ttl 10 s, renew
2 s, grace 2 s; node `lease_margin` 2 s): how long writes pause, and whether any
acknowledged write is missing afterwards.

A real center (SQLite, a one address set so that every node takes every token) and three
real nodes run as processes on 127.0.0.1; every vault has two copies (the default
replication factor), synchronous replication. WRITERS threads write new notes, each
call to the next node in turn (as a proxy spreading the one address would), and retry
what is refused under a new path, so the notes they were told are written are exactly
the acknowledged writes.

- Failover: the primary of vault `killed` is SIGKILLed; printed is the time from the
  kill until a write succeeds again (goal: under 15 s), and the acknowledged writes
  missing from the new primary's files and git history.
- Move: `POST /v1/replication/moved/move` to the node holding no copy, the writers never
  pausing (the target is counted in sync on the primary's word once it holds the head);
  printed are the time to catch up and to switch, the longest time between two
  acknowledgements from the move's request on (the write pause of the move) and the
  acknowledged writes missing on the target.
"""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from bench_propagation import ADMIN, env, python, start

from tickets import SigningKey
from vault_node.testing import free_port, stop, wait_ready

WRITERS = int(os.environ.get("BENCH_FAILOVER_WRITERS", "4"))
DEADLINE = 120.0
NODE_VAULTS = {"node-a": "killed", "node-b": "moved", "node-c": "spare"}
ONE = "https://brain.bench/mcp"


@dataclass
class Fleet:
    root: Path
    center: str
    nodes: dict[str, str] = field(default_factory=dict)
    """Node id → its base URL."""
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    http: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=30))

    def call(self, method: str, path: str, token: str = ADMIN, body: Any = None) -> Any:
        answer = self.http.request(
            method, f"{self.center}{path}", json=body, headers={"Authorization": f"Bearer {token}"}
        )
        answer.raise_for_status()
        return answer.json()

    def vault(self, name: str) -> dict[str, Any]:
        found: dict[str, Any] = next(
            v for v in self.call("GET", "/v1/replication")["vaults"] if v["name"] == name
        )
        return found


@contextmanager
def fleet(root: Path) -> Iterator[Fleet]:
    port = free_port()
    center = f"http://127.0.0.1:{port}"
    prefix = "SECONDBRAIN_CENTER_"
    center_env = env(
        **{
            f"{prefix}SECRET": SigningKey.generate().export_secret(),
            f"{prefix}ADMIN_TOKEN": ADMIN,
            f"{prefix}DATA_DIR": str(root / "center"),
            f"{prefix}ISSUER": center,
            f"{prefix}PORT": str(port),
            f"{prefix}MCP_URL": ONE,
            f"{prefix}LOG_LEVEL": "warning",
        }
    )
    process = start(python("center.cli", "serve"), center_env, root / "center.log")
    running = Fleet(root, center, processes={"center": process})
    try:
        if problem := wait_ready(center, process, root / "center.log", 60):
            raise SystemExit(problem)
        ports = {name: free_port() for name in NODE_VAULTS}
        credentials = {  # every node known before the first adopts its vault
            name: running.call(
                "POST", "/v1/nodes", body={"id": name, "resource": f"http://127.0.0.1:{p}/mcp"}
            )["credential"]
            for name, p in ports.items()
        }
        for name, vault in NODE_VAULTS.items():
            node(running, name, vault, ports[name], credentials[name])
        yield running
    finally:
        for started in running.processes.values():
            if started.poll() is None:
                stop(started)
        running.http.close()


def node(running: Fleet, name: str, vault: str, port: int, credential: str) -> None:
    base = f"http://127.0.0.1:{port}"
    folder = running.root / name
    (folder / "data" / vault).mkdir(parents=True)
    (folder / "data" / vault / "start.md").write_text(f"# {vault}\n")
    config = folder / "node.yaml"
    config.write_text(
        f"public_url: {base}\nlisten: 127.0.0.1:{port}\ndata_dir: {folder / 'data'}\n"
        f"default_vault: {vault}\nwatch: false\ncenter_url: {running.center}\nnode_id: {name}\n"
        "heartbeat_interval: 1s\nrevocation_poll: 1s\nrate_limit: 1000000000\n"
        "log_level: warn\nembedding: off\n"
    )
    process = start(
        python("vault_node.cli", "serve", "--config", str(config)),
        env(SECONDBRAIN_NODE_CREDENTIAL=credential),
        folder / "node.log",
    )
    running.processes[name] = process
    if problem := wait_ready(base, process, folder / "node.log", 60):
        raise SystemExit(problem)
    running.nodes[name] = base


def settle(running: Fleet, vault: str) -> dict[str, Any]:
    """Until `vault` is serving with every copy in sync at one head."""
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        seen = running.vault(vault)
        heads = {copy["head"] for copy in seen["copies"]}
        if (
            seen["state"] == "serving"
            and len(seen["copies"]) >= 2
            and all(copy["in_sync"] for copy in seen["copies"])
            and len(heads) == 1
            and None not in heads
        ):
            return seen
        time.sleep(0.2)
    raise SystemExit(f"vault {vault} never settled: {running.vault(vault)}")


@dataclass
class Load:
    """WRITERS threads writing new notes to one vault through every node in turn."""

    running: Fleet
    vault: str
    token: str
    acked: dict[str, str] = field(default_factory=dict)
    acked_at: list[float] = field(default_factory=list)
    sent_at: list[float] = field(default_factory=list)
    """When each acknowledged write was sent (a write sent before a kill may be answered
    after it)."""
    refused: collections.Counter[str] = field(default_factory=collections.Counter)
    stop: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def run(self, writer: int) -> None:
        headers = {"Authorization": f"Bearer {self.token}"}
        attempt = 0
        with httpx.Client(timeout=60, headers=headers) as http:
            while not self.stop.is_set():
                attempt += 1
                self.write_once(http, writer, attempt)

    def write_once(self, http: httpx.Client, writer: int, attempt: int) -> None:
        alive = [base for n, base in self.running.nodes.items() if n in self.running.processes]
        base = alive[(writer + attempt) % len(alive)]
        path, content = f"load/w{writer}-{attempt:05d}.md", f"writer {writer} attempt {attempt}\n"
        message = {
            "jsonrpc": "2.0",
            "id": attempt,
            "method": "tools/call",
            "params": {
                "name": "note_create",
                "arguments": {"vault": self.vault, "path": path, "content": content},
            },
        }
        sent = time.monotonic()
        try:
            answer = http.post(f"{base}/mcp", json=message)
            result = answer.json()["result"]
        except (httpx.HTTPError, ValueError, KeyError):
            self.count("transport")
            time.sleep(0.2)
            return
        if result["isError"]:
            self.count(result["_meta"]["secondbrain/error"]["code"])
            time.sleep(0.2)
            return
        with self.lock:
            self.acked[path] = content
            self.acked_at.append(time.monotonic())
            self.sent_at.append(sent)

    def count(self, what: str) -> None:
        with self.lock:
            self.refused[what] += 1

    def acks_after(self, moment: float) -> int:
        with self.lock:
            return sum(1 for at in self.sent_at if at > moment)


@contextmanager
def writing(running: Fleet, vault: str, token: str) -> Iterator[Load]:
    load = Load(running, vault, token)
    threads = [threading.Thread(target=load.run, args=(n,)) for n in range(WRITERS)]
    for thread in threads:
        thread.start()
    try:
        yield load
    finally:
        load.stop.set()
        for thread in threads:
            thread.join(timeout=120)


def wait_until(check: Any, what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"gave up waiting: {what}")
        time.sleep(0.05)


def first_ack_sent_after(load: Load, moment: float) -> float:
    with load.lock:
        pairs = zip(load.sent_at, load.acked_at, strict=True)
        return min(done for sent, done in pairs if sent > moment)


def missing_on(running: Fleet, node_id: str, load: Load) -> int:
    """Acknowledged notes not in `node_id`'s files or not in its git history."""
    folder = running.root / node_id / "data" / load.vault
    logged = subprocess.run(
        ["git", "-C", str(folder), "log", "--format=", "--name-only", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return sum(
        1
        for path, content in load.acked.items()
        if path not in logged
        or not (folder / path).is_file()
        or not (folder / path).read_text(encoding="utf-8").endswith(content)
    )


def failover(running: Fleet, token: str) -> None:
    before = settle(running, "killed")
    with writing(running, "killed", token) as load:
        wait_until(lambda: len(load.acked) >= 40, "40 writes before the kill")
        victim = running.processes.pop(before["node"])
        victim.send_signal(signal.SIGKILL)
        killed_at = time.monotonic()
        victim.wait(timeout=30)
        wait_until(lambda: load.acks_after(killed_at) >= 1, "a write after the kill")
        resumed = first_ack_sent_after(load, killed_at) - killed_at
        wait_until(lambda: load.acks_after(killed_at) >= 40, "40 writes after the kill")
    after = running.vault("killed")
    missing = missing_on(running, after["node"], load)
    print(
        f"failover: writes succeeded again {resumed:.1f} s after SIGKILL of the primary "
        f"(goal < 15 s); epoch {before['epoch']} -> {after['epoch']}, "
        f"{before['node']} -> {after['node']}"
    )
    print(f"  acknowledged {len(load.acked)}, refused {dict(load.refused)}")
    print(f"  acknowledged writes missing on the new primary: {missing}")


def switching(running: Fleet, vault: str) -> bool:
    seen = running.vault(vault)
    return seen["state"] != "moving" or seen["move"]["step"] == "switch"


def move(running: Fleet, token: str) -> None:
    before = settle(running, "moved")
    held = {copy["node"] for copy in before["copies"]}
    target = next(n for n in sorted(running.processes) if n not in held and n != "center")
    with writing(running, "moved", token) as load:
        wait_until(lambda: len(load.acked) >= 20, "20 writes before the move")
        running.call("POST", "/v1/replication/moved/move", body={"to": target})
        asked = time.monotonic()
        wait_until(lambda: switching(running, "moved"), "the switch")
        switched = time.monotonic()
        wait_until(lambda: running.vault("moved")["epoch"] > before["epoch"], "the promotion")
        promoted = time.monotonic()
        wait_until(lambda: load.acks_after(promoted) >= 40, "40 writes after the move")
    gaps = [b - a for a, b in zip(load.acked_at, load.acked_at[1:], strict=False) if b > asked]
    missing = missing_on(running, target, load)
    print(
        f"move {before['node']} -> {target}: catch-up {switched - asked:.1f} s (writers never pausing), "
        f"switch to promotion {promoted - switched:.1f} s"
    )
    print(f"  write pause of the move (longest gap between acks): {max(gaps):.1f} s")
    print(f"  acknowledged {len(load.acked)}, refused {dict(load.refused)}")
    print(f"  acknowledged writes missing on the new primary: {missing}")


def main() -> None:
    with tempfile.TemporaryDirectory() as folder, fleet(Path(folder)) as running:
        member = {"id": "bench", "vaults": ["*"], "role": "editor", "scope": "read_write"}
        credential = running.call("POST", "/v1/members", body=member)["credential"]
        token = running.call("POST", "/v1/tokens", token=credential, body={"minutes": 60})["token"]
        print(f"{len(NODE_VAULTS)} nodes, {WRITERS} writers, default lease settings")
        move(running, token)
        failover(running, token)


if __name__ == "__main__":
    main()
