"""The node under load: `tools/call` over loopback HTTP against `secondbrain serve` on a
10,000-note vault, the cost of the HTTP + JSON-RPC + auth layer over the same vault calls
in-process, and a mixed read/write run from 8 clients that must lose no update.

The server runs in its own process (a throw-away signing key, a JWKS file, a minted token,
the rate limit lifted). The load and overhead runs drive it over bare keep-alive sockets,
one per thread, so the client's own cost stays small; the mixed run uses `httpx.Client`.
BENCH_NODE_SECONDS sets the mixed run's length (default 60), BENCH_NODE_CALLS the calls
per tool and concurrency (default 1000), BENCH_NODE_NOTES the vault size (default 10000).
"""

from __future__ import annotations

import itertools
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from vaultgen import generate, vocabulary

from tickets import testing as tt
from vault_core.library import Library, Settings
from vault_node.context import Call, Context
from vault_node.registry import REGISTRY, params_of
from vault_node.testing import make_config, mint, serving_node
from vault_node.tools.base import check_arguments

NOTES = int(os.environ.get("BENCH_NODE_NOTES", "10000"))
CALLS = int(os.environ.get("BENCH_NODE_CALLS", "1000"))
SECONDS = float(os.environ.get("BENCH_NODE_SECONDS", "60"))
CONCURRENCY = (1, 8, 32)
OVERHEAD_CALLS = 500
CLIENTS = 8
HOT_NOTES = 4  # few enough that writers collide and conflicts really happen
ANCHOR = "<!-- bench anchor -->"
READY_DEADLINE = 900.0  # the first start indexes and commits the whole vault
VAULT = "default"

Args = Callable[[random.Random], dict[str, Any]]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class Node:
    """A `secondbrain serve` process and what a client needs to reach it."""

    # Plain classes, not dataclasses: bench/run.py loads this file without registering it
    # in sys.modules, where dataclasses look up the module of string annotations.
    def __init__(self, url: str, token: str, process: subprocess.Popen[bytes]) -> None:
        self.url, self.token, self.process = url, token, process


@contextmanager
def serving(root: Path, code: Path | None = None) -> Iterator[Node]:
    """Start the node over `root/data` on a free loopback port, the rate limit lifted; with
    `code`, the node of that checkout of the repository (an older commit's, to compare)."""
    key = tt.throwaway_key()
    started = time.perf_counter()
    sources = ("libs/vault_core/src", "libs/tickets/src", "services/node/src")
    prefix = ["env", "PYTHONPATH=" + ":".join(str(code / s) for s in sources)] if code else []
    with serving_node(
        root, key, "rate_limit: 1000000000\n", deadline=READY_DEADLINE, prefix=prefix
    ) as node:
        print(f"node ready in {time.perf_counter() - started:.1f} s (pid {node.process.pid})")
        token = mint(key, "read write delete manage", audience=f"{node.base}/mcp")
        yield Node(f"{node.base}/mcp", token, node.process)


class Client:
    """One keep-alive connection speaking JSON-RPC `tools/call` to the node."""

    def __init__(self, node: Node) -> None:
        headers = {
            "Authorization": f"Bearer {node.token}",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-06-18",
        }
        self.http = httpx.Client(headers=headers, timeout=60)
        self.url = node.url
        self.ids = itertools.count(1)

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The tool's result (`isError` included); raises on a transport or protocol fault."""
        message = {
            "jsonrpc": "2.0",
            "id": next(self.ids),
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }
        response = self.http.post(self.url, json=message)
        response.raise_for_status()
        reply = response.json()
        if "result" not in reply:
            raise RuntimeError(f"{tool}: {reply.get('error')}")
        result: dict[str, Any] = reply["result"]
        return result

    def close(self) -> None:
        self.http.close()


def note_paths(vault: Path) -> list[str]:
    return sorted(
        p.relative_to(vault).as_posix()
        for p in vault.rglob("*.md")
        if not p.relative_to(vault).parts[0].startswith(".")
    )


def read_args(paths: list[str]) -> Args:
    return lambda rng: {"path": rng.choice(paths)}


def search_args(words: list[str]) -> Args:
    return lambda rng: {"query": " ".join(rng.sample(words, rng.randint(1, 2))), "limit": 10}


def timed_calls(node: Node, tool: str, make: Args, calls: int, seed: int) -> list[float]:
    """Latencies (s) of `calls` calls from one client; every call must succeed."""
    rng, client, latencies = random.Random(seed), RawClient(node), []
    try:
        for _ in range(calls):
            arguments = make(rng)
            start = time.perf_counter()
            result = client.call(tool, arguments)
            latencies.append(time.perf_counter() - start)
            if result["isError"]:
                raise RuntimeError(f"{tool} {arguments}: {result['content'][0]['text']}")
    finally:
        client.close()
    return latencies


def load(node: Node, tool: str, make: Args, concurrency: int) -> tuple[list[float], float]:
    """CALLS calls split over `concurrency` threads: every latency and the wall time."""
    share = [CALLS // concurrency + (i < CALLS % concurrency) for i in range(concurrency)]
    timed_calls(node, tool, make, 20, seed=99)  # warm the connection path and caches
    start = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        runs = pool.map(
            lambda i: timed_calls(node, tool, make, share[i], seed=i), range(concurrency)
        )
        latencies = [value for run in runs for value in run]
    return latencies, time.perf_counter() - start


def throughput(node: Node, tools: dict[str, Args]) -> None:
    print(f"tools/call over HTTP, {CALLS} calls each:")
    for tool, make in tools.items():
        for concurrency in CONCURRENCY:
            latencies, wall = load(node, tool, make, concurrency)
            ms = [v * 1000 for v in latencies]
            print(
                f"  {tool:<12} c={concurrency:<3} {len(ms) / wall:8.0f} calls/s   "
                f"p50 {pct(ms, 0.5):6.2f} ms  p95 {pct(ms, 0.95):6.2f} ms  "
                f"p99 {pct(ms, 0.99):6.2f} ms"
            )


def in_process(vault: Path, tools: dict[str, Args]) -> tuple[dict[str, list[float]], float]:
    """Latencies of the tools' own handlers on the same vault, called directly (no HTTP,
    no JSON-RPC, no token), and the time to open the vault."""
    start = time.perf_counter()
    library = Library(vault.parent, Settings(watch=False), VAULT).open_all()
    opening = time.perf_counter() - start
    key = tt.throwaway_key()
    ticket = tt.verifier(key).verify(
        tt.mint(key, scope="read write delete manage", role="owner", vaults=["*"])
    )
    place = vault.parent.parent / "in-process"
    place.mkdir(exist_ok=True)
    context = Context(library, make_config(place, key, data_dir=vault.parent), ticket)
    found: dict[str, list[float]] = {}
    try:
        for name, make in tools.items():
            tool, rng, latencies = REGISTRY[name], random.Random(0), []
            for _ in range(OVERHEAD_CALLS + 20):
                arguments, _problems = check_arguments(params_of(tool), make(rng))
                arguments.pop("vault", None)
                call = Call(arguments, context, library.get(VAULT))
                begin = time.perf_counter()
                tool.handler(call)
                latencies.append(time.perf_counter() - begin)
            found[name] = latencies[20:]
    finally:
        library.close()
    return found, opening


class RawClient:
    """HTTP/1.1 keep-alive over a bare socket: prebuilt request bytes out, one response in.

    httpx spends about a millisecond of its own per request; this spends a few tens of
    microseconds, so what the overhead figure measures is the node, not the client."""

    def __init__(self, node: Node) -> None:
        parts = urlsplit(node.url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.token = node.token
        self.sock = socket.create_connection((self.host, self.port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.reader = self.sock.makefile("rb")

    def request(self, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            f"Authorization: Bearer {self.token}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\n"
            f"MCP-Protocol-Version: 2025-06-18\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        self.sock.sendall(head.encode("ascii") + body)
        status = int(self.reader.readline().split()[1])
        length = 0
        while (line := self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        return status, self.reader.read(length)

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        message = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }
        status, body = self.request("POST", "/mcp", json.dumps(message).encode())
        if status != 200:
            raise RuntimeError(f"{tool}: HTTP {status}")
        result: dict[str, Any] = json.loads(body)["result"]
        return result

    def close(self) -> None:
        self.reader.close()
        self.sock.close()


def raw_latencies(node: Node, work: Callable[[RawClient, random.Random], object]) -> list[float]:
    """OVERHEAD_CALLS latencies (ms) of `work` on one raw connection, after a warm-up."""
    client, rng, latencies = RawClient(node), random.Random(0), []
    try:
        for number in range(OVERHEAD_CALLS + 20):
            start = time.perf_counter()
            work(client, rng)
            if number >= 20:
                latencies.append((time.perf_counter() - start) * 1000)
    finally:
        client.close()
    return latencies


def overhead(node: Node, tools: dict[str, Args], local: dict[str, list[float]]) -> None:
    print(
        f"HTTP + JSON-RPC + auth overhead, concurrency 1, {OVERHEAD_CALLS} calls on a bare "
        "keep-alive socket (target ≤ 1 ms p50):"
    )
    floor = statistics.median(raw_latencies(node, lambda c, _: c.request("GET", "/healthz")))
    ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    pinged = statistics.median(raw_latencies(node, lambda c, _: c.request("POST", "/mcp", ping)))
    print(f"  GET /healthz round trip p50 {floor:6.3f} ms (the loopback HTTP floor)")
    print(f"  JSON-RPC ping with token check p50 {pinged:6.3f} ms")
    for tool, make in tools.items():

        def work(
            client: RawClient, rng: random.Random, tool: str = tool, make: Args = make
        ) -> None:
            if client.call(tool, make(rng))["isError"]:
                raise RuntimeError(f"{tool} failed")

        remote = statistics.median(raw_latencies(node, work))
        here = statistics.median(v * 1000 for v in local[tool])
        gap = remote - here
        verdict = "ok" if gap <= 1.0 else "OVER TARGET"
        print(
            f"  {tool:<12} handler in-process p50 {here:6.3f} ms   HTTP p50 {remote:6.3f} ms   "
            f"overhead {gap:6.3f} ms ({remote / here:.2f}x)  {verdict}"
        )


class Tally:
    """What the mixed run saw; `acknowledged` maps each written marker to its note."""

    def __init__(self) -> None:
        self.calls = 0
        self.conflicts = 0
        self.errors: list[str] = []
        self.acknowledged: dict[str, str] = {}
        self.refused: set[str] = set()
        self.lock = threading.Lock()

    def add(self, calls: int = 0, conflicts: int = 0) -> None:
        with self.lock:
            self.calls += calls
            self.conflicts += conflicts


def write_once(client: Client, tally: Tally, path: str, marker: str, section: bool) -> None:
    """Read, then write with the read's content_hash; on a conflict read again and retry."""
    while True:
        expected = succeeded(client, tally, "note_read", {"path": path})["content_hash"]
        if section:
            tool = "note_section_edit"
            arguments = {"mode": "append_to_section", "heading": "Details", "content": marker}
        else:
            tool = "note_edit"
            arguments = {"old_string": ANCHOR, "new_string": f"{marker}\n{ANCHOR}"}
        result = client.call(tool, {"path": path, "content_hash": expected, **arguments})
        tally.add(calls=1)
        if not result["isError"]:
            with tally.lock:
                tally.acknowledged[marker] = path
            return
        if result.get("_meta", {}).get("secondbrain/error", {}).get("code") != "hash_mismatch":
            raise RuntimeError(f"{tool} {path}: {result['content'][0]['text']}")
        with tally.lock:
            tally.conflicts += 1
            tally.refused.add(marker)
        marker += "r"  # a fresh marker per attempt: a refused one must never land


def succeeded(client: Client, tally: Tally, tool: str, arguments: dict[str, Any]) -> Any:
    """The structured result of a call that must not fail."""
    result = client.call(tool, arguments)
    tally.add(calls=1)
    if result["isError"]:
        raise RuntimeError(f"{tool} {arguments}: {result['content'][0]['text']}")
    return result["structuredContent"]


def mixed_client(
    node: Node, number: int, hot: list[str], reads: dict[str, Args], tally: Tally, until: float
) -> None:
    """Half writes to the hot notes (note_edit or note_section_edit), half reads and searches."""
    rng, client, serial = random.Random(1000 + number), Client(node), 0
    try:
        while time.monotonic() < until:
            roll = rng.random()
            try:
                if roll < 0.5:
                    serial += 1
                    marker = f"bench-marker c{number}-{serial}"
                    write_once(client, tally, rng.choice(hot), marker, section=roll < 0.25)
                else:
                    tool = "note_read" if roll < 0.8 else "note_search"
                    succeeded(client, tally, tool, reads[tool](rng))
            except (httpx.HTTPError, RuntimeError) as exc:
                with tally.lock:
                    tally.errors.append(str(exc)[:300])
    finally:
        client.close()


def mixed(node: Node, hot: list[str], reads: dict[str, Args]) -> Tally:
    tally = Tally()
    until = time.monotonic() + SECONDS
    with ThreadPoolExecutor(CLIENTS) as pool:
        runs = [
            pool.submit(mixed_client, node, number, hot, reads, tally, until)
            for number in range(CLIENTS)
        ]
        for run in runs:
            run.result()
    return tally


def replay(vault: Path, tally: Tally) -> tuple[list[str], list[str], int]:
    """Acknowledged markers missing from the files, refused ones present, markers found."""
    lines: dict[str, set[str]] = {}
    for path in set(tally.acknowledged.values()):
        text = (vault / path).read_text(encoding="utf-8")
        lines[path] = {line.strip() for line in text.splitlines()}
    lost = [m for m, path in tally.acknowledged.items() if m not in lines[path]]
    landed = [m for m in tally.refused if any(m in found for found in lines.values())]
    found = sum(1 for found in lines.values() for line in found if line.startswith("bench-marker"))
    return lost, landed, found


def report_mixed(tally: Tally, lost: list[str], landed: list[str], found: int) -> None:
    writes = len(tally.acknowledged)
    print(
        f"mixed read/write, {CLIENTS} clients, {SECONDS:.0f} s, {HOT_NOTES} hot notes: "
        f"{tally.calls} calls ({tally.calls / SECONDS:.0f}/s), {writes} acknowledged writes, "
        f"{tally.conflicts} conflicts (reported, retried), {len(tally.errors)} errors"
    )
    print(
        f"  replay: {writes} acknowledged markers, {found} in the files, {len(lost)} lost, "
        f"{len(landed)} refused writes that landed"
    )
    for error in tally.errors[:5]:
        print(f"  error: {error}")
    if tally.errors or lost or landed or found != writes:
        print("  FAILED: errors or lost updates")


def prepare(vault: Path) -> list[str]:
    """Generate the vault; give the hot notes a unique anchor line for note_edit."""
    generate(vault, NOTES)
    hot = note_paths(vault)[:: NOTES // HOT_NOTES][:HOT_NOTES]
    for path in hot:
        with (vault / path).open("a", encoding="utf-8") as sink:
            sink.write(f"\n{ANCHOR}\n")
    return hot


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-node-") as folder:
        root = Path(folder)
        vault = root / "data" / VAULT
        started = time.perf_counter()
        hot = prepare(vault)
        print(f"generated {NOTES} notes in {time.perf_counter() - started:.1f} s")
        paths = note_paths(vault)
        tools = {
            "note_read": read_args(paths),
            "note_search": search_args(vocabulary(random.Random(42))),
        }
        local, opening = in_process(vault, tools)
        print(f"in-process open (index + first commit of {NOTES} notes) {opening:.1f} s")
        with serving(root) as node:
            throughput(node, tools)
            overhead(node, tools, local)
            tally = mixed(node, hot, tools)
        report_mixed(tally, *replay(vault, tally))


if __name__ == "__main__":
    main()
