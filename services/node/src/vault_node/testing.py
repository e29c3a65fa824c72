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
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx

from tickets import RevocationSnapshot, SigningKey, sign_snapshot
from tickets import testing as tt
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

            def log_message(self, *args: Any) -> None:
                return None

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
