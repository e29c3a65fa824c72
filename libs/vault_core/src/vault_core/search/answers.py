"""Answers from the index alone: stats, tags, the link graph, related notes, tasks, review,
and pages of its paths for listings and completions.

Each function is one or a few SQL queries on a reader connection (docs/design.md#tools), which
the per-call deadline can stop; none reads a note from disk.
"""

from __future__ import annotations

import weakref
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from vault_core import scope
from vault_core.index import totals
from vault_core.index.store import Index
from vault_core.search.fts import like_escape, modified, tags_of
from vault_core.skips import REASONS

REVIEW_CATEGORIES = ("stub", "orphan", "broken_link", "stale", "open_task", "skipped")
_ORPHAN = (
    "n.is_note = 1"
    " AND NOT EXISTS (SELECT 1 FROM links l WHERE l.resolved = n.path AND l.src != n.path)"
    " AND NOT EXISTS (SELECT 1 FROM links l WHERE l.src = n.path AND l.resolved != ''"
    " AND l.resolved != n.path)"
)


def stats(index: Index) -> dict[str, Any]:
    """`vault_stats`: counts, broken links, orphans, open tasks, top tags.

    Without path rules, read from the totals the index keeps as it writes (a few rows);
    under path rules, counted over the rows the caller may see. Either is kept per index
    version and path rules: asked again before the index changes, it costs no query."""
    key = (index.version, scope.key())  # read first: a write meanwhile moves it on
    held = _STATS.get(index)
    if held is None or held[0] != key:
        held = (key, _counted(index))
        _STATS[index] = held
    return {**held[1], "skipped": len(index.skips)}


_STATS: weakref.WeakKeyDictionary[Index, tuple[object, dict[str, Any]]] = (
    weakref.WeakKeyDictionary()
)
# A note no link joins to another: neither the target nor the source of a resolved link
# between two notes. One pass over the links builds the set, instead of two index probes
# per note, which missed SQLite's page cache on every probe in a large vault.
_LINKED = (
    "SELECT resolved FROM links WHERE resolved NOT IN ('', src)"
    " UNION ALL SELECT src FROM links WHERE resolved NOT IN ('', src)"
)


def _counted(index: Index) -> dict[str, Any]:
    if scope.current() is None and not index.filling:
        with index.querying() as conn:
            found = totals.read(conn)
            (last,) = conn.execute("SELECT max(mtime) FROM notes").fetchone()
        top = found.pop("top_tags")
        return {**found, "last_modified": modified(last) if last else "", "top_tags": top}
    return _counted_rows(index)


def _counted_rows(index: Index) -> dict[str, Any]:
    with index.querying() as conn:
        notes, attachments, words, size, last = conn.execute(
            "SELECT coalesce(sum(is_note), 0), coalesce(sum(1 - is_note), 0),"
            " coalesce(sum(words), 0), coalesce(sum(size), 0), max(mtime) FROM notes"
        ).fetchone()
        (links,) = conn.execute("SELECT count(*) FROM links").fetchone()
        (broken,) = conn.execute("SELECT count(*) FROM links WHERE resolved = ''").fetchone()
        (orphans,) = conn.execute(
            f"SELECT count(*) FROM notes WHERE is_note = 1 AND path NOT IN ({_LINKED})"
        ).fetchone()
        (open_tasks,) = conn.execute("SELECT count(*) FROM tasks WHERE done = 0").fetchone()
        top = conn.execute(
            "SELECT tag, count(DISTINCT path) AS c FROM tags GROUP BY tag ORDER BY c DESC, tag"
        ).fetchall()
    return {
        "notes": notes,
        "attachments": attachments,
        "words": words,
        "bytes": size,
        "tags": len(top),
        "links": links,
        "broken_links": broken,
        "orphans": orphans,
        "open_tasks": open_tasks,
        "last_modified": modified(last) if last else "",
        "top_tags": [f"{tag} ({count})" for tag, count in top[:10]],
    }


def skipped(index: Index, limit: int = 100) -> list[dict[str, str]]:
    """Files the index leaves out (path escaped, a `skips.REASONS` code), by path."""
    return [item.row() for item in index.skips.listing(limit)]


def tag_list(index: Index, prefix: str = "", limit: int = 200) -> list[dict[str, Any]]:
    """Tags with their note counts, most used first, ties alphabetical."""
    wanted = prefix.strip().lstrip("#").lower()
    with index.querying() as conn:
        rows = conn.execute(
            r"SELECT tag, count(DISTINCT path) AS c FROM tags WHERE tag LIKE ? ESCAPE '\'"
            " GROUP BY tag ORDER BY c DESC, tag LIMIT ?",
            (like_escape(wanted) + "%", limit),
        ).fetchall()
    return [{"tag": tag, "notes": count} for tag, count in rows]


def backlinks(index: Index, path: str) -> dict[str, list[dict[str, Any]]]:
    """Incoming and outgoing links of a path, and its broken outgoing links."""
    with index.querying() as conn:
        incoming = conn.execute(
            "SELECT l.src, coalesce(n.title, ''), l.target, l.anchor FROM links l"
            " LEFT JOIN notes n ON n.path = l.src WHERE l.resolved = ? AND l.src != ?"
            " ORDER BY l.src, l.rowid",
            (path, path),
        ).fetchall()
        outgoing = conn.execute(
            "SELECT l.resolved, coalesce(n.title, ''), l.target, l.anchor FROM links l"
            " LEFT JOIN notes n ON n.path = l.resolved WHERE l.src = ? ORDER BY l.rowid",
            (path,),
        ).fetchall()

    def shape(rows: list[tuple[str, str, str, str]]) -> list[dict[str, Any]]:
        return [{"path": p, "title": t, "target": tg, "anchor": a} for p, t, tg, a in rows]

    broken = [{"target": tg, "anchor": a} for p, _t, tg, a in outgoing if not p]
    return {
        "incoming": shape(incoming),
        "outgoing": shape([r for r in outgoing if r[0]]),
        "broken": broken,
    }


@dataclass(frozen=True)
class Related:
    path: str
    title: str
    score: float
    tags: list[str]
    modified: str
    bytes: int


MEANING_WEIGHT = 4.0
"""A note as close in meaning as can be (cosine 1) counts as much as a link and a bit more."""


def related(
    index: Index, path: str, limit: int = 10, similar: Sequence[tuple[str, float]] = ()
) -> list[Related]:
    """Rare shared tags 6.0, links out 3.0, links in 3.0, co-citation 1.5
    (docs/design.md#related-notes) — and, where the vault has vectors, closeness in meaning
    (`similar`: path and cosine), 4.0."""
    scores: defaultdict[str, float] = defaultdict(float)
    for other, cosine in similar:
        if other != path and cosine > 0:
            scores[other] += MEANING_WEIGHT * cosine
    with index.querying() as conn:
        for other, weight in conn.execute(
            "SELECT t2.path, 1.0 / (SELECT count(DISTINCT t3.path) FROM tags t3"
            " WHERE t3.tag = t1.tag) FROM tags t1"
            " JOIN tags t2 ON t2.tag = t1.tag AND t2.path != t1.path WHERE t1.path = ?",
            (path,),
        ):
            scores[other] += 6.0 * weight
        for (other,) in conn.execute(
            "SELECT resolved FROM links WHERE src = ? AND resolved NOT IN ('', ?)", (path, path)
        ):
            scores[other] += 3.0
        for (other,) in conn.execute(
            "SELECT src FROM links WHERE resolved = ? AND src != ?", (path, path)
        ):
            scores[other] += 3.0
        for (other,) in conn.execute(
            "SELECT DISTINCT b.src FROM links a JOIN links b ON b.resolved = a.resolved"
            " WHERE a.src = ? AND a.resolved NOT IN ('', ?) AND b.src != ?",
            (path, path, path),
        ):
            scores[other] += 1.5
        ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
        return _related_rows(conn, ranked, limit)


def _related_rows(conn: Any, ranked: list[tuple[str, float]], limit: int) -> list[Related]:
    found = []
    for other, score in ranked:
        row = conn.execute(
            "SELECT title, mtime, size FROM notes WHERE path = ? AND is_note = 1", (other,)
        ).fetchone()
        if row is None:
            continue
        found.append(Related(other, row[0], round(score, 4), [], modified(row[1]), row[2]))
        if len(found) >= limit:
            break
    tags = tags_of(conn, [r.path for r in found])
    return [
        Related(r.path, r.title, r.score, tags.get(r.path, []), r.modified, r.bytes) for r in found
    ]


def tasks(
    index: Index,
    *,
    include_done: bool = False,
    prefix: str = "",
    contains: str = "",
    limit: int = 100,
) -> list[dict[str, Any]]:
    """Tasks sorted by path and line; lines count the frontmatter (docs/design.md#note-format)."""
    clause, params = ["1 = 1"], []
    if not include_done:
        clause.append("t.done = 0")
    if prefix.strip():
        clause.append(r"t.path LIKE ? ESCAPE '\'")
        params.append(like_escape(prefix.strip().strip("/")) + "/%")
    if contains:
        # SQLite's lower() and LIKE fold ASCII only; "Äpfel" must match "äpfel" too.
        clause.append("instr(casefold(t.text), ?) > 0")
        params.append(contains.casefold())
    with index.querying() as conn:
        conn.create_function("casefold", 1, str.casefold, deterministic=True)
        rows = conn.execute(
            "SELECT t.path, t.line, t.text, t.done, coalesce(n.title, '') FROM tasks t"
            f" LEFT JOIN notes n ON n.path = t.path WHERE {' AND '.join(clause)}"
            " ORDER BY t.path, t.line LIMIT ?",
            [*params, limit],
        ).fetchall()
    return [
        {"path": p, "line": ln, "text": tx, "done": bool(d), "note_title": tt}
        for p, ln, tx, d, tt in rows
    ]


def review(
    index: Index, *, stale_before_ns: int, limit: int = 15, only: str | None = None
) -> dict[str, list[dict[str, Any]]]:
    """`vault_review`: each category from its own query."""
    chosen = [only] if only else list(REVIEW_CATEGORIES)
    queries = {
        "stub": (
            "SELECT path, title, 'smaller than 300 bytes', size FROM notes"
            " WHERE is_note = 1 AND size < 300 ORDER BY size, path LIMIT ?",
            (),
        ),
        "orphan": (
            f"SELECT n.path, n.title, 'no links in or out', '' FROM notes n WHERE {_ORPHAN}"
            " ORDER BY n.path LIMIT ?",
            (),
        ),
        "broken_link": (
            "SELECT l.src, coalesce(n.title, ''), 'link target not found', l.target"
            " FROM links l LEFT JOIN notes n ON n.path = l.src WHERE l.resolved = ''"
            " ORDER BY l.src, l.rowid LIMIT ?",
            (),
        ),
        "stale": (
            "SELECT path, title, 'not modified since', mtime FROM notes"
            " WHERE is_note = 1 AND mtime < ? ORDER BY mtime, path LIMIT ?",
            (stale_before_ns,),
        ),
        "open_task": (
            "SELECT t.path, coalesce(n.title, ''), 'open task', t.text FROM tasks t"
            " LEFT JOIN notes n ON n.path = t.path WHERE t.done = 0"
            " ORDER BY t.path, t.line LIMIT ?",
            (),
        ),
    }
    items: dict[str, list[dict[str, Any]]] = defaultdict(list)
    if "skipped" in chosen:
        items["skipped"] = [
            {"path": i.path, "title": "", "reason": i.reason, "detail": REASONS.get(i.reason, "")}
            for i in index.skips.listing(limit)
        ]
    with index.querying() as conn:
        for category in (c for c in chosen if c in queries):
            sql, params = queries[category]
            for path, title, reason, raw in conn.execute(sql, (*params, limit)):
                detail = modified(raw) if category == "stale" else str(raw)
                items[category].append(
                    {"path": path, "title": title, "reason": reason, "detail": detail}
                )
    return {category: items.get(category, []) for category in chosen}


def attachments(
    index: Index, prefix: str = "attachments", limit: int = 100
) -> list[dict[str, Any]]:
    """Attachments under `prefix` with the number of notes whose links resolve to each."""
    wanted = prefix.strip().strip("/")
    with index.querying() as conn:
        rows = conn.execute(
            "SELECT n.path, n.size, n.mtime,"
            " (SELECT count(DISTINCT l.src) FROM links l WHERE l.resolved = n.path)"
            r" FROM notes n WHERE n.is_note = 0 AND (? = '' OR n.path LIKE ? ESCAPE '\')"
            " ORDER BY n.path LIMIT ?",
            (wanted, like_escape(wanted) + "/%", limit),
        ).fetchall()
    return [
        {"path": p, "bytes": b, "modified": modified(m), "references": r} for p, b, m, r in rows
    ]


@dataclass(frozen=True)
class Entry:
    """A file of the index as a listing shows it: a note (title from the index) or an
    attachment (title empty)."""

    path: str
    title: str
    size: int
    is_note: bool


def entries_after(index: Index, after: str, limit: int) -> list[Entry]:
    """Up to `limit` notes and attachments whose paths sort after `after`, by path: a page of
    a listing that continues where the last one ended."""
    with index.querying() as conn:
        rows = conn.execute(
            "SELECT path, title, size, is_note FROM notes WHERE path > ? ORDER BY path LIMIT ?",
            (after, limit),
        ).fetchall()
    return [Entry(path, title, size, bool(is_note)) for path, title, size, is_note in rows]


def paths_starting(index: Index, prefix: str, limit: int) -> list[str]:
    """Up to `limit` paths of notes and attachments that start with `prefix`, by path."""
    with index.querying() as conn:
        rows = conn.execute(
            "SELECT path FROM notes WHERE path >= ? AND path < ? ORDER BY path LIMIT ?",
            (prefix, prefix + "\U0010ffff", limit),
        ).fetchall()
    return [path for (path,) in rows]
