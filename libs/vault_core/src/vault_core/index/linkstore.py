"""Links and names in the index, and keeping `links.resolved` true (docs/design.md#link-resolution).

A full pass resolves every link against names held in memory: O(notes + links).
After one file changes, only its own links and the links under its old and new
keys are looked at again, with indexed queries: the cost does not grow with the vault.
"""

from __future__ import annotations

import sqlite3
import unicodedata
from collections import defaultdict
from collections.abc import Iterable, Sequence

from vault_core import links, scope
from vault_core.index import tempschema
from vault_core.markdown import Link

CHUNK = 500  # well under SQLite's bound-parameter limit at any vault size

Names = list[tuple[int, str]]


def link_rows(
    src: str, found: Sequence[Link], paths: PathNames | None = None
) -> list[tuple[object, ...]]:
    """The links rows of a file (`links (src, target, anchor, alias, wiki, resolved, key)`):
    resolved where `paths` (the vault's paths, when known) decide it, else '' until every
    name is in."""
    return [
        (src, lk.target, lk.anchor, lk.alias, int(lk.wiki), _by_path(src, lk, paths),
         links.link_key(lk.target))
        for lk in found
    ]  # fmt: skip


def _by_path(src: str, link: Link, paths: PathNames | None) -> str:
    if paths is None:
        return ""
    return links.resolve_by_path(src, link.target, paths, wiki=link.wiki) or ""


def name_rows(
    path: str, title: str | None, aliases: list[str]
) -> tuple[Names, list[tuple[object, ...]]]:
    """The names a file can be linked by, and their `names (name, kind, path)` rows;
    `title` None marks an attachment."""
    found = (
        links.attachment_names(path) if title is None else links.note_names(path, title, aliases)
    )
    return found, [(name, kind, path) for kind, name in found]


def names_of(conn: sqlite3.Connection, path: str) -> Names:
    rows = conn.execute("SELECT kind, name FROM names WHERE path = ?", (path,))
    return [(kind, name) for kind, name in rows]


class PathNames:
    """The names the paths of a vault's files give them, without their content: enough for
    `links.resolve_by_path`, which a cold index's workers run before any title is stored."""

    def __init__(self, rels: Iterable[str]) -> None:
        self.paths = set(rels)
        grouped: dict[tuple[int, str], set[str]] = defaultdict(set)
        for rel in self.paths:
            for key in _path_names(rel):
                grouped[key].add(rel)
        self.by_name = _unique(grouped)

    def exists(self, path: str) -> bool:
        return path in self.paths

    def unique(self, kind: int, name: str) -> str | None:
        return self.by_name.get((kind, name))


def _path_names(rel: str) -> list[tuple[int, str]]:
    """The names of `rel` that its path gives (a note's title and aliases left out)."""
    if rel.lower().endswith(".md"):
        return links.note_names(rel, "", [])
    return links.attachment_names(rel)


def _unique(grouped: dict[tuple[int, str], set[str]]) -> dict[tuple[int, str], str]:
    return {key: next(iter(paths)) for key, paths in grouped.items() if len(paths) == 1}


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
        self.by_name = _unique(grouped)

    def exists(self, path: str) -> bool:
        return path in self.paths

    def unique(self, kind: int, name: str) -> str | None:
        return self.by_name.get((kind, name))


def resolve_all(conn: sqlite3.Connection) -> int:
    """Re-resolve every link; returns how many changed."""
    names = _MemoryNames(conn)
    rows = conn.execute("SELECT rowid, src, target, wiki, resolved FROM links").fetchall()
    return _update(conn, rows, names)


def resolve_unresolved(conn: sqlite3.Connection) -> int:
    """Resolve the links stored unresolved ('', broken or not yet resolved); returns how
    many changed. After a fill whose links were resolved from its walk's paths, with the
    index holding exactly those paths, this is what a full pass would change."""
    names = _MemoryNames(conn)
    rows = conn.execute(
        "SELECT rowid, src, target, wiki, resolved FROM links WHERE resolved = ''"
    ).fetchall()
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
    # A wiki link that is not relative resolves the same from any note: each such target
    # is resolved once (a vault's links name the same notes many times over).
    same: dict[str, str] = {}
    for rowid, src, target, wiki, resolved in rows:
        if wiki and links.from_anywhere(target):
            now = same.get(target)
            if now is None:
                now = same[target] = links.resolve(src, target, names, wiki=True)
        else:
            now = links.resolve(src, target, names, wiki=bool(wiki))
        if now != resolved:
            changes[rowid] = now
    conn.executemany(
        "UPDATE links SET resolved = ? WHERE rowid = ?", [(v, k) for k, v in changes.items()]
    )
    return len(changes)


# The links that may resolve otherwise among the visible notes: only a link whose key a
# visible file's names give can lead to a visible file (`links.link_key`), so a broken one
# and one resolved to an invisible file, from a visible note, whose key a visible name has.
# Each is found from an index: the broken ones by `resolved`; the others by their source's
# folders, or — when the rules read the whole vault but some folders — by their target in
# those folders, so the cost follows the links that cross the rules' line, not the vault
# (after a change, once per reader connection and set of rules: 10,000 notes 3 to 10 ms,
# 50,000 notes with a top folder on either side of the line 35 to 75 ms). Rules that read
# the whole vault but some folders cost more: every link into those folders from outside
# is looked at (20,000 notes, 14,000 such links: 170 to 260 ms on a loaded machine; it
# was 30 to 50 ms while a missing pair of parentheses left those links out altogether).
# A name spelled in the other Unicode normal form than a key that is not ASCII counts
# too (`links.spellings`), by `sb_normal` (NFC) and `sb_decomposed`, which the index's
# connections have; asked only for such keys (a multilingual vault of 6,279 notes, its
# 14,636 broken links: 19 ms against 11, and 80 ms asking for every key).
_RELINKED = (
    "SELECT l.rowid, l.src, l.target, l.wiki FROM main.links l"
    " WHERE ({driver}) AND {src} AND (l.resolved = '' OR NOT {resolved})"
    " AND (EXISTS (SELECT 1 FROM names v WHERE v.name = l.key)"
    " OR (l.key GLOB '*[^ -~]*' AND EXISTS (SELECT 1 FROM names v"
    " WHERE v.name IN (sb_normal(l.key), sb_decomposed(l.key)))))"
)


def _decomposed(name: str) -> str:
    return name if name.isascii() else unicodedata.normalize("NFD", name)


FUNCTIONS = {"sb_decomposed": _decomposed}
"""The SQL functions `_RELINKED` calls besides `scope`'s (`Index._connect` adds them)."""


def _relinked(folders: tuple[tuple[str, ...], tuple[str, ...]]) -> str:
    # The files the rules hide, found once (a case-folded range has no index to use),
    # then their links by the index on `resolved`.
    hidden = f"SELECT path FROM main.notes WHERE NOT {scope.clause('path', folders)}"
    into_hidden = f"l.resolved IN ({hidden})" if "" in folders[0] else "1"
    return _RELINKED.format(
        driver=f"l.resolved = '' OR {into_hidden}" if into_hidden != "1" else "1",
        src=scope.clause("l.src", folders),
        resolved=scope.clause("l.resolved", folders),
    )


def resolve_visible(
    conn: sqlite3.Connection, folders: tuple[tuple[str, ...], tuple[str, ...]]
) -> None:
    """Resolve among the visible notes alone the visible notes' links that reach no visible
    file (broken, or resolved to a note the rules hide), for the reader connection's links
    view (`scope.views`): a name shared by a visible and an invisible note, ambiguous in the
    vault, leads to the visible one, as in a vault of just the visible notes. Kept in the
    connection's temp schema, per set of rules, until the index changes (`PRAGMA
    data_version`); the resolution reads the connection's views, which hold only visible
    names."""
    rules = repr(folders)
    (version,) = conn.execute("PRAGMA data_version").fetchone()
    held = conn.execute(
        "SELECT 1 FROM temp.relinked_at WHERE rules = ? AND version = ?", (rules, version)
    )
    if held.fetchone() is not None:
        return
    rows = conn.execute(_relinked(folders)).fetchall()
    names = _SqlNames(conn)
    found = [
        (rowid, links.resolve(src, target, names, wiki=bool(wiki)))
        for rowid, src, target, wiki in rows
    ]
    with tempschema.writable(conn):
        conn.execute("DELETE FROM temp.relinked WHERE rules = ?", (rules,))
        conn.executemany(
            "INSERT INTO temp.relinked VALUES (?, ?, ?)",
            [(rules, rowid, path) for rowid, path in found if path],
        )
        conn.execute("INSERT OR REPLACE INTO temp.relinked_at VALUES (?, ?)", (rules, version))
