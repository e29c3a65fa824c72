"""Real deployments on loopback: the center and nodes as `secondbrain-center serve` and
`secondbrain serve` subprocesses on ports chosen at start, driven over HTTP and with the
official MCP SDK client. Shared by the backup/restore, the reverse-proxy, the one-address
and the failover tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tickets import SigningKey
from vault_node.testing import free_port, stop, wait_ready

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
READY_DEADLINE = 60.0
POSTGRES = os.environ.get("SECONDBRAIN_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without any SECONDBRAIN_* setting, the venv's scripts on PATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SECONDBRAIN_")}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    return {**env, **extra}


@dataclass
class Service:
    """A server we started: its base URL, process and log file."""

    base: str
    process: subprocess.Popen[bytes]
    log: Path

    def stop(self) -> None:
        stop(self.process)


def spawn(module: str, args: list[str], env: dict[str, str], log: Path, base: str) -> Service:
    """Start `module`'s CLI main with `args`; wait until `<base>/healthz` answers."""
    command = [sys.executable, "-c", f"from {module} import main; main()", *args]
    with log.open("ab") as sink:
        process = subprocess.Popen(command, env=env, stdout=sink, stderr=subprocess.STDOUT)
    problem = wait_ready(base, process, log, READY_DEADLINE)
    if problem:
        stop(process)
        pytest.fail(problem)
    return Service(base, process, log)


@dataclass
class CenterSetup:
    """How to (re)start one center: its data dir, database, secrets and public URL."""

    data_dir: Path
    port: int = field(default_factory=free_port)
    issuer: str = ""
    database_url: str | None = None
    secret: str = field(default_factory=lambda: SigningKey.generate().export_secret())
    admin_token: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    mcp_url: str = ""
    """The deployment's one MCP address, if it has one."""
    settings: dict[str, str] = field(default_factory=dict)
    """More SECONDBRAIN_CENTER_<NAME> values, by NAME."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        values = {
            "SECONDBRAIN_CENTER_SECRET": self.secret,
            "SECONDBRAIN_CENTER_ADMIN_TOKEN": self.admin_token,
            "SECONDBRAIN_CENTER_DATA_DIR": str(self.data_dir),
            "SECONDBRAIN_CENTER_ISSUER": self.issuer or self.url,
            "SECONDBRAIN_CENTER_HOST": "127.0.0.1",
            "SECONDBRAIN_CENTER_PORT": str(self.port),
        }
        if self.database_url:
            values["SECONDBRAIN_CENTER_DATABASE_URL"] = self.database_url
        if self.mcp_url:
            values["SECONDBRAIN_CENTER_MCP_URL"] = self.mcp_url
        values.update({f"SECONDBRAIN_CENTER_{k.upper()}": v for k, v in self.settings.items()})
        return clean_env(**values)

    def start(self, log: Path) -> Service:
        return spawn("center.cli", ["serve"], self.env(), log, self.url)

    def admin(self, method: str, path: str, body: Any = None, token: str | None = None) -> Any:
        """One call to the center as the operator (or with `token`); the JSON answer."""
        answer = httpx.request(
            method,
            f"{self.url}{path}",
            json=body,
            headers={"Authorization": f"Bearer {token or self.admin_token}"},
            timeout=30,
        )
        assert answer.status_code < 300, (path, answer.status_code, answer.text)
        return answer.json() if answer.content else None


def write_node_config(path: Path, **settings: Any) -> Path:
    """A node YAML file from `settings` (no secrets in it)."""
    path.write_text("".join(f"{key}: {value}\n" for key, value in settings.items()))
    return path


def start_node(config: Path, base: str, log: Path, env: dict[str, str] | None = None) -> Service:
    return spawn(
        "vault_node.cli", ["serve", "--config", str(config)], env or clean_env(), log, base
    )


def wait_for_snapshot(base: str, deadline: float = READY_DEADLINE) -> None:
    """A node refuses every token until it holds a revocation snapshot: wait for one."""
    until = time.monotonic() + deadline
    while time.monotonic() < until:
        health = httpx.get(f"{base}/healthz", timeout=5).json()
        if health.get("revocation_age_seconds") is not None:
            return
        time.sleep(0.1)
    pytest.fail(f"{base} never got a revocation snapshot")


@contextlib.asynccontextmanager
async def mcp_session(
    url: str, token: str, verify: ssl.SSLContext | bool = True
) -> AsyncIterator[ClientSession]:
    """The official MCP SDK client, initialized, with a bearer token."""
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60, verify=verify) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def member_token(
    center: CenterSetup, member: str, member_vaults: list[str], **ask: Any
) -> dict[str, Any]:
    """A new editor `member` of `member_vaults` and a token minted with its credential
    (`ask`: more fields of `POST /v1/tokens`); the center's answer."""
    made = center.admin(
        "POST",
        "/v1/members",
        {"id": member, "vaults": member_vaults, "role": "editor", "scope": "read_write"},
    )
    minted: dict[str, Any] = center.admin(
        "POST", "/v1/tokens", {"minutes": 30, **ask}, token=made["credential"]
    )
    return minted


def rpc(http: httpx.Client, url: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One `tools/call` as a plain JSON-RPC POST; its result (which may be an error)."""
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    answer = http.post(url, json=message)
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()["result"]
    return result


def names(result: dict[str, Any]) -> list[str]:
    """The vault names of a `vault_list` result."""
    return sorted(row["name"] for row in result["structuredContent"]["vaults"])


def error_code(result: dict[str, Any]) -> str:
    """The error code of a tool result that failed."""
    assert result["isError"] is True, result
    code: str = result["_meta"]["secondbrain/error"]["code"]
    return code


def prepare_deployment_node(
    root: Path,
    center: CenterSetup,
    node: str,
    upstream: tuple[str, int],
    vaults: tuple[str, ...],
    center_url: str = "",
) -> Path:
    """Register node `node` of a deployment with the center under its own URL (`upstream`,
    where it listens), give it empty folders for `vaults` and write its configuration: 1 s
    heartbeats, the center reached at `center_url` (default: the center's URL). Its YAML
    file; done once, a second call changes nothing."""
    host, port = upstream
    base = f"http://{host}:{port}"
    config = root / node / "node.yaml"
    if config.exists():
        return config
    registered = center.admin("POST", "/v1/nodes", {"id": node, "resource": f"{base}/mcp"})
    for vault in vaults:
        (root / node / "vaults" / vault).mkdir(parents=True)
    write_node_config(
        config,
        public_url=base,
        listen=f"{host}:{port}",
        data_dir=root / node / "vaults",
        default_vault=vaults[0],
        center_url=center_url or center.url,
        issuer=center.issuer,
        node_id=node,
        node_credential="env:NODE_CREDENTIAL",
        heartbeat_interval="1s",
        revocation_poll="1s",
        watch="false",
    )
    (root / node / "credential").write_text(registered["credential"])
    return config


def start_deployment_node(
    root: Path,
    center: CenterSetup,
    node: str,
    upstream: tuple[str, int],
    vaults: tuple[str, ...],
    center_url: str = "",
) -> Service:
    """Node `node` of a deployment (prepared first if it is not yet), started; returns once
    it holds a revocation snapshot."""
    config = prepare_deployment_node(root, center, node, upstream, vaults, center_url)
    base = f"http://{upstream[0]}:{upstream[1]}"
    env = clean_env(NODE_CREDENTIAL=(root / node / "credential").read_text())
    service = start_node(config, base, root / node / "node.log", env)
    wait_for_snapshot(base)
    return service


RETRIED = frozenset({"failing_over", "unavailable", "not_primary", "misdirected"})
"""What a caller is told that it retries: the vault is between primaries."""


async def call(
    session: ClientSession, tool: str, arguments: dict[str, Any], *, settling: float = 0.0
) -> dict[str, Any]:
    """The tool's structured result; for up to `settling` seconds, a call answered with a
    RETRIED code is made again a second later (a test after one that stopped a center or a
    node may find a vault's lease settling)."""
    end = time.monotonic() + settling
    while True:
        result = await session.call_tool(tool, arguments)
        code = (result.meta or {}).get("secondbrain/error", {}).get("code")
        if not (result.is_error and code in RETRIED and time.monotonic() < end):
            break
        await asyncio.sleep(1)
    assert not result.is_error, (tool, result.content)
    assert result.structured_content is not None
    return result.structured_content


async def create_note(
    session: ClientSession, arguments: dict[str, Any], *, settling: float
) -> None:
    """note_create made the way a careful client makes it while a vault may be failing over:
    a `failing_over` answer may have been applied (errors.FailingOverError), so a retry told
    the note exists reads it and accepts it when it holds the content sent."""
    end = time.monotonic() + settling
    uncertain = False
    while True:
        result = await session.call_tool("note_create", arguments)
        code = (result.meta or {}).get("secondbrain/error", {}).get("code")
        if not result.is_error:
            return
        if code == "exists" and uncertain:
            where = {"vault": arguments["vault"], "path": arguments["path"]}
            read = await call(session, "note_read", where, settling=settling)
            assert arguments["content"].strip() in read["content"], read
            return
        assert code in RETRIED, ("note_create", result.content)
        assert time.monotonic() < end, ("note_create", "still settling", result.content)
        uncertain = uncertain or code == "failing_over"
        await asyncio.sleep(1)


async def _admin_sql(url: str, statement: str) -> None:
    connection = await asyncpg.connect(url, timeout=10)
    try:
        await connection.execute(statement)
    finally:
        await connection.close()


@contextlib.contextmanager
def postgres_database() -> Iterator[str]:
    """A fresh, empty PostgreSQL database for one test (dropped afterwards); its URL."""
    name = f"sb_deploy_{secrets.token_hex(6)}"
    try:
        asyncio.run(_admin_sql(POSTGRES, f'CREATE DATABASE "{name}"'))
    except (OSError, asyncpg.PostgresError, TimeoutError):
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL is not reachable; .ci/run should have started it")
        pytest.skip("PostgreSQL is not reachable; set SECONDBRAIN_TEST_POSTGRES")
    try:
        yield POSTGRES.rsplit("/", 1)[0] + "/" + name
    finally:
        asyncio.run(_admin_sql(POSTGRES, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


async def recreate_database(url: str) -> None:
    """Drop and create the database of `url` again: an empty one under the same name."""
    name = url.rsplit("/", 1)[1]
    await _admin_sql(POSTGRES, f'DROP DATABASE "{name}" WITH (FORCE)')
    await _admin_sql(POSTGRES, f'CREATE DATABASE "{name}"')


@pytest.fixture(scope="module")
def localhost_names() -> Iterator[None]:
    """Resolve `*.localhost` to 127.0.0.1 in this process (RFC 6761 says it is loopback;
    not every machine's resolver does it); TLS still checks each name."""
    real = socket.getaddrinfo

    def resolve(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else host
        if isinstance(name, str) and name.endswith(".localhost"):
            return real("127.0.0.1", *args, **kwargs)
        return real(host, *args, **kwargs)

    patch = pytest.MonkeyPatch()
    patch.setattr(socket, "getaddrinfo", resolve)
    try:
        yield
    finally:
        patch.undo()
