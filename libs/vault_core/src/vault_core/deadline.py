"""The per-call deadline: long work looks at it and stops, since a thread cannot be killed.

The node runs each tool handler under a `Limit`; SQLite statements on reader
connections see it through a progress handler (`interruptible`), and loops over
notes through `check` or `checked`. Work without a limit (the watcher, the CLI)
is never stopped. Only reads are stopped: a write, once begun, runs to its end.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from typing import TypeVar

from vault_core.errors import DeadlineError

T = TypeVar("T")

PROGRESS_STEPS = 1000
"""SQLite virtual-machine steps between two looks at the clock: a few microseconds of work."""


class Limit:
    """A deadline `seconds` from its creation (the node creates it when a call arrives)."""

    __slots__ = ("at", "seconds")

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.at = time.monotonic() + seconds

    @property
    def passed(self) -> bool:
        return time.monotonic() >= self.at

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        """This deadline over the work done inside the block, in the current thread."""
        token = _CURRENT.set(self)
        try:
            check()  # a call that waited past its deadline for a worker gives the worker back
            yield
        finally:
            _CURRENT.reset(token)

    def run(self, work: Callable[..., T], *args: object) -> T:
        """Run `work(*args)` under this deadline in the current thread."""
        with self.active():
            return work(*args)


_CURRENT: ContextVar[Limit | None] = ContextVar("vault_core_deadline", default=None)


def current() -> Limit | None:
    """The deadline the running work is under, if any."""
    return _CURRENT.get()


def check() -> None:
    """Raise DeadlineError when the running work is past its deadline."""
    limit = _CURRENT.get()
    if limit is not None and limit.passed:
        raise DeadlineError(limit.seconds)


def checked(items: Iterable[T]) -> Iterator[T]:
    """`items`, with the deadline checked before each one (a walk, a scan of notes)."""
    for item in items:
        check()
        yield item


@contextlib.contextmanager
def interruptible(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """Let the deadline interrupt the statements run on `conn` inside this block.

    SQLite's progress handler asks every PROGRESS_STEPS steps; an interrupted
    statement becomes DeadlineError, and the connection stays usable.
    """
    limit = _CURRENT.get()
    if limit is None:
        yield conn
        return
    check()
    conn.set_progress_handler(lambda: limit.passed, PROGRESS_STEPS)
    try:
        yield conn
    except sqlite3.OperationalError as exc:
        if limit.passed and "interrupt" in str(exc):
            raise DeadlineError(limit.seconds) from exc
        raise
    finally:
        conn.set_progress_handler(None, 0)
