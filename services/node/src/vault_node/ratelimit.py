"""Token buckets (docs/design.md#rate-limits): 600 calls a minute per principal on every `/mcp`
method, each message of a JSON-RPC batch counting as one call.

The buckets are `tickets.Buckets`: they refill continuously, one idle for 10 minutes starts
full again, and there are never more than 10,000 keys, so a flood of new keys cannot grow
memory.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import tickets
from tickets.buckets import MAX_KEYS


class Buckets(tickets.Buckets):
    """One bucket per key: `per_minute` tokens, refilled evenly over the minute."""

    def __init__(
        self,
        per_minute: int = 600,
        *,
        clock: Callable[[], float] = time.monotonic,
        max_keys: int = MAX_KEYS,
    ) -> None:
        super().__init__(per_minute, 60.0, clock=clock, max_keys=max_keys)


def retry_after(seconds: float) -> str:
    """The `Retry-After` value: whole seconds, at least 1."""
    return str(max(1, math.ceil(seconds)))
