"""Full-text search over the index (spec §10.5): FTS5, BM25 with the title weighted 8:1.

Two syntaxes. `natural` (the default) takes a question in plain words and is never
refused: a note matching any of its terms is found (`query`), ranked by BM25, which puts
one that matches more of them — and the rarer ones — above one that matches fewer. `fts` is
FTS5's own syntax for who asks for it: plain words are quoted and AND-ed, operators pass
through, and a syntax error becomes a message a model can act on. Snippets are made from
a bounded window of each hit (`snippet`), and the per-call deadline can stop every
statement.
"""

from __future__ import annotations

import datetime as dt
import re
import sqlite3
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from vault_core import paths, query, snippet
from vault_core.errors import InvalidArgumentError, StorageError
from vault_core.frontmatter import normalize_tag
from vault_core.index import Index

_FTS_SYNTAX = re.compile(r'["*():]| OR | NOT ')


@dataclass(frozen=True)
class Hit:
    path: str
    title: str
    score: float
    snippet: str
    tags: list[str]
    modified: str
    bytes: int
    matched: list[str] = field(default_factory=list)  # why: "words", "meaning" or both
    kind: str = "note"  # or "attachment": a PDF found by what its pages say
    section: str = ""  # for a match by meaning: the heading of the closest section


@dataclass(frozen=True)
class Filters:
    """What narrows a search besides the text. Tags are AND-ed; `tag` also finds `tag/sub`."""

    tags: Sequence[str] = ()
    prefix: str = ""
    glob: str = ""
    modified_after_ns: int | None = None


@dataclass
class Results:
    total: int
    hits: list[Hit] = field(default_factory=list)


def fts_query(text: str) -> str:
    """Quote each word and AND them, unless the input already uses FTS5 syntax."""
    text = text.strip()
    if _FTS_SYNTAX.search(text):
        return text
    return " AND ".join('"' + word.replace('"', '""') + '"' for word in text.split())


def modified(mtime_ns: int) -> str:
    """A file's mtime as RFC 3339 UTC with seconds."""
    # Whole seconds first: a float of the nanoseconds rounds x.9999999 up to the next second.
    moment = dt.datetime.fromtimestamp(mtime_ns // 1_000_000_000, dt.UTC)
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


Syntax = Literal["natural", "fts"]
SYNTAXES: tuple[Syntax, ...] = ("natural", "fts")
POOL = 200
"""The most notes a natural-language ranking returns at once (hybrid search fuses this many).

BM25 over any of a question's terms already ranks a note holding more of them — and the rarer
ones — above one holding fewer: re-ranking by the idf-weighted share of terms held was
measured on the dev part of bench/eval/questions.yaml and gained nothing (nDCG@10 over all
kinds 0.594 without, 0.595 at share^0.1, 0.565 at share^1, 0.545 at share^2), so it is not
done."""


def search(
    index: Index,
    text: str = "",
    filters: Filters | None = None,
    limit: int = 25,
    offset: int = 0,
    *,
    syntax: Syntax = "natural",
) -> Results:
    """Notes matching `text` (ranked) and the filters (newest first without text)."""
    filters = filters or Filters()
    where, params = _where(filters)
    with index.querying() as conn:
        try:
            if not text.strip():
                return _recent(conn, where, params, limit=limit, offset=offset)
            if syntax == "fts":
                return _ranked(conn, fts_query(text), where, params, limit=limit, offset=offset)
            return _natural(conn, query.terms(text), where, params, limit=limit, offset=offset)
        except sqlite3.OperationalError as exc:
            if _is_query_error(exc):
                raise _readable(text, exc) from exc
            if "interrupt" in str(exc):
                raise  # the deadline: `querying` answers it
            raise StorageError("index", str(exc)) from exc


# bm25() takes one weight per column, the unindexed path included: spec §10.5's
# `bm25(notes_fts, 8.0, 1.0)` would weight path 8 and leave title at 1. Ranking
# through the `rank` column lets FTS5 stop after `limit` rows instead of sorting all.
# No snippet() here: over a whole note its cost grows with the square of the matches.
RANK = "bm25(0.0, 8.0, 1.0)"
TAGS = "(SELECT group_concat(t.tag, char(31)) FROM tags t WHERE t.path = n.path)"


def ranked_sql(where: list[str]) -> str:
    """The one statement behind a text search (the benchmark runs it raw, too)."""
    clause = " AND ".join(["notes_fts MATCH ?", "rank MATCH ?", *where])
    return (
        f"SELECT n.path, n.title, -rank, notes_fts.body, n.mtime, n.size, {TAGS}, n.rowid,"
        " n.is_note"
        f" FROM notes_fts JOIN notes n ON n.rowid = notes_fts.rowid WHERE {clause}"
        " ORDER BY rank LIMIT ? OFFSET ?"
    )


def _ranked(
    conn: sqlite3.Connection, text: str, where: list[str], params: list[object], *, limit: int,
    offset: int,
) -> Results:  # fmt: skip
    rows = conn.execute(ranked_sql(where), [text, RANK, *params, limit, offset]).fetchall()
    snippets = snippet.snippets(text, [row[3] for row in rows])
    rows = [
        (*row[:3], query.unspaced(found), *row[4:7], row[8])
        for row, found in zip(rows, snippets, strict=True)
    ]
    total = offset + len(rows)
    if len(rows) == limit or (offset and not rows):
        clause = " AND ".join(["notes_fts MATCH ?", *where])
        (total,) = conn.execute(
            f"SELECT count(*) FROM notes_fts JOIN notes n ON n.rowid = notes_fts.rowid"
            f" WHERE {clause}",
            [text, *params],
        ).fetchone()
    return Results(total, _hits(rows))


def _natural(
    conn: sqlite3.Connection, terms: list[query.Term], where: list[str], params: list[object],
    *, limit: int, offset: int,
) -> Results:  # fmt: skip
    if not terms:
        return Results(0)
    rows, total = _scored(conn, terms, where, params, offset + limit)
    page = [(rowid, score) for rowid, score, _ in rows[offset : offset + limit]]
    return Results(total, _page(conn, page, query.highlight(terms)))


def ranking(
    index: Index, text: str, filters: Filters, pool: int = POOL
) -> tuple[list[tuple[str, float]], int]:
    """The natural-language keyword ranking alone: (path, score) best first, at most `pool`,
    and how many notes match in all — what hybrid search fuses, without snippets."""
    terms = query.terms(text)
    if not terms:
        return [], 0
    where, params = _where(filters)
    with index.querying() as conn:
        rows, total = _scored(conn, terms, where, params, pool)
    return [(path, score) for _, score, path in rows], total


def _scored(
    conn: sqlite3.Connection, terms: list[query.Term], where: list[str], params: list[object],
    pool: int,
) -> tuple[list[tuple[int, float, str]], int]:  # fmt: skip
    """BM25 over any of the terms: the best `pool` notes, and how many match in all."""
    expression = query.any_of(terms)
    clause = " AND ".join(["notes_fts MATCH ?", "rank MATCH ?", *where])
    rows = conn.execute(
        f"SELECT n.rowid, -rank, n.path FROM notes_fts JOIN notes n ON n.rowid = notes_fts.rowid"
        f" WHERE {clause} ORDER BY rank LIMIT ?",
        [expression, RANK, *params, pool],
    ).fetchall()
    total = len(rows)
    if total == pool:
        (total,) = conn.execute(
            f"SELECT count(*) FROM notes_fts JOIN notes n ON n.rowid = notes_fts.rowid"
            f" WHERE {' AND '.join(['notes_fts MATCH ?', *where])}",
            [expression, *params],
        ).fetchone()
    return rows, total


def passing(index: Index, note_paths: Sequence[str], filters: Filters) -> set[str]:
    """Which of these paths are notes the filters let through."""
    where, params = _where(filters)
    found: set[str] = set()
    with index.querying() as conn:
        for start in range(0, len(note_paths), 500):
            chunk = list(note_paths[start : start + 500])
            marks = ", ".join("?" * len(chunk))
            clause = " AND ".join([f"n.path IN ({marks})", "n.is_note = 1", *where])
            found |= {p for (p,) in conn.execute(
                f"SELECT n.path FROM notes n WHERE {clause}", [*chunk, *params])}  # fmt: skip
    return found


def hits_for(index: Index, note_paths: Sequence[str], highlight: str) -> list[Hit]:
    """Hits for these notes in this order (score 0), snippets marking `highlight`'s terms."""
    if not note_paths:
        return []
    marks = ", ".join("?" * len(note_paths))
    with index.querying() as conn:
        sql = f"SELECT path, rowid FROM notes WHERE path IN ({marks})"
        rowids = dict(conn.execute(sql, list(note_paths)).fetchall())
        ranked = [(rowids[p], 0.0) for p in note_paths if p in rowids]
        return _page(conn, ranked, highlight)


def _page(conn: sqlite3.Connection, ranked: list[tuple[int, float]], highlight: str) -> list[Hit]:
    """The hits of one page, in the order given, with their snippets."""
    if not ranked:
        return []
    marks = ", ".join("?" * len(ranked))
    found = {
        row[0]: row[1:]
        for row in conn.execute(
            f"SELECT n.rowid, n.path, n.title, notes_fts.body, n.mtime, n.size, {TAGS},"
            f" n.is_note FROM notes_fts JOIN notes n ON n.rowid = notes_fts.rowid"
            f" WHERE n.rowid IN ({marks})",
            [rowid for rowid, _ in ranked],
        )
    }
    rows = [(found[rowid][0], found[rowid][1], score, *found[rowid][2:]) for rowid, score in ranked]
    texts = snippet.snippets(highlight, [row[3] for row in rows])
    return _hits(
        [(*row[:3], query.unspaced(t), *row[4:]) for row, t in zip(rows, texts, strict=True)]
    )


def _recent(
    conn: sqlite3.Connection, where: list[str], params: list[object], *, limit: int, offset: int
) -> Results:
    clause = " AND ".join(["n.is_note = 1", *where])
    (total,) = conn.execute(f"SELECT count(*) FROM notes n WHERE {clause}", params).fetchone()
    rows = conn.execute(
        f"SELECT n.path, n.title, 0.0, '', n.mtime, n.size, {TAGS}, 1 FROM notes n"
        f" WHERE {clause}"
        " ORDER BY n.mtime DESC, n.path LIMIT ? OFFSET ?",
        [*params, limit, offset],
    ).fetchall()
    return Results(total, _hits(rows))


def _where(filters: Filters) -> tuple[list[str], list[object]]:
    where: list[str] = []
    params: list[object] = []
    if filters.prefix.strip():
        prefix = paths.clean(filters.prefix)
        where.append(r"n.path LIKE ? ESCAPE '\'")
        params.append(like_escape(prefix) + "/%")
    if filters.glob.strip():
        where.append("n.path GLOB ?")
        params.append(filters.glob.strip())
    if filters.modified_after_ns is not None:
        where.append("n.mtime >= ?")
        params.append(min(max(filters.modified_after_ns, -(2**63)), 2**63 - 1))  # SQLite ints
    for tag in filters.tags:
        wanted = normalize_tag(tag)
        if wanted:
            # `tag` or anything under `tag/`: '0' is the character after '/', so the
            # range is exactly the nested tags and both halves can use an index.
            where.append(
                "EXISTS (SELECT 1 FROM tags t WHERE t.path = n.path"
                " AND (t.tag = ? OR (t.tag >= ? AND t.tag < ?)))"
            )
            params += [wanted, wanted + "/", wanted + "0"]
    return where, params


def _hits(rows: list[tuple]) -> list[Hit]:  # type: ignore[type-arg]
    return [
        Hit(path, title, round(score, 4), snippet, tags.split("\x1f") if tags else [],
            modified(mtime), size, kind="note" if is_note else "attachment")
        for path, title, score, snippet, mtime, size, tags, is_note in rows
    ]  # fmt: skip


def tags_of(conn: sqlite3.Connection, note_paths: Sequence[str]) -> dict[str, list[str]]:
    """The tags of these paths, in one query per 500 paths."""
    found: dict[str, list[str]] = defaultdict(list)
    for start in range(0, len(note_paths), 500):
        chunk = note_paths[start : start + 500]
        marks = ", ".join("?" * len(chunk))
        for path, tag in conn.execute(
            f"SELECT path, tag FROM tags WHERE path IN ({marks}) ORDER BY rowid",
            chunk,
        ):
            found[path].append(tag)
    return found


def like_escape(text: str) -> str:
    """Escape LIKE wildcards so a path or tag matches literally (with ESCAPE '\\')."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _is_query_error(exc: sqlite3.OperationalError) -> bool:
    message = str(exc).lower()
    return any(word in message for word in ("fts5", "syntax", "no such column", "unterminated"))


def _readable(query: str, exc: sqlite3.OperationalError) -> InvalidArgumentError:
    detail = str(exc).removeprefix("fts5: ")
    return InvalidArgumentError(
        f"the search query {query!r} is not valid FTS5 syntax ({detail}); close every quote "
        'and parenthesis, or search plain words without " * ( ) : so they are matched as words'
    )
