"""Prometheus metrics (docs/design.md#metrics): off by default, a key and/or its own listener.

Labels come from small fixed sets only (tool names, outcomes, a fixed path list, vault
names); no metric carries a note path, a title, a tag or a user. Beyond the original server, tool
latency is a histogram per tool. Vault figures are read from the index at scrape time, and
so are the revocation feed's and the heartbeat's (their age, seq and counters).
"""

from __future__ import annotations

import hmac
import time
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import structlog
from fastapi import Request
from fastapi.responses import Response
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.concurrency import run_in_threadpool

from tickets import RevocationState
from vault_core import Library, VaultError
from vault_core.search import answers
from vault_node.ratelimit import Buckets, retry_after

if TYPE_CHECKING:
    from vault_node.config import NodeConfig
    from vault_node.feed import RevocationFeed
    from vault_node.heartbeat import Heartbeat

log = structlog.get_logger("vault_node")

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
SCRAPES_PER_MINUTE = 60
PATHS = ("/healthz", "/mcp", "/.well-known")
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
VAULT_GAUGES = (
    "notes",
    "words",
    "bytes",
    "tags",
    "links",
    "broken_links",
    "orphans",
    "open_tasks",
    "attachments",
)

ASGIApp = Callable[[MutableMapping[str, Any], Any, Any], Awaitable[None]]


class Metrics:
    """The node's own registry (never the global one: two apps in a process stay apart).

    What a scrape reads besides the counters comes from `figures`, at scrape time."""

    def __init__(self, figures: NodeFigures) -> None:
        self.registry = CollectorRegistry()
        self.scrapes = Buckets(SCRAPES_PER_MINUTE)
        r = self.registry
        self.tool_calls = Counter(
            "secondbrain_tool_calls",
            "Tool calls by outcome (ok, error, denied).",
            ["tool", "outcome"],
            registry=r,
        )
        self.tool_seconds = Histogram(
            "secondbrain_tool_duration_seconds",
            "Tool call latency.",
            ["tool"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.tool_bytes = Counter(
            "secondbrain_tool_result_bytes", "Bytes of tool results.", ["tool"], registry=r
        )
        self.http = Counter(
            "secondbrain_http_requests",
            "Requests on the main listener.",
            ["path", "status"],
            registry=r,
        )
        self.writes = Counter("secondbrain_writes", "Mutating calls that wrote.", registry=r)
        self.dry_runs = Counter(
            "secondbrain_dry_runs", "Mutating calls that were dry runs.", registry=r
        )
        self.truncated = Counter(
            "secondbrain_truncated_results", "Results cut at max_response_bytes.", registry=r
        )
        self.trash_purged = Counter("secondbrain_trash_purged", "Trash copies purged.", registry=r)
        r.register(figures)

    def tool(self, tool: str, outcome: str, seconds: float, size: int | None = None) -> None:
        self.tool_calls.labels(tool, outcome).inc()
        self.tool_seconds.labels(tool).observe(seconds)
        if size:
            self.tool_bytes.labels(tool).inc(size)

    def write(self, *, dry_run: bool, truncated: bool) -> None:
        (self.dry_runs if dry_run else self.writes).inc()
        if truncated:
            self.truncated.inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)


@dataclass(frozen=True, kw_only=True, eq=False)  # a registry keys its collectors by identity
class NodeFigures(Collector):
    """Build info, uptime and per-vault figures, read when Prometheus scrapes: `commit()`
    and `version` label the build, `library()` holds the vaults, `revocation` is the
    verifier's live state, `feed` the revocation feed and `heartbeat()` the heartbeat (None
    while there is none)."""

    version: str
    commit: Callable[[], str]
    library: Callable[[], Library]
    revocation: RevocationState
    feed: RevocationFeed | None
    heartbeat: Callable[[], Heartbeat | None]
    forwarded: Callable[[], dict[str, int]] = dict
    """Calls passed to other nodes by outcome (vault_node.forward)."""
    started: float = field(default_factory=time.monotonic)

    def collect(self) -> Iterator[Metric]:
        info = GaugeMetricFamily(
            "secondbrain_build_info", "Always 1; see the labels.", labels=["version", "commit"]
        )
        info.add_metric([self.version, self.commit()], 1)
        yield info
        yield GaugeMetricFamily(
            "secondbrain_uptime_seconds",
            "Seconds since start.",
            value=int(time.monotonic() - self.started),
        )
        yield from self._vaults()
        yield from self._revocation()
        yield from self._heartbeat()
        forwarded = CounterMetricFamily(
            "secondbrain_forwarded_calls",
            "Calls for vaults on other nodes by outcome (ok, refused, unavailable).",
            labels=["outcome"],
        )
        for outcome, count in self.forwarded().items():
            forwarded.add_metric([outcome], count)
        yield forwarded

    def _revocation(self) -> Iterator[Metric]:
        state = self.revocation
        if (age := state.age()) is not None:
            yield GaugeMetricFamily(
                "secondbrain_revocation_age_seconds",
                "Age of the revocation snapshot held (absent before the first).",
                value=age,
            )
            yield GaugeMetricFamily(
                "secondbrain_revocation_seq",
                "Seq of the revocation snapshot held.",
                value=state.seq,
            )
        if state.checkpoint is not None:
            yield GaugeMetricFamily(
                "secondbrain_audit_checkpoint_seq",
                "Seq of the highest audit checkpoint held.",
                value=state.checkpoint.seq,
            )
        yield GaugeMetricFamily(
            "secondbrain_audit_checkpoint_rollback",
            "1 once the center offered an older or different audit checkpoint (latched).",
            value=0 if state.checkpoint_alarm is None else 1,
        )
        feed = self.feed
        if feed is None:
            return
        polls = CounterMetricFamily(
            "secondbrain_revocation_polls",
            "Revocation polls by outcome (ok, fetch_failed, refused).",
            labels=["outcome"],
        )
        for outcome, count in feed.polls.items():
            polls.add_metric([outcome], count)
        yield polls
        yield CounterMetricFamily(
            "secondbrain_audit_checkpoint_rollbacks",
            "Audit checkpoint rollbacks detected (each offending checkpoint once).",
            value=feed.rollbacks,
        )

    def _heartbeat(self) -> Iterator[Metric]:
        beat = self.heartbeat()
        if beat is None:
            return
        sent = CounterMetricFamily(
            "secondbrain_heartbeats",
            "Heartbeats to the center by outcome (ok, failed).",
            labels=["outcome"],
        )
        for outcome, count in beat.sent.items():
            sent.add_metric([outcome], count)
        yield sent
        if (age := beat.age()) is not None:
            yield GaugeMetricFamily(
                "secondbrain_heartbeat_age_seconds",
                "Seconds since the last heartbeat the center accepted.",
                value=age,
            )

    def _vaults(self) -> Iterator[Metric]:
        families = {
            name: GaugeMetricFamily(f"secondbrain_vault_{name}", f"Vault {name}.", labels=["vault"])
            for name in VAULT_GAUGES
        }
        library = self.library()
        for vault in library.names():
            if (opened := library.ready(vault)) is None:
                continue  # still being opened: its gauges appear once it is
            try:
                stats = answers.stats(opened.index)
            except (VaultError, OSError, ValueError):
                continue  # one broken vault must not fail the whole scrape
            for name, family in families.items():
                family.add_metric([vault], float(stats[name]))
        yield from (family for family in families.values() if family.samples)


def path_label(path: str, metrics_path: str) -> str:
    """A request path as one of a fixed set: a path from the wire never becomes a label."""
    if path == metrics_path:
        return "metrics"
    for known in PATHS:
        if path == known or path.startswith(known + "/"):
            return known
    return "other"


class CountRequests:
    """ASGI middleware counting requests on the main listener by fixed path and status;
    `path` is the route the scrapes take, counted as `metrics`."""

    def __init__(self, app: ASGIApp, metrics: Metrics, path: str) -> None:
        self.app = app
        self.metrics = metrics
        self.path = path

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = [500]

        async def counting_send(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, counting_send)
        finally:
            label = path_label(scope["path"], self.path)
            self.metrics.http.labels(label, str(status[0])).inc()


def endpoint(
    metrics: Metrics, config: Callable[[], NodeConfig]
) -> Callable[[Request], Awaitable[Response]]:
    """The scrape route over `metrics`. `config()` is the config in force at each request:
    a reload may switch metrics off or change the key, and the next scrape obeys it."""

    async def scrape(request: Request) -> Response:
        """In order (docs/design.md#metrics): switch 404, method 405, rate limit 429, key 401."""
        running = config()
        if not running.metrics:
            return Response(status_code=404)
        if request.method not in ("GET", "HEAD"):
            return Response(status_code=405, headers={"Allow": "GET, HEAD"})
        client = request.client.host if request.client else "unknown"
        if (wait := metrics.scrapes.take(client)) > 0:
            return Response(status_code=429, headers={"Retry-After": retry_after(wait)})
        if running.metrics_key and not _key_matches(request, running.metrics_key):
            return Response(
                status_code=401, headers={"WWW-Authenticate": 'Bearer realm="secondbrain metrics"'}
            )
        body = await run_in_threadpool(metrics.render)
        headers = {"Cache-Control": "no-store", "Content-Type": CONTENT_TYPE}
        return Response(b"" if request.method == "HEAD" else body, headers=headers)

    return scrape


def _key_matches(request: Request, key: str) -> bool:
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    bearer = value.strip() if scheme.lower() == "bearer" else ""
    api_key = request.headers.get("x-api-key", "").strip()
    expected = key.encode()
    return any(
        hmac.compare_digest(given.encode(), expected) for given in (bearer, api_key) if given
    )
