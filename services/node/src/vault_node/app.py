"""The node's FastAPI application: `/mcp`, `/healthz`, protected-resource metadata.

`create_app` wires what the node holds (the vault library, the token verifier and its
revocation feed) into the routes; the lifespan opens and closes them and runs the
background jobs (revocation polling, the heartbeat to the center, trash purge).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import socket
import time
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import structlog
import uvicorn
from fastapi import FastAPI, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.routing import Route

from tickets import Verifier
from tickets.verify import canonical_resource
from vault_core import Identity, Library, Settings, rfc3339
from vault_core.ops import trash
from vault_core.search import embedding
from vault_node import auth, feed, metrics, replication, rpc
from vault_node.config import NodeConfig
from vault_node.directory import Directory
from vault_node.forward import Forwarder
from vault_node.heartbeat import Heartbeat
from vault_node.lease import Leases
from vault_node.metrics import Metrics, NodeFigures
from vault_node.placement import Placements, PlacingLibrary
from vault_node.ratelimit import Buckets
from vault_node.reload import Reloader
from vault_node.shipping import Replicator
from vault_node.verbs import VERBS

log = structlog.get_logger("vault_node")

TRASH_PURGE_INTERVAL = 3600.0
START_WAIT = 10.0
"""Seconds the node waits at start for its vaults to open before it listens anyway: a
vault of thousands of notes is ready within it; one still opening then (a first index of
100,000 notes takes a minute or more) goes on in the background, listed by vault_list and
answered with a `timeout` error that says to retry, while the other vaults serve."""


class Node:
    """What one running node holds, shared by every request."""

    def __init__(
        self,
        config: NodeConfig,
        library: Library | None,
        verifier: Verifier | None,
        config_path: Path | None = None,
    ) -> None:
        self.config = config
        self.feed: feed.RevocationFeed | None = None
        if verifier is None:
            verifier, self.feed = feed.build_verifier(config)
        self.verifier = verifier
        self.placements = Placements()
        self.directory = Directory()
        self.forwarder = Forwarder(self.directory)
        self.learned()
        self.heartbeat: Heartbeat | None = None
        self.leases: Leases | None = None
        self.replicator: Replicator | None = None
        if config.heartbeat:  # a center to hold leases: docs/design.md#replication-between-nodes
            self.leases = Leases(lambda: self.config, lambda: self.library)
            self.replicator = Replicator(self.leases, lambda: self.config)
            self.leases.on_renewed = self.replicator.catch_up
            self.leases.holding = self.replicator.holding
        self.buckets = Buckets(config.rate_limit)
        self.metrics = self._new_metrics() if config.metrics else None
        self._library = library
        self._owns_library = library is None
        self.started = dt.datetime.now(dt.UTC)
        self._clock = time.monotonic()
        self._jobs: list[asyncio.Task[None]] = []
        self.reloader: Reloader | None = None
        if config_path is not None:
            self.reloader = Reloader(config_path, lambda: self.config, self.apply_config)

    def _new_metrics(self) -> Metrics:
        return Metrics(
            NodeFigures(
                version=rpc.VERSION,
                commit=lambda: self.config.commit or "unknown",
                library=lambda: self.library,
                revocation=self.verifier.revocation,
                feed=self.feed,
                heartbeat=lambda: self.heartbeat,
                forwarded=lambda: dict(self.forwarder.counts),
            )
        )

    def _new_heartbeat(self) -> Heartbeat:
        return Heartbeat(
            self.config.center_url,
            config=lambda: self.config,
            revocation=self.verifier.revocation,
            vaults=self.library.names,
            placements=self.placements,
            poll=self.feed.poll_once if self.feed is not None else None,
            known=self.directory,
            learned=self.learned,
        )

    @property
    def deployment(self) -> str | None:
        """The deployment's one address: this node's `mcp_url`, else the center's."""
        return canonical_resource(self.config.mcp_url) or self.directory.deployment

    def learned(self) -> None:
        """Accept tokens for the one address once it is known (set, or told by the center)."""
        self.verifier.deployment = self.forwarder.deployment = self.deployment

    def holds(self, vault: str) -> bool:
        return vault in self.placements or vault in self.library.names()

    def is_primary(self, vault: str) -> bool:
        """Whether this node's lease makes it the primary of `vault` (it may know before
        its directory does, after a failover or a move)."""
        held = self.leases.get(vault) if self.leases is not None else None
        return held is not None and held.role == "primary"

    def resource_for(self, request: Request) -> str:
        """The MCP URL the client used: the one address when the request came by its host
        (docs/design.md#one-address), else this node's own."""
        deployment = self.deployment
        host = request.headers.get("host", "").lower()
        if deployment and host and _same_host(deployment, host):
            return deployment
        return self.config.resource

    def metadata_url(self, request: Request) -> str:
        resource = self.resource_for(request)
        if resource == self.config.resource:
            return self.config.metadata_url
        parts = urlsplit(resource)
        return f"{parts.scheme}://{parts.netloc}/.well-known/oauth-protected-resource"

    def apply_config(self, fresh: NodeConfig) -> None:
        """Swap in a reloaded config: the rate limit's buckets when it changed, the
        verifier's staleness settings, then the config every request reads."""
        if fresh.rate_limit != self.config.rate_limit:
            self.buckets = Buckets(fresh.rate_limit)
        self.verifier.max_stale = fresh.durations.max_stale
        self.verifier.read_when_stale = fresh.read_when_stale
        self.config = fresh
        self.learned()

    @property
    def library(self) -> Library:
        assert self._library is not None, "the node is not started"
        return self._library

    def open_library(self) -> Library:
        config = self.config
        settings = Settings(
            git=config.git,
            committer=Identity(config.git_author, config.git_email),
            git_remote=config.git_remote or None,
            git_token=config.git_token or None,
            watch=config.watch,
            embedder=embedding.shared(config.embedding),
            verbs=VERBS,
        )
        library = PlacingLibrary(
            config.data_dir, settings, config.default_vault, placements=self.placements
        ).open_all(background=True)
        if still := library.settle(START_WAIT):
            log.warning("vaults_opening", vaults=still, detail="they serve once opened")
        return library

    async def start(self) -> None:
        if self._library is None:
            self._library = await run_in_threadpool(self.open_library)
        await self.forwarder.start(self.config)
        if self.feed is not None:
            await run_in_threadpool(self.feed.restore)
            polled = await run_in_threadpool(self.feed.poll_once)
            if not polled and self.verifier.revocation.snapshot is None:
                log.error(
                    "revocation_unavailable",
                    detail="every token is refused until a revocation snapshot arrives",
                )
            self._jobs.append(asyncio.create_task(self.feed.run()))
        if self.config.heartbeat:
            self.heartbeat = self._new_heartbeat()
            self._jobs.append(asyncio.create_task(self.heartbeat.run()))
        if self.leases is not None:
            self._jobs.append(asyncio.create_task(self.leases.run()))
        self._jobs.append(asyncio.create_task(self._purge_trash_forever()))
        self._jobs.append(asyncio.create_task(self._find_vaults_forever()))
        if self.reloader is not None:
            self.reloader.on_sighup()
            self._jobs.append(asyncio.create_task(self.reloader.watch()))
        if self.metrics is not None and not (self.config.metrics_key or self.config.metrics_listen):
            log.warning(
                "metrics_unprotected",
                path=self.config.metrics_path,
                hint="set metrics_key, or serve metrics on metrics_listen",
            )
        log.info("startup", vaults=len(self.library.names()), resource=self.config.resource)

    async def stop(self) -> None:
        for job in self._jobs:
            job.cancel()
        for job in self._jobs:
            with contextlib.suppress(asyncio.CancelledError):
                await job
        if self.replicator is not None:
            self.replicator.close()
        await self.forwarder.stop()
        if self._owns_library and self._library is not None:
            await run_in_threadpool(self._library.close)
        log.info("shutdown")

    async def _purge_trash_forever(self) -> None:
        while True:
            await run_in_threadpool(self.purge_trash)
            await asyncio.sleep(TRASH_PURGE_INTERVAL)

    async def _find_vaults_forever(self) -> None:
        while True:
            await asyncio.sleep(self.config.durations.vault_scan_interval)
            await run_in_threadpool(self.find_vaults)

    def find_vaults(self) -> list[str]:
        """Open the vault folders added to `data_dir` since start (copied in, or made by
        `secondbrain vault create`) and tell the center at once; the names found."""
        found = self.library.open_new()
        if found:
            log.info("vaults_found", vaults=found)
            if self.heartbeat is not None:
                self.heartbeat.beat_once()
        return found

    def purge_trash(self, now: float | None = None) -> int:
        """Delete trash copies older than `trash_retention` in every vault; how many went."""
        cutoff = (time.time() if now is None else now) - self.config.durations.trash_retention
        library = self.library
        removed = sum(
            trash.purge(opened.vault.state_dir, cutoff)
            for name in library.names()
            if (opened := library.ready(name)) is not None
        )
        if removed:
            log.info("trash_purged", files=removed)
            if self.metrics is not None:
                self.metrics.trash_purged.inc(removed)
        return removed

    def health(self) -> dict[str, object]:
        state = self.verifier.revocation
        age = state.age()
        beat = self.heartbeat.age() if self.heartbeat is not None else None
        return {
            "status": "ok",
            "version": rpc.VERSION,
            "commit": self.config.commit or "unknown",
            "vaults": len(self.library.names()),
            "vaults_opening": len(self.library.opening()),  # a count: /healthz is public
            "started": rfc3339(self.started),
            "uptime_seconds": int(time.monotonic() - self._clock),
            "protocol_versions": list(rpc.SUPPORTED_VERSIONS),
            "revocation_age_seconds": None if age is None else round(age, 1),
            "revocation_seq": state.seq,
            "audit_checkpoint_seq": state.checkpoint.seq if state.checkpoint else None,
            "audit_checkpoint_rollback": feed.alarm_report(state),
            "heartbeat_age_seconds": None if beat is None else round(beat, 1),
            "stateless": True,
        }


def _same_host(url: str, host: str) -> bool:
    """Whether a `Host` header names the host of `url` (a default port written or not)."""
    parts = urlsplit(url)
    default = {"https": ":443", "http": ":80"}.get(parts.scheme, "")
    return host.removesuffix(default) == parts.netloc.removesuffix(default)


def create_app(
    config: NodeConfig,
    *,
    library: Library | None = None,
    verifier: Verifier | None = None,
    config_path: Path | None = None,
) -> FastAPI:
    """The node as an ASGI app. `config_path` enables reloads (SIGHUP, file change);
    pass `library`/`verifier` to share ready ones (tests)."""
    node = Node(config, library, verifier, config_path)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await node.start()
        try:
            yield
        finally:
            await node.stop()

    app = FastAPI(lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.node = node
    app.add_middleware(rpc.PostEndpoint)  # innermost: CORS and metrics still wrap it
    app.add_middleware(
        CORSMiddleware,
        allow_origins=config.allowed_origins or ["*"],
        allow_methods=["GET", "POST", "DELETE", "OPTIONS"],
        allow_headers=[
            "Authorization",
            "Content-Type",
            "MCP-Protocol-Version",
            "Mcp-Session-Id",
            "Last-Event-ID",
        ],
        expose_headers=["WWW-Authenticate", "MCP-Protocol-Version"],
        max_age=600,
    )
    app.include_router(rpc.router)
    app.include_router(replication.router)
    app.include_router(auth.metadata_router())
    if node.metrics is not None:
        app.add_middleware(metrics.CountRequests, metrics=node.metrics, path=config.metrics_path)
        if not config.metrics_listen:
            scrape = metrics.endpoint(node.metrics, lambda: node.config)
            app.router.add_route(config.metrics_path, scrape, include_in_schema=False)

    @app.get("/healthz", include_in_schema=False)
    async def healthz(request: Request) -> JSONResponse:
        return JSONResponse(node.health(), headers={"Cache-Control": "no-store"})

    return app


def create_metrics_app(node: Node) -> Starlette:
    """The second listener (docs/design.md#metrics-listener): the metrics path and `/healthz`."""

    async def healthz(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    assert node.metrics is not None, "metrics are off"
    scrape = metrics.endpoint(node.metrics, lambda: node.config)
    return Starlette(routes=[Route(node.config.metrics_path, scrape), Route("/healthz", healthz)])


async def serve_all(
    main: uvicorn.Server,
    side: uvicorn.Server | None = None,
    sockets: list[socket.socket] | None = None,
) -> None:
    """Run the main listener (on `sockets` when bound beforehand) and, if configured, the
    metrics listener until shutdown.

    A metrics listener that cannot bind is logged; the main listener keeps running.
    """

    async def serve_side(server: uvicorn.Server) -> None:
        try:
            await server.serve()
        except SystemExit:
            log.error("metrics_listener_failed")  # noqa: TRY400 — uvicorn logged the cause

    side_task = asyncio.create_task(serve_side(side)) if side is not None else None
    await main.serve(sockets=sockets)
    if side is not None and side_task is not None:
        side.should_exit = True
        await side_task
