"""A real node on 127.0.0.1 for the conformance runner, and a bearer-injecting proxy in front.

The runner has no option to send a token, and the node has no unauthenticated mode (nor
should it): the proxy adds `Authorization: Bearer <token>` to every request and forwards the
rest of it, Host and Origin included, and the answer, untouched (but for the offered
protocol version, see `BearerProxy`). Like a reverse proxy in a deployment, it is the
node's `public_url`: tokens name it, and its origin is the node's own.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tickets import SigningKey
from tickets import testing as tt
from vault_node.testing import SAMPLE_NOTES, free_port, mint, serving_node
from vault_node.testing import write_files as write_vault

READY_DEADLINE = 60.0
# Hop-by-hop headers (RFC 9110 §7.6.1) belong to one connection, not to the message.
HOP_BY_HOP = {b"connection", b"keep-alive", b"transfer-encoding", b"upgrade", b"te"}


@dataclass
class NodeServer:
    """A running node: where it listens, the URL clients know it by, and its token key."""

    base: str
    public_url: str
    key: SigningKey

    @property
    def url(self) -> str:
        return f"{self.base}/mcp"

    def token(self) -> str:
        return mint(self.key, "read write delete manage", audience=f"{self.public_url}/mcp")


@contextlib.contextmanager
def launch(root: Path, public_url: str) -> Iterator[NodeServer]:
    """`secondbrain serve` over the sample vault, offline keys, on a free loopback port."""
    key = tt.throwaway_key()
    write_vault(root / "data" / "default", SAMPLE_NOTES)
    # allowed_origins switches the Origin check on (empty: none, docs/design.md#mcp-transport); the
    # node's own origin, that of public_url, is always allowed.
    extra = f"watch: false\nallowed_origins: {public_url}\n"
    with serving_node(root, key, extra, public_url=public_url, deadline=READY_DEADLINE) as node:
        yield NodeServer(node.base, public_url, key)


class BearerProxy:
    """An ASGI app that forwards every request to `upstream` with the bearer token added.

    The runner's client always offers its newest protocol version, whatever scenarios
    `--spec-version` selects; with `offer` set, the proxy puts that version into the
    `initialize` request instead, so the node negotiates it and the whole run speaks it.
    `versions` records the `MCP-Protocol-Version` header of every request forwarded.
    """

    http: httpx.AsyncClient  # opened by the lifespan

    def __init__(self, upstream: str, token: str) -> None:
        self.upstream = upstream
        self.token = token
        self.offer: str | None = None
        self.versions: list[str | None] = []
        methods = ["GET", "POST", "DELETE", "PUT", "PATCH", "OPTIONS", "HEAD"]
        self.app = Starlette(
            routes=[Route("/{path:path}", self.forward, methods=methods)],
            lifespan=self.lifespan,
        )

    @contextlib.asynccontextmanager
    async def lifespan(self, _: Starlette) -> AsyncIterator[None]:
        async with httpx.AsyncClient(base_url=self.upstream, timeout=60) as http:
            self.http = http
            yield

    async def forward(self, request: Request) -> Response:
        self.versions.append(request.headers.get("mcp-protocol-version"))
        dropped = HOP_BY_HOP | {b"authorization", b"content-length"}
        headers = [(name, value) for name, value in request.headers.raw if name not in dropped]
        headers.append((b"authorization", f"Bearer {self.token}".encode()))
        sent = self.http.build_request(
            request.method,
            request.url.path,
            params=request.url.query,
            headers=headers,
            content=self.offered(await request.body()),
        )
        answer = await self.http.send(sent, stream=True)
        try:
            body = b"".join([chunk async for chunk in answer.aiter_raw()])
        finally:
            await answer.aclose()
        response = Response(body, status_code=answer.status_code)
        response.raw_headers = [
            (name, value)
            for name, value in answer.headers.raw
            if name.lower() not in HOP_BY_HOP and name.lower() != b"content-length"
        ] + [(b"content-length", str(len(body)).encode())]
        return response

    def offered(self, body: bytes) -> bytes:
        """`body` with `offer` as the protocol version if it is an `initialize` request."""
        if self.offer is None:
            return body
        try:
            message = json.loads(body)
        except ValueError:
            return body
        if not (isinstance(message, dict) and message.get("method") == "initialize"):
            return body
        if not isinstance(message.get("params"), dict):
            return body
        message["params"]["protocolVersion"] = self.offer
        return json.dumps(message).encode()


@contextlib.contextmanager
def serve_proxy(proxy: BearerProxy, port: int) -> Iterator[None]:
    """Run `proxy` under uvicorn on 127.0.0.1:`port` in a thread."""
    server = uvicorn.Server(
        uvicorn.Config(
            proxy.app,
            host="127.0.0.1",
            port=port,
            log_config=None,
            lifespan="on",
            server_header=False,  # the node's own Server and Date headers pass through
            date_header=False,
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + READY_DEADLINE
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            pytest.fail("the bearer proxy did not start")
        time.sleep(0.01)
    try:
        yield
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@pytest.fixture(scope="module")
def proxy_port() -> int:
    return free_port()


@pytest.fixture(scope="module")
def node_server(tmp_path_factory: pytest.TempPathFactory, proxy_port: int) -> Iterator[NodeServer]:
    public_url = f"http://127.0.0.1:{proxy_port}"
    with launch(tmp_path_factory.mktemp("node"), public_url) as server:
        yield server


@pytest.fixture(scope="module")
def proxy(node_server: NodeServer, proxy_port: int) -> Iterator[BearerProxy]:
    """The bearer proxy in front of the node, at the node's `public_url`."""
    running = BearerProxy(node_server.base, node_server.token())
    with serve_proxy(running, proxy_port):
        yield running


@pytest.fixture(scope="module")
def proxied_url(proxy: BearerProxy, node_server: NodeServer) -> str:
    """The node's MCP URL as the runner reaches it: through the bearer proxy."""
    return f"{node_server.public_url}/mcp"
