"""Token buckets (spec §5.8): 600 calls a minute per principal on every `/mcp` method,
each message of a JSON-RPC batch counting as one call.

Buckets refill continuously; one idle for 10 minutes is dropped when room is needed, and
there are never more than 10,000 keys, so a flood of new keys cannot grow memory.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

IDLE = 600.0
MAX_KEYS = 10_000


class Buckets:
    """One bucket per key: `per_minute` tokens, refilled evenly over the minute."""

    def __init__(
        self,
        per_minute: int = 600,
        *,
        clock: Callable[[], float] = time.monotonic,
        max_keys: int = MAX_KEYS,
    ) -> None:
        self.capacity = float(per_minute)
        self.rate = per_minute / 60.0
        self.clock = clock
        self.max_keys = max_keys
        self._buckets: dict[str, tuple[float, float]] = {}  # key → (tokens, last seen)
        self._lock = threading.Lock()

    def take(self, key: str, count: int = 1) -> float:
        """0.0 when `count` calls may go ahead (all of them are taken), else the seconds until
        they may (none is taken): all or nothing, so a batch never runs in part."""
        now = self.clock()
        with self._lock:
            tokens, seen = self._buckets.get(key, (self.capacity, now))
            tokens = min(self.capacity, tokens + (now - seen) * self.rate)
            if tokens < count:
                self._buckets[key] = (tokens, now)
                return (count - tokens) / self.rate
            if key not in self._buckets and len(self._buckets) >= self.max_keys:
                self._make_room(now)
            self._buckets[key] = (tokens - count, now)
            return 0.0

    def _make_room(self, now: float) -> None:
        for key in [k for k, (_, seen) in self._buckets.items() if now - seen > IDLE]:
            del self._buckets[key]
        while len(self._buckets) >= self.max_keys:
            oldest = min(self._buckets, key=lambda k: self._buckets[k][1])
            del self._buckets[oldest]

    def __len__(self) -> int:
        return len(self._buckets)


def retry_after(seconds: float) -> str:
    """The `Retry-After` value: whole seconds, at least 1."""
    return str(max(1, math.ceil(seconds)))
