"""Per-key token buckets: registrations per IP, failed logins per IP (spec §5.8).

A bucket holds `count` tokens and refills continuously over `window` seconds. Buckets
idle longer than ten minutes are dropped, and at most 10,000 keys are kept (the least
recently used goes first), so a flood of source addresses cannot grow memory.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass

from center.store import Clock

MAX_KEYS = 10_000
IDLE = 600.0


@dataclass
class _Bucket:
    tokens: float
    seen: float


class RateLimiter:
    """`take(key)` spends one token; `give_back(key)` refunds one (a login that succeeded)."""

    def __init__(self, count: int, window: float, clock: Clock, max_keys: int = MAX_KEYS) -> None:
        self.count = count
        self.rate = count / window
        self.clock = clock
        self.max_keys = max_keys
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()

    def _bucket(self, key: str, now: float) -> _Bucket:
        bucket = self._buckets.pop(key, None)
        if bucket is None or now - bucket.seen > IDLE:
            bucket = _Bucket(float(self.count), now)
        else:
            bucket.tokens = min(self.count, bucket.tokens + (now - bucket.seen) * self.rate)
            bucket.seen = now
        self._buckets[key] = bucket
        while len(self._buckets) > self.max_keys:
            self._buckets.popitem(last=False)
        return bucket

    def take(self, key: str) -> int | None:
        """None if allowed (a token is spent), else the seconds until one is available."""
        bucket = self._bucket(key, self.clock())
        if bucket.tokens >= 1:
            bucket.tokens -= 1
            return None
        return max(1, math.ceil((1 - bucket.tokens) / self.rate))

    def give_back(self, key: str) -> None:
        bucket = self._bucket(key, self.clock())
        bucket.tokens = min(self.count, bucket.tokens + 1)
