"""The limits on account attempts (docs/design.md#accounts): 60 a minute in all, and per identity 3
registrations or 10 login-or-verify attempts in 15 minutes.

They are kept in the database (`center.throttles`), so every center process sharing it
counts against the same windows, and they key on the identity asked for, never on a
client-supplied IP header. A refused attempt is RateLimitedError (429) with the seconds
until one is admitted again.
"""

from __future__ import annotations

import math
from typing import Literal

from center.errors import RateLimitedError
from center.store import Store
from center.throttles import Window, held

Kind = Literal["register", "login"]
"""`login` covers verification attempts too: both try a secret for an identity."""
EVERYONE, ALL = Window("attempts", 60, 60.0), "*"
PER_IDENTITY: dict[Kind, Window] = {
    "register": Window("attempts.register", 3, 900.0),
    "login": Window("attempts.login", 10, 900.0),
}
KEEP = max(window.period for window in (EVERYONE, *PER_IDENTITY.values()))


def _refuse(wait: float) -> None:
    if wait > 0:
        raise RateLimitedError(max(1, math.ceil(wait)))


class Attempts:
    """Admits or refuses one attempt against both the global and the identity's limit."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def admit(self, kind: Kind, identity: str) -> None:
        """Count the attempt, or raise RateLimitedError counting nothing."""
        own = PER_IDENTITY[kind]
        keys = [(EVERYONE.name, ALL), (own.name, identity)]
        async with held(self.store, keys, KEEP) as (now, (everyone, mine)):
            _refuse(max(EVERYONE.wait(everyone, now), own.wait(mine, now)))
            EVERYONE.hit(everyone, now)
            own.hit(mine, now)

    async def refuse_if_spent(self, kind: Kind, identity: str) -> None:
        """RateLimitedError when the identity's own window is full; counts nothing and
        leaves the global budget alone (sign-ins must neither spend nor be stopped by it)."""
        own = PER_IDENTITY[kind]
        async with held(self.store, [(own.name, identity)], KEEP) as (now, (mine,)):
            wait = own.wait(mine, now)
        _refuse(wait)

    async def count(self, kind: Kind, identity: str) -> None:
        """One attempt against the identity's own window only (a failed sign-in)."""
        own = PER_IDENTITY[kind]
        async with held(self.store, [(own.name, identity)], KEEP) as (now, (mine,)):
            own.hit(mine, now)
