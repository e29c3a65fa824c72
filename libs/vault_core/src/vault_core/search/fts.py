"""Full-text search over the index (docs/design.md#search): FTS5, BM25 with the title weighted 8:1.

Two syntaxes. `natural` (the default) takes a question in plain words and is never
refused: a note matching any of its terms is found (`words.terms`), ranked by BM25, which puts
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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from vault_core import paths, scope
from vault_core.errors import InvalidArgumentError, StorageError
from vault_core.frontmatter import normalize_tag
from vault_core.index.store import Index
from vault_core.search import bm25
from vault_core.words import snippet
from vault_core.words import terms as query

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
    modified_before_ns: int | None = None
    dated_by: Literal["updated", "created"] = "updated"
    """Which of a note's own dates the time bounds go by (its file's mtime when it has none)."""


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
    with index.querying() as conn:
        try:
            where, params = _where(conn, filters)
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


# bm25() takes one weight per column, the unindexed path included: docs/design.md#search's
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
    conn: sqlite3.Connection,
    text: str,
    where: list[str],
    params: list[object],
    *,
    limit: int,
    offset: int,
) -> Results:
    if scope.current() is not None:  # ranked over the visible rows alone (`bm25`)
        matched = _matching(conn, text, where, params)
        best = bm25.ranked(conn, text, matched, offset + limit)[offset:]
        return Results(len(matched), _page(conn, [(row, score) for row, score, _ in best], text))
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
    conn: sqlite3.Connection,
    terms: list[query.Term],
    where: list[str],
    params: list[object],
    *,
    limit: int,
    offset: int,
) -> Results:
    if not terms:
        return Results(0)
    rows, total = _scored(conn, query.any_of(terms), where, params, offset + limit, any_of=True)
    page = [(rowid, score) for rowid, score, _ in rows[offset : offset + limit]]
    return Results(total, _page(conn, page, query.highlight(terms)))


def ranking(
    index: Index,
    text: str,
    filters: Filters,
    pool: int = POOL,
    terms: list[query.Term] | None = None,
    *,
    every_first: int = 0,
) -> tuple[list[tuple[str, float]], int]:
    """The natural-language keyword ranking alone: (path, score) best first, at most `pool`,
    and how many notes match in all — what hybrid search fuses, without snippets. `terms`
    are the text's (`query.terms`) when the caller has them already. With `every_first`,
    when at least that many notes hold every term, only they are ranked (and counted)."""
    terms = query.terms(text) if terms is None else terms
    if not terms:
        return [], 0
    with index.querying() as conn:
        where, params = _where(conn, filters)
        rows: list[tuple[int, float, str]] = []
        total = 0
        if every_first and len(terms) > 1:
            rows, total = _scored(conn, query.all_of(terms), where, params, pool, with_paths=True)
        if total < every_first or not rows:
            any_ = query.any_of(terms)
            rows, total = _scored(conn, any_, where, params, pool, with_paths=True, any_of=True)
    return [(path, score) for _, score, path in rows], total


def _scored(
    conn: sqlite3.Connection,
    expression: str,
    where: list[str],
    params: list[object],
    pool: int,
    *,
    with_paths: bool = False,
    any_of: bool = False,
) -> tuple[list[tuple[int, float, str]], int]:
    """BM25 of the notes matching the FTS5 `expression`: the best `pool` notes, and how many
    match in all; with `with_paths`, each with its path (else ""). `any_of`: the expression
    matches a note holding any of its phrases (`query.any_of`)."""
    # SQLite scores, counts, sorts and cuts the matches inside one step of the statement,
    # so the interpreter is let go for all of it (a row fetched at a time took and gave
    # back the interpreter lock 500 times a question of common words, each time waiting for
    # the vector search's thread), and only the best `pool` rows come back to Python. FTS5
    # sorting by `rank` itself cost more (0.86 against 0.70 ms for 500 matches); an outer
    # ORDER BY over its scores is SQLite's own top-N sort. Ties go by rowid, the order FTS5
    # hands its matches in. Only the best are joined to their notes when nothing narrows
    # (joining each of 500 matches to its note cost a quarter of the ranking's time).
    if scope.current() is not None:  # ranked over the visible rows alone (`bm25`)
        matched = _matching(conn, expression, where, params)
        visible = bm25.ranked(conn, expression, matched, pool, holding=any_of and not where)
        return [(row, score, path if with_paths else "") for row, score, path in visible], len(
            matched
        )
    scores = "SELECT notes_fts.rowid AS id, -rank AS score FROM notes_fts"
    if where:  # the filters need the notes
        clause = " AND ".join(["notes_fts MATCH ?", "rank MATCH ?", *where])
        scores += f" JOIN notes n ON n.rowid = notes_fts.rowid WHERE {clause}"
    else:
        scores += " WHERE notes_fts MATCH ? AND rank MATCH ?"
    best = (
        f"SELECT id, score, count(*) OVER () AS matched FROM ({scores})"
        " ORDER BY score DESC, id LIMIT ?"
    )
    path = "n.path" if with_paths else "''"
    rows = conn.execute(
        f"SELECT b.id, b.score, b.matched, {path} FROM ({best}) b"
        " JOIN notes n ON n.rowid = b.id ORDER BY b.score DESC, b.id",
        [expression, RANK, *params, pool],
    ).fetchall()
    total = rows[0][2] if rows else 0
    return [(rowid, score, found) for rowid, score, _, found in rows], total


def _matching(
    conn: sqlite3.Connection, expression: str, where: list[str], params: list[object]
) -> list[tuple[int, str]]:
    """Every visible row the FTS5 `expression` and the filters match: (rowid, path)."""
    clause = " AND ".join(["notes_fts MATCH ?", *where])
    return conn.execute(
        "SELECT notes_fts.rowid, n.path FROM notes_fts JOIN notes n ON n.rowid = notes_fts.rowid"
        f" WHERE {clause}",
        [expression, *params],
    ).fetchall()


def passing(index: Index, note_paths: Sequence[str], filters: Filters) -> set[str]:
    """Which of these paths are notes the filters let through."""
    found: set[str] = set()
    with index.querying() as conn:
        where, params = _where(conn, filters)
        for start in range(0, len(note_paths), 500):
            chunk = list(note_paths[start : start + 500])
            marks = ", ".join("?" * len(chunk))
            clause = " AND ".join([f"n.path IN ({marks})", "n.is_note = 1", *where])
            found |= {
                p
                for (p,) in conn.execute(
                    f"SELECT n.path FROM notes n WHERE {clause}", [*chunk, *params]
                )
            }
    return found


def hits_for(
    index: Index,
    note_paths: Sequence[str],
    highlight: str,
    leads: Mapping[str, str] | None = None,
) -> list[Hit]:
    """Hits for these notes in this order (score 0), snippets marking `highlight`'s terms;
    a note in `leads` (path: heading, found by meaning alone) gets its section's opening
    words instead (`snippet.lead`). A path the index does not hold (any more) is left out."""
    if not note_paths:
        return []
    with index.querying() as conn:
        ranked = [(path, 0.0) for path in note_paths]
        return _page(conn, ranked, highlight, by="path", leads=leads or {})


def _page(
    conn: sqlite3.Connection,
    ranked: Sequence[tuple[object, float]],
    highlight: str,
    by: Literal["rowid", "path"] = "rowid",
    leads: Mapping[str, str] | None = None,
) -> list[Hit]:
    """The hits of one page, in the order given (each note named `by` its rowid or path),
    with their snippets."""
    if not ranked:
        return []
    marks = ", ".join("?" * len(ranked))
    found = {
        row[0]: row[1:]
        for row in conn.execute(
            f"SELECT n.{by}, n.path, n.title, notes_fts.body, n.mtime, n.size, {TAGS},"
            f" n.is_note FROM notes_fts JOIN notes n ON n.rowid = notes_fts.rowid"
            f" WHERE n.{by} IN ({marks})",
            [key for key, _ in ranked],
        )
    }
    rows = [
        (found[key][0], found[key][1], score, *found[key][2:])
        for key, score in ranked
        if key in found
    ]
    leads = leads or {}
    worded = [row[3] for row in rows if row[0] not in leads]
    texts = iter(snippet.snippets(highlight, worded) if worded else [])
    return _hits(
        [
            (
                *row[:3],
                query.unspaced(
                    snippet.lead(row[3], leads[row[0]]) if row[0] in leads else next(texts)
                ),
                *row[4:],
            )
            for row in rows
        ]
    )


def _recent(
    conn: sqlite3.Connection, where: list[str], params: list[object], *, limit: int, offset: int
) -> Results:
    clause = " AND ".join(["n.is_note = 1", *where])
    (total,) = conn.execute(f"SELECT count(*) FROM notes n WHERE {clause}", params).fetchone()
    # The page is picked by rowid first and only its notes get their tags: SQLite builds
    # every column of every row it sorts, so under path rules (whose view leaves the mtime
    # index unused) the tags of 1,250 notes were gathered for a page of 25 (5.0 ms, now
    # close to the whole vault's 0.6).
    page = (
        f"SELECT n.rowid AS id FROM notes n WHERE {clause}"
        " ORDER BY n.mtime DESC, n.path LIMIT ? OFFSET ?"
    )
    rows = conn.execute(
        f"SELECT n.path, n.title, 0.0, '', n.mtime, n.size, {TAGS}, 1 FROM ({page}) p"
        " JOIN notes n ON n.rowid = p.id ORDER BY n.mtime DESC, n.path",
        [*params, limit, offset],
    ).fetchall()
    return Results(total, _hits(rows))


RARE_TAG = 1000
"""A tag on at most this many notes is a list each match is looked up in; a commoner one is
looked for in each match's own tags (at 50,000 notes, gathering 46,000 tagged notes for a
rare word took 83 ms, looking at its few matches' tags 0.2; for a common word and a tag on
450 notes a search took 4.7 against 11.4 ms)."""

_TAGGED = "SELECT t.path FROM tags t WHERE t.tag = ? OR (t.tag >= ? AND t.tag < ?)"


_ISO_DAY = "[0-9][0-9][0-9][0-9]-[0-1][0-9]-[0-3][0-9]"


def _day(ns: int) -> str:
    """The day of a moment in ns in this process's time zone, the one the node reads
    `yesterday` or `in March` in (their bounds are its midnights), as YYYY-MM-DD (clamped
    to years 0001-9999)."""
    try:
        return dt.datetime.fromtimestamp(ns / 1e9).date().isoformat()
    except (OverflowError, OSError, ValueError):
        return "0000-00-00" if ns < 0 else "9999-99-99"


def _where(conn: sqlite3.Connection, filters: Filters) -> tuple[list[str], list[object]]:
    where: list[str] = []
    params: list[object] = []
    if filters.prefix.strip():
        prefix = paths.clean(filters.prefix)
        where.append(r"n.path LIKE ? ESCAPE '\'")
        params.append(like_escape(prefix) + "/%")
    if filters.glob.strip():
        where.append("n.path GLOB ?")
        params.append(filters.glob.strip())
    # A note's own date (frontmatter `updated`, an ISO date) before its file's: a vault
    # copied or checked out anew has every file changed today.
    for bound, since in ((filters.modified_after_ns, True), (filters.modified_before_ns, False)):
        if bound is not None:
            op = ">=" if since else "<"
            own = "n.created" if filters.dated_by == "created" else "n.updated"
            where.append(f"CASE WHEN {own} GLOB '{_ISO_DAY}*' THEN substr({own}, 1, 10)"
                         f" {op} ? ELSE n.mtime {op} ? END")  # fmt: skip
            moment = min(max(bound, -(2**63)), 2**63 - 1)  # SQLite ints
            params += [_day(moment), moment]
    for tag in filters.tags:
        wanted = normalize_tag(tag)
        if wanted:
            # `tag` or anything under `tag/`: '0' is the character after '/', so the
            # range is exactly the nested tags and both halves can use an index.
            tagged = [wanted, wanted + "/", wanted + "0"]
            if _rare(conn, tagged):
                where.append(f"n.path IN ({_TAGGED})")
            else:
                where.append(
                    "EXISTS (SELECT 1 FROM tags t WHERE t.path = n.path"
                    " AND (t.tag = ? OR (t.tag >= ? AND t.tag < ?)))"
                )
            params += tagged
    return where, params


def _rare(conn: sqlite3.Connection, tagged: list[str]) -> bool:
    """Whether a tag and its nested tags are on at most RARE_TAG notes: from the totals,
    or under path rules by counting the visible ones up to one past it (the totals count
    every note, and the choice must not depend on notes the caller cannot see)."""
    if scope.current() is None:
        (count,) = conn.execute(
            "SELECT coalesce(sum(notes), 0) FROM tag_totals"
            " WHERE tag = ? OR (tag >= ? AND tag < ?)",
            tagged,
        ).fetchone()
    else:
        (count,) = conn.execute(
            f"SELECT count(*) FROM ({_TAGGED} LIMIT ?)", [*tagged, RARE_TAG + 1]
        ).fetchone()
    return bool(count <= RARE_TAG)


def _hits(rows: list[tuple]) -> list[Hit]:  # type: ignore[type-arg]
    return [
        Hit(
            path,
            title,
            round(score, 4),
            snippet,
            tags.split("\x1f") if tags else [],
            modified(mtime),
            size,
            kind="note" if is_note else "attachment",
        )
        for path, title, score, snippet, mtime, size, tags, is_note in rows
    ]


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
