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
    """One bucket per key: `per_minute` tokens, refilled evenly over the minute.

    Each key remembers the size of its last request, so that `check`, which sees a request
    before its body, can tell how long the same request again must wait; after a refused
    one, it refuses (cheaply, and saying the same wait) until that many calls are free."""

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
        # key → (tokens, last seen, size of the last request, whether it was refused)
        self._buckets: dict[str, tuple[float, float, int, bool]] = {}
        self._lock = threading.Lock()

    def check(self, key: str) -> float:
        """0.0 when a request may be read (nothing is taken), else the seconds until one of
        the size this key sent last would fit: while a refused one does not, or none does."""
        with self._lock:
            tokens, last, refused = self._refilled(key, self.clock())
            if tokens >= (last if refused else 1):
                return 0.0
            return (max(1, last) - tokens) / self.rate

    def take(self, key: str, count: int = 1) -> float:
        """0.0 when `count` calls may go ahead (all of them are taken), else the seconds until
        they may (none is taken): all or nothing, so a batch never runs in part."""
        now = self.clock()
        with self._lock:
            tokens, _, _ = self._refilled(key, now)
            if key not in self._buckets and len(self._buckets) >= self.max_keys:
                self._make_room(now)
            if tokens < count:
                self._buckets[key] = (tokens, now, count, True)
                return (count - tokens) / self.rate
            self._buckets[key] = (tokens - count, now, count, False)
            return 0.0

    def _refilled(self, key: str, now: float) -> tuple[float, int, bool]:
        tokens, seen, last, refused = self._buckets.get(key, (self.capacity, now, 1, False))
        return min(self.capacity, tokens + (now - seen) * self.rate), last, refused

    def _make_room(self, now: float) -> None:
        for key in [k for k, (_, seen, *_) in self._buckets.items() if now - seen > IDLE]:
            del self._buckets[key]
        while len(self._buckets) >= self.max_keys:
            oldest = min(self._buckets, key=lambda k: self._buckets[k][1])
            del self._buckets[oldest]

    def __len__(self) -> int:
        return len(self._buckets)


def retry_after(seconds: float) -> str:
    """The `Retry-After` value: whole seconds, at least 1."""
    return str(max(1, math.ceil(seconds)))
