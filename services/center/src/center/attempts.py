"""The limits seed 001 puts on account attempts: 60 a minute in all, and per identity 3
registrations or 10 login-or-verify attempts in 15 minutes.

They live in this process only (a restart resets them; several processes each count
their own) and key on the identity asked for, never on a client-supplied IP header. A
refused attempt is RateLimitedError (429) with the seconds until one is admitted again.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Literal

from center.errors import RateLimitedError

Kind = Literal["register", "login"]
"""`login` covers verification attempts too: both try a secret for an identity."""
GLOBAL = (60, 60.0)
PER_IDENTITY: dict[Kind, tuple[int, float]] = {"register": (3, 900.0), "login": (10, 900.0)}


class Window:
    """At most `limit` hits per key in any `period` seconds (a sliding log per key)."""

    def __init__(self, limit: int, period: float) -> None:
        self.limit = limit
        self.period = period
        self._hits: dict[str, deque[float]] = {}

    def wait(self, key: str, now: float) -> float:
        """Seconds until `key` may hit again (0: now)."""
        hits = self._recent(key, now)
        return 0.0 if len(hits) < self.limit else hits[0] + self.period - now

    def hit(self, key: str, now: float) -> None:
        self._recent(key, now).append(now)

    def _recent(self, key: str, now: float) -> deque[float]:
        hits = self._hits.setdefault(key, deque())
        while hits and hits[0] <= now - self.period:
            hits.popleft()
        return hits

    def forget_idle(self, now: float) -> None:
        """Drop keys with no hit inside the period, so memory follows recent traffic."""
        for key in [
            k for k, hits in self._hits.items() if not hits or hits[-1] <= now - self.period
        ]:
            del self._hits[key]


class Attempts:
    """Admits or refuses one attempt against both the global and the identity's limit."""

    def __init__(self) -> None:
        self.everyone = Window(*GLOBAL)
        self.identities = {kind: Window(*limits) for kind, limits in PER_IDENTITY.items()}
        self._last_sweep = 0.0

    def admit(self, kind: Kind, identity: str, now: float) -> None:
        """Count the attempt, or raise RateLimitedError counting nothing."""
        own = self.identities[kind]
        wait = max(self.everyone.wait("*", now), own.wait(identity, now))
        if wait > 0:
            raise RateLimitedError(max(1, math.ceil(wait)))
        self.everyone.hit("*", now)
        self.count(kind, identity, now)

    def refuse_if_spent(self, kind: Kind, identity: str, now: float) -> None:
        """RateLimitedError when the identity's own window is full; counts nothing and
        leaves the global budget alone (sign-ins must neither spend nor be stopped by it)."""
        wait = self.identities[kind].wait(identity, now)
        if wait > 0:
            raise RateLimitedError(max(1, math.ceil(wait)))

    def count(self, kind: Kind, identity: str, now: float) -> None:
        """One attempt against the identity's own window only (a failed sign-in)."""
        own = self.identities[kind]
        own.hit(identity, now)
        if now - self._last_sweep >= own.period:
            self._last_sweep = now
            for window in self.identities.values():
                window.forget_idle(now)
