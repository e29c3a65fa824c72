"""A reader connection's temp schema: its own, so a query-only reader may write there.

The index's reader connections are query-only (`PRAGMA query_only`), which forbids the temp
schema's writes too. What a reader keeps for the caller it serves — the views of its path
rules, the visible notes' sizes for BM25, links resolved among the visible notes — lives
in that schema, made and refreshed inside `writable`, never a write to the index.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator


@contextlib.contextmanager
def writable(conn: sqlite3.Connection) -> Iterator[None]:
    """The connection may write inside the block (meant for its temp schema only)."""
    (query_only,) = conn.execute("PRAGMA query_only").fetchone()
    conn.execute("PRAGMA query_only = 0")
    try:
        yield
    finally:
        conn.execute(f"PRAGMA query_only = {int(query_only)}")
