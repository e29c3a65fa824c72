"""A real center and real nodes on loopback, each its own process, for end-to-end tests.

The center runs on SQLite under the test's folder; each node serves one vault `team`,
polls revocations every POLL seconds and answers MCP on its own port.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from vault_node.testing import free_port, stop, wait_ready

POLL = 0.5
MAX_STALE = 5
ADMIN = "e2e-admin-token-" + "a" * 32


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SECONDBRAIN_")}
    return {**env, **extra}


def python(module: str, *args: str) -> list[str]:
    return [sys.executable, "-c", f"from {module} import main; main()", *args]


@dataclass
class NodeProcess:
    name: str
    port: int
    root: Path
    credential: str
    read_when_stale: bool
    process: subprocess.Popen[bytes] | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.base}/mcp"

    @property
    def log(self) -> Path:
        return self.root / "node.log"


@dataclass
class Cluster:
    """The center and both nodes, each a subprocess; the center can stop and come back."""

    root: Path
    center_port: int
    secret: str
    nodes: list[NodeProcess] = field(default_factory=list)
    center: subprocess.Popen[bytes] | None = None
    http: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=30))

    @property
    def center_url(self) -> str:
        return f"http://127.0.0.1:{self.center_port}"

    def center_env(self) -> dict[str, str]:
        prefix = "SECONDBRAIN_CENTER_"
        return clean_env(
            **{
                f"{prefix}SECRET": self.secret,
                f"{prefix}ADMIN_TOKEN": ADMIN,
                f"{prefix}DATA_DIR": str(self.root / "center"),
                f"{prefix}ISSUER": self.center_url,
                f"{prefix}HOST": "127.0.0.1",
                f"{prefix}PORT": str(self.center_port),
                # Two nodes each with a vault `team` of its own, as before replication:
                # these tests follow tokens, not copies (replication has tests of its own).
                f"{prefix}REPLICATION_FACTOR": "1",
            }
        )

    def start_center(self) -> None:
        log = self.root / "center.log"
        with log.open("ab") as sink:
            self.center = subprocess.Popen(
                python("center.cli", "serve"),
                env=self.center_env(),
                stdout=sink,
                stderr=subprocess.STDOUT,
            )
        if problem := wait_ready(self.center_url, self.center, log, 60):
            pytest.fail(problem)

    def close(self) -> None:
        """Stop whatever of it still runs."""
        for node in self.nodes:
            if node.process is not None:
                self.stop_node(node)
        if self.center is not None:
            self.stop_center()
        self.http.close()

    def stop_center(self) -> None:
        assert self.center is not None
        stop(self.center)
        self.center = None

    def admin(self, method: str, path: str, body: Any = None, token: str = ADMIN) -> Any:
        answer = self.http.request(
            method,
            f"{self.center_url}{path}",
            json=body,
            headers={"Authorization": f"Bearer {token}"},
        )
        assert answer.is_success, (method, path, answer.status_code, answer.text)
        return answer.json()

    def add_node(self, name: str, *, read_when_stale: bool) -> NodeProcess:
        port = free_port()
        root = self.root / name
        (root / "data" / "team").mkdir(parents=True)
        body = {"id": name, "resource": f"http://127.0.0.1:{port}/mcp"}
        credential = self.admin("POST", "/v1/nodes", body)["credential"]
        node = NodeProcess(name, port, root, credential, read_when_stale)
        self.nodes.append(node)
        return node

    def start_node(self, node: NodeProcess) -> None:
        config = node.root / "node.yaml"
        config.write_text(
            f"public_url: {node.base}\nlisten: 127.0.0.1:{node.port}\n"
            f"data_dir: {node.root / 'data'}\ndefault_vault: team\nwatch: false\n"
            f"center_url: {self.center_url}\nnode_id: {node.name}\n"
            f"revocation_poll: {POLL}s\nmax_stale: {MAX_STALE}s\nheartbeat_interval: 1s\n"
            f"read_when_stale: {str(node.read_when_stale).lower()}\n"
        )
        with node.log.open("ab") as sink:
            node.process = subprocess.Popen(
                python("vault_node.cli", "serve", "--config", str(config)),
                env=clean_env(SECONDBRAIN_NODE_CREDENTIAL=node.credential),
                stdout=sink,
                stderr=subprocess.STDOUT,
            )
        if problem := wait_ready(node.base, node.process, node.log, 60):
            pytest.fail(problem)

    def stop_node(self, node: NodeProcess) -> None:
        assert node.process is not None
        stop(node.process)
        node.process = None

    def health(self, node: NodeProcess) -> dict[str, Any]:
        document: dict[str, Any] = self.http.get(f"{node.base}/healthz").json()
        return document

    def call(self, node: NodeProcess, token: str, probe: tuple[str, dict[str, Any]]) -> str:
        """`ok`, `refused` (401) or what else came back, for one tool call."""
        tool, arguments = probe
        message = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }
        answer = self.http.post(
            node.url, json=message, headers={"Authorization": f"Bearer {token}"}
        )
        if answer.status_code == 401:
            return "refused"
        if answer.status_code == 200 and answer.json()["result"]["isError"] is False:
            return "ok"
        return f"HTTP {answer.status_code}: {answer.text[:200]}"

    def member(self, member_id: str, role: str = "editor", scope: str = "read_write") -> str:
        body = {"id": member_id, "vaults": ["team"], "role": role, "scope": scope}
        credential: str = self.admin("POST", "/v1/members", body)["credential"]
        return credential

    def agent_token(self, credential: str) -> dict[str, Any]:
        body = {"resource": [n.url for n in self.nodes], "minutes": 60}
        minted: dict[str, Any] = self.admin("POST", "/v1/tokens", body, token=credential)
        return minted

    def logs(self) -> str:
        parts = [self.root / "center.log", *(n.log for n in self.nodes)]
        return "\n".join(f"--- {p.name}\n{p.read_text()[-3000:]}" for p in parts if p.exists())


@asynccontextmanager
async def mcp_session(url: str, token: str) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session
