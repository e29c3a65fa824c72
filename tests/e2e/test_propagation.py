"""Revocation reaching every node: a real center and two real nodes on loopback (each its
own process), polling every 0.5 s. A revoked grant, a member's bumped generation, a removed
member and a revoked key are refused on both nodes; a rotated key's tokens are accepted.
With the center stopped the nodes keep serving reads as configured, refuse writes after
`max_stale`, survive a restart from their persisted snapshot, and recover when it returns.

Refusals are awaited by polling with a generous deadline (many poll intervals): the test
asserts what the nodes do, never how fast; bench/bench_propagation.py measures the lag.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tickets import SigningKey
from vault_node.testing import free_port, stop, wait_ready

pytestmark = pytest.mark.slow

POLL = 0.5
MAX_STALE = 5
DEADLINE = 60 * POLL + 30  # sixty poll intervals, plus room for a loaded machine
ADMIN = "e2e-admin-token-" + "a" * 32
READ = ("vault_stats", {})
WRITE = ("inbox_capture", {"text": "propagation probe"})


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


def wait_for(cluster: Cluster, condition: Callable[[], bool], what: str) -> float:
    """Poll `condition` until it holds; seconds it took. Fails after DEADLINE."""
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > DEADLINE:
            pytest.fail(f"{what}: not within {DEADLINE:.0f} s\n{cluster.logs()}")
        time.sleep(0.05)
    return time.monotonic() - started


def everywhere(cluster: Cluster, token: str, outcome: str, probe: Any = READ) -> Callable[[], bool]:
    return lambda: all(cluster.call(n, token, probe) == outcome for n in cluster.nodes)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("propagation")
    running = Cluster(root, free_port(), SigningKey.generate().export_secret())
    running.start_center()
    try:
        running.add_node("node-a", read_when_stale=True)
        running.add_node("node-b", read_when_stale=False)
        for node in running.nodes:
            running.start_node(node)
        yield running
    finally:
        for node in running.nodes:
            if node.process is not None:
                running.stop_node(node)
        if running.center is not None:
            running.stop_center()
        running.http.close()


def revoked(cluster: Cluster, token: str, revoke: Callable[[], object], what: str) -> None:
    """`token` works on both nodes, `revoke` runs, and both nodes refuse it."""
    assert [cluster.call(n, token, READ) for n in cluster.nodes] == ["ok", "ok"], what
    revoke()
    wait_for(cluster, everywhere(cluster, token, "refused"), f"{what} refused on both nodes")


def test_revocations_reach_both_nodes(cluster: Cluster) -> None:
    grant = cluster.admin(
        "POST",
        "/v1/grants",
        {
            "vault": "team",
            "scope": "read_write",
            "minutes": 30,
            "grantee": None,
            "resource": [n.url for n in cluster.nodes],
        },
    )
    revoked(
        cluster,
        grant["token"],
        lambda: cluster.admin("DELETE", f"/v1/grants/{grant['id']}"),
        "a revoked grant",
    )

    bumped = cluster.agent_token(cluster.member("bob"))["token"]
    revoked(
        cluster,
        bumped,
        lambda: cluster.admin("PATCH", "/v1/members/bob", {"scope": "read"}),
        "a token from before a generation bump",
    )

    removed = cluster.agent_token(cluster.member("carol"))["token"]
    revoked(
        cluster,
        removed,
        lambda: cluster.admin("DELETE", "/v1/members/carol"),
        "a removed member's token",
    )
    fresh = cluster.agent_token(cluster.member("dave"))["token"]
    assert [cluster.call(n, fresh, WRITE) for n in cluster.nodes] == ["ok", "ok"]


def test_a_rotated_key_is_learned_and_a_revoked_key_refused(cluster: Cluster) -> None:
    credential = cluster.member("erin")
    old = cluster.agent_token(credential)["token"]
    old_kid = SigningKey.from_secret(cluster.secret).kid
    cluster.stop_center()
    cluster.secret = SigningKey.generate().export_secret()
    cluster.start_center()
    new = cluster.agent_token(credential)["token"]
    wait_for(cluster, everywhere(cluster, new, "ok"), "a token of the new key accepted")
    assert [cluster.call(n, old, READ) for n in cluster.nodes] == ["ok", "ok"]  # retired
    revoke = subprocess.run(
        [*python("center.cli", "key", "revoke", old_kid, "--reason", "e2e"), "--json"],
        env=clean_env(
            SECONDBRAIN_CENTER_URL=cluster.center_url, SECONDBRAIN_CENTER_ADMIN_TOKEN=ADMIN
        ),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert revoke.returncode == 0, revoke.stdout + revoke.stderr
    answer = json.loads(revoke.stdout)
    assert (answer["kid"], answer["revoked"]) == (old_kid, True)
    wait_for(cluster, everywhere(cluster, old, "refused"), "the revoked key's token refused")
    assert [cluster.call(n, new, READ) for n in cluster.nodes] == ["ok", "ok"]
    wait_for(
        cluster,
        lambda: all(
            cluster.health(n)["revocation_seq"] >= answer["revocation_seq"] for n in cluster.nodes
        ),
        "both nodes at the seq the revocation answered",
    )


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


async def sdk_read(url: str, token: str) -> dict[str, Any]:
    async with mcp_session(url, token) as session:
        result = await session.call_tool("vault_stats", {})
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


@pytest.mark.asyncio
async def test_nodes_outlive_the_center_and_restart_from_their_snapshot(
    cluster: Cluster,
) -> None:
    a, b = cluster.nodes
    credential = cluster.member("frank")
    token = cluster.agent_token(credential)["token"]
    doomed = cluster.agent_token(credential)
    revoked(
        cluster,
        doomed["token"],
        lambda: cluster.admin("DELETE", f"/v1/tokens/{doomed['jti']}", token=credential),
        "a revoked agent token",
    )
    assert [cluster.call(n, token, WRITE) for n in cluster.nodes] == ["ok", "ok"]
    seq = cluster.health(a)["revocation_seq"]

    cluster.stop_center()
    wait_for(cluster, everywhere(cluster, token, "refused", WRITE), "writes refused when stale")
    assert cluster.call(a, token, READ) == "ok"  # read_when_stale: true
    assert cluster.call(b, token, READ) == "refused"  # read_when_stale: false
    assert (await sdk_read(a.url, token))["stats"]["notes"] >= 1
    assert cluster.health(a)["revocation_age_seconds"] > MAX_STALE

    cluster.stop_node(a)
    cluster.start_node(a)  # the center is still down
    health = cluster.health(a)
    assert health["revocation_seq"] == seq
    assert (await sdk_read(a.url, token))["stats"]["notes"] >= 1
    assert cluster.call(a, token, WRITE) == "refused"
    assert cluster.call(a, doomed["token"], READ) == "refused"
    assert "revocation_restored" in a.log.read_text()

    cluster.start_center()
    wait_for(cluster, everywhere(cluster, token, "ok", WRITE), "writes accepted again")
    assert cluster.call(a, doomed["token"], READ) == "refused"
    center_seq = cluster.http.get(f"{cluster.center_url}/v1/revocations").json()["seq"]

    def reported() -> bool:
        listed = cluster.admin("GET", "/v1/nodes")["nodes"]
        return all(
            n["revocation_seq"] == center_seq and n["checkpoint_ok"] is True and n["vaults"]
            for n in listed
        )

    wait_for(cluster, reported, "both nodes' heartbeats at the center's seq")
    vaults = cluster.admin("GET", "/v1/vaults")["vaults"]
    assert [(v["name"], v["mcp_url"] in {a.url, b.url}) for v in vaults] == [("team", True)]
