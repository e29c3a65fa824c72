"""Links and names in the index, and keeping `links.resolved` true (spec §10.4).

A full pass resolves every link against names held in memory: O(notes + links).
After one file changes, only its own links and the links under its old and new
keys are looked at again, with indexed queries: the cost does not grow with the vault.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from collections.abc import Iterable, Sequence

from vault_core import links
from vault_core.markdown import Link

CHUNK = 500  # well under SQLite's bound-parameter limit at any vault size

Names = list[tuple[int, str]]


def store_links(conn: sqlite3.Connection, src: str, found: Sequence[Link]) -> None:
    rows = [
        (src, lk.target, lk.anchor, lk.alias, int(lk.wiki), "", links.link_key(lk.target))
        for lk in found
    ]
    conn.executemany(
        "INSERT INTO links (src, target, anchor, alias, wiki, resolved, key)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        rows,
    )


def store_names(
    conn: sqlite3.Connection, path: str, title: str | None, aliases: list[str]
) -> Names:
    """Record the names a file can be linked by; `title` None marks an attachment."""
    found = (
        links.attachment_names(path) if title is None else links.note_names(path, title, aliases)
    )
    conn.executemany(
        "INSERT INTO names (name, kind, path) VALUES (?, ?, ?)",
        [(name, kind, path) for kind, name in found],
    )
    return found


def names_of(conn: sqlite3.Connection, path: str) -> Names:
    rows = conn.execute("SELECT kind, name FROM names WHERE path = ?", (path,))
    return [(kind, name) for kind, name in rows]


class _SqlNames:
    """Name lookups answered by indexed queries (used after a single change)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def exists(self, path: str) -> bool:
        row = self.conn.execute("SELECT 1 FROM notes WHERE path = ?", (path,)).fetchone()
        return row is not None

    def unique(self, kind: int, name: str) -> str | None:
        rows = self.conn.execute(
            "SELECT DISTINCT path FROM names WHERE name = ? AND kind = ? LIMIT 2", (name, kind)
        ).fetchall()
        return rows[0][0] if len(rows) == 1 else None


class _MemoryNames:
    """Every name of the vault in memory (used by a full pass)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.paths = {path for (path,) in conn.execute("SELECT path FROM notes")}
        grouped: dict[tuple[int, str], set[str]] = defaultdict(set)
        for name, kind, path in conn.execute("SELECT name, kind, path FROM names"):
            grouped[(kind, name)].add(path)
        self.by_name = {key: next(iter(paths)) for key, paths in grouped.items() if len(paths) == 1}

    def exists(self, path: str) -> bool:
        return path in self.paths

    def unique(self, kind: int, name: str) -> str | None:
        return self.by_name.get((kind, name))


def resolve_all(conn: sqlite3.Connection) -> int:
    """Re-resolve every link; returns how many changed."""
    names = _MemoryNames(conn)
    rows = conn.execute("SELECT rowid, src, target, wiki, resolved FROM links").fetchall()
    return _update(conn, rows, names)


def resolve_after_change(conn: sqlite3.Connection, path: str, old: Names, new: Names) -> int:
    """Re-resolve what one file's change can affect: its links and links under its keys."""
    rows = conn.execute(
        "SELECT rowid, src, target, wiki, resolved FROM links WHERE src = ?", (path,)
    ).fetchall()
    if sorted(old) != sorted(new):
        keys = sorted(links.keys_for(old) | links.keys_for(new))
        rows += _rows_where(conn, "key", keys)
        rows += _rows_where(conn, "resolved", [path])
    return _update(conn, rows, _SqlNames(conn))


def _rows_where(conn: sqlite3.Connection, column: str, values: Sequence[str]) -> list[tuple]:  # type: ignore[type-arg]
    found = []
    for start in range(0, len(values), CHUNK):
        chunk = values[start : start + CHUNK]
        marks = ", ".join("?" * len(chunk))
        found += conn.execute(
            f"SELECT rowid, src, target, wiki, resolved FROM links WHERE {column} IN ({marks})",
            chunk,
        ).fetchall()
    return found


def _update(conn: sqlite3.Connection, rows: Iterable[tuple], names: links.Names) -> int:  # type: ignore[type-arg]
    changes = {}
    for rowid, src, target, wiki, resolved in rows:
        now = links.resolve(src, target, names, wiki=bool(wiki))
        if now != resolved:
            changes[rowid] = now
    conn.executemany(
        "UPDATE links SET resolved = ? WHERE rowid = ?", [(v, k) for k, v in changes.items()]
    )
    return len(changes)
