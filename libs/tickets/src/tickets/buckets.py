"""Token buckets per key, shared by the node's call limits and the center's per-IP ones.

A bucket holds `capacity` tokens and refills continuously over `window` seconds. A bucket
idle longer than `idle` starts full again, and at most `max_keys` keys are kept (the least
recently seen goes first), so a flood of new keys cannot grow memory.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

IDLE = 600.0
MAX_KEYS = 10_000


@dataclass
class _Bucket:
    tokens: float
    seen: float
    last: int = 1  # the size of the key's last request
    refused: bool = False  # whether that request was refused


class Buckets:
    """One bucket per key: `take` spends, `give_back` refunds, `check` looks without spending.

    Each key remembers the size of its last request, so that `check`, which sees a request
    before its body, can tell how long the same request again must wait; after a refused
    one, it refuses (cheaply, and saying the same wait) until that many tokens are free.
    """

    def __init__(
        self,
        capacity: int,
        window: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        max_keys: int = MAX_KEYS,
        idle: float = IDLE,
    ) -> None:
        self.capacity = float(capacity)
        self.rate = capacity / window
        self.clock = clock
        self.max_keys = max_keys
        self.idle = idle
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()
        self._lock = threading.Lock()

    def check(self, key: str) -> float:
        """0.0 when a request may be read (nothing is taken), else the seconds until one of
        the size this key sent last would fit: while a refused one does not, or none does."""
        with self._lock:
            bucket = self._buckets.get(key)
            if bucket is None:
                return 0.0
            tokens = self._refilled(bucket, self.clock())
            if tokens >= (bucket.last if bucket.refused else 1):
                return 0.0
            return (max(1, bucket.last) - tokens) / self.rate

    def take(self, key: str, count: int = 1) -> float:
        """0.0 when `count` tokens were free (all of them are taken), else the seconds until
        they are (none is taken): all or nothing, so a batch never runs in part."""
        with self._lock:
            bucket = self._touch(key, self.clock())
            bucket.last = count
            bucket.refused = bucket.tokens < count
            if bucket.refused:
                return (count - bucket.tokens) / self.rate
            bucket.tokens -= count
            return 0.0

    def give_back(self, key: str, count: int = 1) -> None:
        """Refund `count` tokens (up to the capacity), e.g. for an attempt that succeeded."""
        with self._lock:
            bucket = self._touch(key, self.clock())
            bucket.tokens = min(self.capacity, bucket.tokens + count)

    def _refilled(self, bucket: _Bucket, now: float) -> float:
        if now - bucket.seen > self.idle:
            return self.capacity
        return min(self.capacity, bucket.tokens + (now - bucket.seen) * self.rate)

    def _touch(self, key: str, now: float) -> _Bucket:
        """The key's bucket refilled to `now`, made the most recently seen."""
        bucket = self._buckets.pop(key, None)
        if bucket is None or now - bucket.seen > self.idle:
            bucket = _Bucket(self.capacity, now)
        else:
            bucket.tokens, bucket.seen = self._refilled(bucket, now), now
        self._buckets[key] = bucket
        while len(self._buckets) > self.max_keys:
            self._buckets.popitem(last=False)
        return bucket

    def __len__(self) -> int:
        return len(self._buckets)
