"""Per-key rate limits: registrations per IP, failed logins per IP (spec §5.8).

A limit is a `tickets.Buckets`: `count` tokens refilled continuously over `window` seconds,
a key idle longer than ten minutes starting full again, at most 10,000 keys kept (the
least recently used goes first), so a flood of source addresses cannot grow memory.
"""

from __future__ import annotations

import math

from center.store import Clock
from tickets import Buckets
from tickets.buckets import MAX_KEYS


class RateLimiter:
    """`take(key)` spends one token; `give_back(key)` refunds one (a login that succeeded)."""

    def __init__(self, count: int, window: float, clock: Clock, max_keys: int = MAX_KEYS) -> None:
        self._buckets = Buckets(count, window, clock=clock, max_keys=max_keys)

    def take(self, key: str) -> int | None:
        """None if allowed (a token is spent), else the whole seconds until one is available."""
        wait = self._buckets.take(key)
        return max(1, math.ceil(wait)) if wait > 0 else None

    def give_back(self, key: str) -> None:
        self._buckets.give_back(key)
