"""Helpers the node's tests and the end-to-end tests reuse: keys on disk, a config, and a
client that speaks MCP to an in-process node.

For tests only: the keys are throw-away and the configuration trusts nothing else.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx

from tickets import RevocationSnapshot, SigningKey, sign_snapshot
from tickets import testing as tt
from tickets.leases import Lease, sign_lease
from vault_node.config import NodeConfig

ISSUER = tt.ISSUER
PUBLIC_URL = "https://node-a.test"
RESOURCE = f"{PUBLIC_URL}/mcp"

Check = Callable[[str, dict[str, Any]], None]

# A small vault: links both ways, tags, tasks, a daily note, a template, an attachment.
SAMPLE_NOTES: dict[str, str | bytes] = {
    "attachments/diagram.png": b"\x89PNG\r\n\x1a\n fake image",
    "wiki/rate-limiting.md": (
        "---\ntitle: Rate limiting\ntags: [ops, api]\n---\n# Rate limiting\n\n"
        "Token buckets refill continuously. See [[wiki/backoff]] and [[Backoff|retries]].\n\n"
        "## Details\n\nBucket size is 600 per minute.\n\n## Open questions\n\n"
        "- [ ] measure the burst size\n- [x] pick an algorithm\n"
    ),
    "wiki/backoff.md": "---\ntitle: Backoff\ntags: [ops]\n---\n# Backoff\n\nExponential backoff "
    "with jitter. Related: [rate limits](rate-limiting.md).\n",
    "raw/article.md": (
        "# An article\n\nSome raw text about #caching and limits.\n![[diagram.png]]\n"
    ),
    "journal/2026/2026-01-01.md": "---\ntitle: 2026-01-01\ntags: [journal]\n---\n"
    "# Thursday, 1 January 2026\n\n## 09:00\n\nNew year planning.\n",
    "templates/meeting.md": '---\ntitle: "{{title}}"\ntags: [meeting]\n---\n# {{title}}\n\n'
    "Date: {{date}}\n\n## Notes\n",
}


def write_files(root: Path, files: dict[str, str | bytes]) -> None:
    """Put `files` (vault-relative path → text or bytes) under `root`."""
    for rel, content in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content if isinstance(content, bytes) else content.encode())


def blank_png(width: int, height: int) -> bytes:
    """A black one-colour palette PNG written row by row, never held as pixels: 7,071 x 7,071
    pixels (just under 50 million, the most an image read decodes) is 48 KB as a file, 50 MB
    as decoded palette indexes and 200 MB as the RGB a model is shown."""
    row = b"\0" * (1 + width)  # filter type 0, then one palette index a pixel
    packer = zlib.compressobj(9)
    data = b"".join(packer.compress(row) for _ in range(height)) + packer.flush()

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + body))
        return struct.pack(">I", len(body)) + kind + body + crc

    header = struct.pack(">IIBBBBB", width, height, 8, 3, 0, 0, 0)
    chunks = (chunk(b"IHDR", header), chunk(b"PLTE", b"\0\0\0"), chunk(b"IDAT", data))
    return b"\x89PNG\r\n\x1a\n" + b"".join(chunks) + chunk(b"IEND", b"")


def key_files(directory: Path, key: SigningKey, now: int | None = None) -> tuple[Path, Path]:
    """A JWKS file trusting `key` and a revocation snapshot signed by it, issued `now`."""
    now = int(time.time()) if now is None else now
    jwks = directory / "jwks.json"
    jwks.write_text(json.dumps(tt.key_set(key).to_jwks()))
    revocations = directory / "revocations.jws"
    revocations.write_text(sign_snapshot(tt.snapshot(iat=now), key))
    return jwks, revocations


def make_config(directory: Path, key: SigningKey, **overrides: Any) -> NodeConfig:
    """An offline node under `directory`: data in `data/`, keys and revocations from files."""
    jwks, revocations = key_files(directory, key)
    values: dict[str, Any] = {
        "public_url": PUBLIC_URL,
        "data_dir": directory / "data",
        "issuer": ISSUER,
        "jwks_file": jwks,
        "revocation_file": revocations,
        "watch": False,
        "embedding": "off",  # rankings stay keyword-only unless a test asks for vectors
    }
    return NodeConfig(**{**values, **overrides})


def mint(
    key: SigningKey,
    scope: str = "read write delete manage",
    *,
    vaults: list[str] | None = None,
    role: str = "owner",
    sub: str = "alice",
    audience: str = RESOURCE,
    **claims: Any,
) -> str:
    """A token for this node, valid from now, signed by `key`."""
    return tt.mint(
        key,
        now=int(time.time()),
        scope=scope,
        vaults=vaults or ["*"],
        role=role,
        sub=sub,
        aud=audience,
        **claims,
    )


@dataclass
class Harness:
    """A started node and a client for it, with helpers that speak MCP."""

    client: httpx.AsyncClient
    config: NodeConfig
    key: SigningKey
    data: Path
    app: Any = None
    default_token: str = ""
    check: Check | None = None
    ids: list[int] = field(default_factory=lambda: [0])

    def token(self, scope: str = "read write delete manage", **claims: Any) -> str:
        return mint(self.key, scope, **claims)

    async def post(
        self,
        body: Any,
        *,
        token: str | None = None,
        raw: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> httpx.Response:
        sent = {
            "Authorization": f"Bearer {token or self.default_token}",
            "Content-Type": "application/json",
            **(headers or {}),
        }
        content = raw if raw is not None else json.dumps(body).encode()
        return await self.client.post("/mcp", content=content, headers=sent)

    async def rpc(self, method: str, params: Any = None, *, token: str | None = None) -> Any:
        self.ids[0] += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.ids[0], "method": method}
        if params is not None:
            message["params"] = params
        response = await self.post(message, token=token)
        assert response.status_code == 200, response.text
        return response.json()

    async def call(
        self, tool: str, arguments: dict[str, Any] | None = None, *, token: str | None = None
    ) -> dict[str, Any]:
        reply = await self.rpc(
            "tools/call", {"name": tool, "arguments": arguments or {}}, token=token
        )
        assert "result" in reply, reply
        result: dict[str, Any] = reply["result"]
        if not result["isError"] and self.check is not None:
            self.check(tool, result)
        return result

    async def ok(
        self, tool: str, arguments: dict[str, Any] | None = None, *, token: str | None = None
    ) -> dict[str, Any]:
        result = await self.call(tool, arguments, token=token)
        assert not result["isError"], result["content"][0]["text"]
        structured: dict[str, Any] = result["structuredContent"]
        return structured

    async def fails(
        self, tool: str, arguments: dict[str, Any] | None = None, *, token: str | None = None
    ) -> tuple[str, str]:
        """A tool error's (code, message)."""
        result = await self.call(tool, arguments, token=token)
        assert result["isError"], result
        return result["_meta"]["secondbrain/error"]["code"], result["content"][0]["text"]


NodeFactory = Callable[..., Awaitable[Harness]]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def wait_ready(
    base: str, process: subprocess.Popen[bytes], log: Path, deadline: float
) -> str | None:
    """Poll `<base>/healthz` until it answers 200 with no vault still being opened (a node
    listens after at most `app.START_WAIT` even when a vault takes longer, and a vault's
    opening is where a crash's writes are committed); the reason when it never does."""
    until = time.monotonic() + deadline
    while time.monotonic() < until:
        if process.poll() is not None:
            return f"the node exited with {process.returncode}:\n{log.read_text()}"
        try:
            answer = httpx.get(f"{base}/healthz", timeout=2)
            if answer.status_code == 200 and not answer.json().get("vaults_opening"):
                return None
        except (httpx.TransportError, ValueError):
            pass
        time.sleep(0.1)
    return f"the node was not ready within {deadline} s:\n{log.read_text()}"


def stop(process: subprocess.Popen[bytes], grace: float = 20.0) -> None:
    """Terminate a server started by a test or benchmark; kill it if it lingers."""
    process.terminate()
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@dataclass
class ServedNode:
    """`secondbrain serve` running as a subprocess: where it listens, its config and log."""

    base: str
    config: Path
    log: Path
    process: subprocess.Popen[bytes]


@contextlib.contextmanager
def serving_node(
    root: Path,
    key: SigningKey,
    extra: str = "",
    *,
    public_url: str | None = None,
    deadline: float = 60.0,
    prefix: Sequence[str] = (),
) -> Iterator[ServedNode]:
    """`secondbrain serve` over `root/data` on a free loopback port, trusting `key` offline
    (a JWKS file and a revocation snapshot it signed), with `extra` YAML lines in its
    config and no SECONDBRAIN_* variable of the caller's environment, run under `prefix`
    (e.g. `vault_core.testing.unprivileged_command()`); ready on entry (RuntimeError with
    its log when it never gets there), stopped on exit."""
    jwks, revocations = key_files(root, key)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    config = root / "node.yaml"
    config.write_text(
        f"public_url: {public_url or base}\nlisten: 127.0.0.1:{port}\n"
        f"data_dir: {root / 'data'}\nissuer: {tt.ISSUER}\njwks_file: {jwks}\n"
        f"revocation_file: {revocations}\nmax_stale: 1h\n{extra}"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("SECONDBRAIN_")}
    log = root / "node.log"
    command = [sys.executable, "-c", "from vault_node.cli import main; main()"]
    with log.open("wb") as sink:
        process = subprocess.Popen(  # noqa: S603 — our own CLI, arguments built here
            [*prefix, *command, "serve", "--config", str(config)],
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=env,
        )
    try:
        problem = wait_ready(base, process, log, deadline)
        if problem:
            raise RuntimeError(problem)
        yield ServedNode(base, config, log, process)
    finally:
        stop(process)


class StubCenter:
    """A center on loopback serving what nodes fetch — its JWKS and the revocation feed,
    `snapshot` signed by `key` and stamped with the time of each request — and answering
    503 to everything while `up` is False. `close()` stops it."""

    def __init__(self, key: SigningKey, snapshot: RevocationSnapshot | None = None) -> None:
        self.key = key
        self.snapshot = snapshot or tt.snapshot()
        self.up = True
        center = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if not center.up:
                    self.send_error(503)
                    return
                if self.path == "/.well-known/jwks.json":
                    body = json.dumps(tt.key_set(center.key).to_jwks())
                elif self.path == "/v1/revocations":
                    fresh = replace(center.snapshot, iat=int(time.time()))
                    token = sign_snapshot(fresh, center.key)
                    body = json.dumps({"seq": fresh.seq, "snapshot": token})
                else:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(body.encode())

            def do_POST(self) -> None:
                size = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(size)
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = None
                auth = self.headers.get("Authorization", "").removeprefix("Bearer ")
                answer = center.post(self.path, auth, body) if center.up else (503, None)
                status, payload = answer
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                return None

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def post(self, path: str, credential: str, body: Any) -> tuple[int, Any]:
        """The answer to a POST: none here (404); `LeaseCenter` answers the node routes."""
        return 404, {"error": {"code": "not_found", "message": path}}

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class LeaseCenter(StubCenter):
    """A `StubCenter` that also answers the node routes of replication as the center's
    contract has them (heartbeat, `/v1/nodes/leases`, `/v1/nodes/replicas/out-of-sync`):
    `assign` says who holds which vault (the leases are signed afresh at each renewal, as
    the center does), `nodes` maps credentials to node ids. Renewal bodies and out-of-sync
    reports are recorded; `out_of_sync_status` is what a report is answered with."""

    def __init__(self, key: SigningKey, nodes: dict[str, str]) -> None:
        super().__init__(key)
        self.nodes = nodes
        self.plans: dict[str, dict[str, Any]] = {}
        self.renewals: list[tuple[str, Any]] = []
        self.reports: list[Any] = []
        self.out_of_sync_status = 200
        self.lock = threading.Lock()

    def post(self, path: str, credential: str, body: Any) -> tuple[int, Any]:
        node = self.nodes.get(credential)
        if node is None:
            return 401, {"error": {"code": "unauthorized", "message": "unknown node"}}
        with self.lock:
            if path == "/v1/nodes/heartbeat":
                return 200, {"node": node, "placements": [], "revocation_seq": 1}
            if path == "/v1/nodes/leases":
                self.renewals.append((node, body))
                return 200, self.answer(node)
            if path == "/v1/nodes/replicas/out-of-sync":
                self.reports.append(body)
                return self.out_of_sync_status, {}
        return 404, {"error": {"code": "not_found", "message": path}}

    def assign(self, vault: str, **plan: Any) -> None:
        """Hold `vault` as `lease_answers(key, vault, **plan)` says from the next renewal on
        (and forget the renewals seen so far)."""
        with self.lock:
            self.plans[vault] = plan
            self.renewals.clear()

    def answer(self, node: str) -> dict[str, Any]:
        """What a renewal of `node` is answered with now: every vault assigned to it."""
        found: dict[str, Any] = {"ttl": 10, "renew": 1, "vaults": []}
        for vault, plan in self.plans.items():
            mine = lease_answers(self.key, vault, **plan).get(node)
            if mine is not None:
                found = {**mine, "vaults": found["vaults"] + mine["vaults"]}
        return found

    def renewed(self, node: str) -> int:
        with self.lock:
            return sum(1 for who, _ in self.renewals if who == node)


def lease_answers(
    key: SigningKey,
    vault: str,
    *,
    epoch: int,
    primary: tuple[str, str],
    replicas: Sequence[tuple[str, str]],
    ttl: int = 10,
    renew: float = 0.5,
    mode: str = "sync",
    in_sync: bool = True,
) -> dict[str, dict[str, Any]]:
    """What the center answers each node's renewal with for one vault: (node id, public
    URL) pairs; the primary gets a lease per replica signed by `key`."""
    now = int(time.time())
    listed = [
        {
            "node": node,
            "resource": f"{url}/mcp",
            "in_sync": in_sync,
            "lease": sign_lease(
                Lease(ISSUER, f"{url}/mcp", primary[0], vault, epoch, now, now + ttl), key
            ),
        }
        for node, url in replicas
    ]
    entry = {
        "vault": vault,
        "epoch": epoch,
        "mode": mode,
        "expires": (now + ttl) * 1000,
        "primary": {"node": primary[0], "resource": f"{primary[1]}/mcp"},
    }
    answers = {primary[0]: [{**entry, "role": "primary", "replicas": listed}]}
    for node, _url in replicas:
        answers[node] = [{**entry, "role": "replica", "replicas": []}]
    return {
        node: {"ttl": ttl, "renew": renew, "vaults": vaults} for node, vaults in answers.items()
    }


VOLATILE = ("modified", "last_modified", "score", "mtime", "content_hash", "updated", "when")


def steady(value: Any) -> Any:
    """An answer without what differs between two folders written at different moments."""
    if isinstance(value, dict):
        return {k: steady(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [steady(v) for v in value]
    return value
