"""The server `secondbrain-center serve` runs: uvicorn, with a drain before a SIGTERM stop.

Behind a proxy that health-checks several centers, a process that stops at once drops the
requests the proxy is still sending it (a POST that reached a closing connection is not
sent again: it may have run). With `shutdown_drain` set, SIGTERM first turns `/readyz` to
503 and keeps serving for that many seconds, so the proxy's next health check sends new
requests elsewhere; then the server stops as uvicorn does, finishing what is in flight.
A second signal, or SIGINT (Ctrl-C), stops at once.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from types import FrameType

import uvicorn

from center.log import get_logger

KEEP_ALIVE = 125
"""Seconds an idle client connection stays open: longer than a proxy keeps its idle
connections to us (Caddy 120, Traefik 90, nginx 60), so the proxy always closes first.
The other way round, a request the proxy sends over a connection we close at that very
moment is lost (a POST is not sent again: 502), which uvicorn's 5 s made likely."""


class DrainingServer(uvicorn.Server):
    """uvicorn's server; `on_drain` is called at the SIGTERM that starts a drain."""

    def __init__(self, config: uvicorn.Config, drain: float, on_drain: Callable[[], None]):
        super().__init__(config)
        self.drain = drain
        self.on_drain = on_drain
        self.drain_until: float | None = None

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if sig == signal.SIGTERM and self.drain > 0 and self.drain_until is None:
            self.drain_until = time.monotonic() + self.drain
            self._captured_signals.append(sig)  # ends as a stop by SIGTERM, as without a drain
            self.on_drain()
            get_logger().info("draining", seconds=self.drain)
            return
        super().handle_exit(sig, frame)

    async def on_tick(self, counter: int) -> bool:
        if self.drain_until is not None and time.monotonic() >= self.drain_until:
            self.should_exit = True
        return await super().on_tick(counter)
