"""Several center processes on one PostgreSQL database, as a scaled-out deployment runs
them, for the cross-replica tests and the load benchmark: each replica a real
`secondbrain-center serve` on its own loopback port, a client transport that sends each
request to the next replica in turn, and a TCP relay in front of the database that can
be cut and restored (the database "restarting" without stopping a shared server).

For tests and benchmarks only.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from center import testing as t

START_DEADLINE = 60.0
ISSUER = "http://127.0.0.1:2021"
"""The fleet's one public URL (http on loopback, so console cookies are not `Secure`)."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def _admin(url: str, statement: str) -> None:
    engine = create_async_engine(url, isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as connection:
            await connection.execute(text(statement))
    finally:
        await engine.dispose()


@contextlib.contextmanager
def fresh_schema(postgres: str) -> Iterator[tuple[str, str]]:
    """(asyncpg URL, schema): a new schema in the database at `postgres` (a
    `postgresql://` URL), dropped with everything in it at the end."""
    schema = f"r_{secrets.token_hex(6)}"
    url = postgres.replace("postgresql://", "postgresql+asyncpg://", 1)
    asyncio.run(_admin(url, f"CREATE SCHEMA {schema}"))
    try:
        yield url, schema
    finally:
        asyncio.run(_admin(url, f"DROP SCHEMA {schema} CASCADE"))


def center_env(database_url: str, schema: str | None, **settings: str) -> dict[str, str]:
    """The environment of a center on `database_url` (asyncpg form) and `schema`, with the
    test secret and admin token; `settings` adds SECONDBRAIN_CENTER_<NAME> values."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SECONDBRAIN_")}
    values = {
        "SECRET": t.SECRET,
        "ADMIN_TOKEN": t.ADMIN_TOKEN,
        "DATABASE_URL": database_url,
        "ISSUER": ISSUER,
        "OAUTH_RESOURCES": json.dumps([t.RESOURCE]),
        "LOG_LEVEL": "warning",
        **({"DATABASE_SCHEMA": schema} if schema else {}),
        **{name.upper(): value for name, value in settings.items()},
    }
    return {**env, **{f"SECONDBRAIN_CENTER_{name}": value for name, value in values.items()}}


def run_cli(env: Mapping[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """`secondbrain-center ARGS` as a subprocess, its output captured."""
    command = [sys.executable, "-m", "center.cli", *args]
    return subprocess.run(  # noqa: S603 — our own interpreter and module, no shell
        command, check=False, env=dict(env), capture_output=True, text=True, timeout=120
    )


@dataclass
class Replica:
    """One `secondbrain-center serve` process; it can be stopped, killed and started."""

    env: dict[str, str]
    folder: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log(self) -> Path:
        return self.folder / f"center-{self.port}.log"

    def start(self, wait: bool = True, **settings: str) -> Replica:
        """Start it (with `settings` changed from its environment), ready when it returns."""
        for name, value in settings.items():
            self.env[f"SECONDBRAIN_CENTER_{name.upper()}"] = value
        self.env["SECONDBRAIN_CENTER_PORT"] = str(self.port)
        self.env["SECONDBRAIN_CENTER_DATA_DIR"] = str(self.folder / f"data-{self.port}")
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "center.cli", "serve"],
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        if wait:
            self.wait_ready()
        return self

    def wait_ready(self, deadline: float = START_DEADLINE) -> None:
        assert self.process is not None
        until = time.monotonic() + deadline
        while time.monotonic() < until:
            if self.process.poll() is not None:
                raise RuntimeError(f"center exited {self.process.returncode}: {self.output()}")
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{self.url}/readyz", timeout=2).status_code == 200:
                    return
            time.sleep(0.05)
        raise RuntimeError(f"center not ready within {deadline} s: {self.output()}")

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-4000:] if self.log.exists() else ""

    def stop(self, grace: float = 20.0) -> None:
        """SIGTERM, as a rolling restart does; SIGKILL if it lingers."""
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None

    def kill(self) -> None:
        """SIGKILL: the replica dies mid-request, as a crashed machine would."""
        if self.process is not None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()
            self.process = None


@contextlib.contextmanager
def replicas(env: Mapping[str, str], folder: Path, count: int) -> Iterator[list[Replica]]:
    """`count` replicas on one database, started together (they race their start-up,
    which must be safe), stopped at the end."""
    started = [Replica(dict(env), folder) for _ in range(count)]
    try:
        for replica in started:
            replica.start(wait=False)
        for replica in started:
            replica.wait_ready()
        yield started
    finally:
        for replica in started:
            replica.stop()


@contextlib.contextmanager
def caddy(replicas: list[Replica], folder: Path) -> Iterator[str]:
    """Caddy on a loopback port in front of `replicas`: random choice, `/readyz` health
    checks every second, a request that reached no replica tried on another for 5 s.
    Caddy reaches them from 127.0.0.1 and sends the client's address in X-Forwarded-For."""
    caddy_bin = shutil.which("caddy")
    if caddy_bin is None:
        raise RuntimeError("caddy is not installed: apt-get install caddy")
    port = free_port()
    upstreams = " ".join(f"127.0.0.1:{replica.port}" for replica in replicas)
    config = folder / f"Caddyfile-{port}"
    config.write_text(
        "{\n\tadmin off\n\tauto_https off\n}\n"
        f"http://127.0.0.1:{port} {{\n\treverse_proxy {upstreams} {{\n"
        "\t\tlb_policy random\n\t\tlb_try_duration 5s\n\t\tlb_try_interval 100ms\n"
        "\t\thealth_uri /readyz\n\t\thealth_interval 1s\n\t\thealth_timeout 3s\n"
        "\t\tfail_duration 2s\n\t}\n}\n"
    )
    url = f"http://127.0.0.1:{port}"
    with (folder / f"caddy-{port}.log").open("wb") as log:
        process = subprocess.Popen(  # noqa: S603 — the installed caddy, our own config
            [caddy_bin, "run", "--config", str(config), "--adapter", "caddyfile"],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            _wait_for(f"{url}/readyz", process)
            yield url
        finally:
            process.terminate()
            process.wait(timeout=10)


def _wait_for(url: str, process: subprocess.Popen[bytes], deadline: float = 30.0) -> None:
    until = time.monotonic() + deadline
    while time.monotonic() < until and process.poll() is None:
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(url, timeout=2).status_code == 200:
                return
        time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer 200 within {deadline} s")


class RoundRobin(httpx.AsyncBaseTransport):
    """Sends each request to the next live replica in turn, so consecutive steps of one
    flow (a form shown, then posted) land on different processes; `served` records the
    port that answered each request."""

    def __init__(self, fleet: list[Replica]) -> None:
        self.fleet = fleet
        self.turn = itertools.count()
        self.served: list[int] = []
        self.inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        live = [replica for replica in self.fleet if replica.process is not None]
        replica = live[next(self.turn) % len(live)]
        request.url = request.url.copy_with(host="127.0.0.1", port=replica.port)
        self.served.append(replica.port)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def spread(fleet: list[Replica]) -> httpx.AsyncClient:
    """A client (one cookie jar) whose requests go round the replicas."""
    return httpx.AsyncClient(transport=RoundRobin(fleet), base_url=ISSUER, timeout=60)


class Relay:
    """A TCP relay to `target` on a loopback port of its own, run in a thread: `cut()`
    drops every connection and refuses new ones, as a database that went away; `restore()`
    listens again on the same port."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.port = free_port()
        self.loop = asyncio.new_event_loop()
        self.server: asyncio.Server | None = None
        self.writers: set[asyncio.StreamWriter] = set()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.restore()

    def _call(self, coro: object) -> None:
        asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=30)  # type: ignore[arg-type]

    def restore(self) -> None:
        async def listen() -> None:
            self.server = await asyncio.start_server(
                self._pair, "127.0.0.1", self.port, reuse_address=True
            )

        self._call(listen())

    def cut(self) -> None:
        async def drop() -> None:
            if self.server is not None:
                self.server.close()
                self.server = None
            for writer in list(self.writers):
                writer.transport.abort()
            self.writers.clear()

        self._call(drop())

    def close(self) -> None:
        self.cut()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.loop.close()

    async def _pair(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        self.writers.update((writer, upstream_writer))
        await asyncio.gather(
            self._pump(reader, upstream_writer), self._pump(upstream_reader, writer)
        )

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except OSError:
            pass
        finally:
            self.writers.discard(writer)
            writer.transport.abort()
