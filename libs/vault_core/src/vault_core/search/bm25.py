"""BM25 over the notes a caller with path rules may see, so no score tells of the others.

FTS5's bm25() takes its statistics — how many rows the table holds, their average length,
how many rows hold each phrase — from the whole table. Under path rules a score would then
move with notes the caller cannot see: thirty hidden notes that say "launch" cut a visible
note's score for "launch" to a quarter, and from a few scores and the visible counts the
number of hidden notes holding any word could be worked out. So a search under rules ranks
its matches (FTS5 still decides what matches) by the same formula over the visible rows
alone: FTS5's k1 = 1.2 and b = 0.75, the title weighted 8 and the body 1 (`search.RANK`),
each phrase's frequency in a row read from FTS5's instance vocabulary, a row's length and
the average from its docsize table. A vault of just the visible notes gives every note the
very score the rules give it here (tested).

The phrases are read from the FTS5 expression itself: quoted strings and bare words, a
trailing `*` a prefix, operators and column names skipped. For a NEAR group every
occurrence of its phrases counts, not only the near ones — a difference in rank, never in
what matches.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from vault_core import scope
from vault_core.index import tempschema
from vault_core.words import terms as query
from vault_core.words.snippet import fold

K1, B = 1.2, 0.75
WEIGHTS = {"title": 8.0, "body": 1.0}  # search.RANK: bm25(0.0, 8.0, 1.0), path unindexed
_WEIGHTED = (
    "CASE col " + " ".join(f"WHEN '{c}' THEN {w}" for c, w in WEIGHTS.items()) + " ELSE 0.0 END"
)
VOCABULARY = "temp.notes_vocab"
SIZES = "temp.notes_sizes"

# An FTS5 expression's pieces: a quoted string (with "" inside), a bare word, and the
# syntax around them, which says nothing about frequency.
_PIECE = re.compile(r'"((?:[^"]|"")*)"(\*?)|([^\s"()*:^+,{}]+)(\*?)(:?)|\{[^}]*\}|.', re.DOTALL)
_OPERATORS = frozenset({"AND", "OR", "NOT", "NEAR"})


@dataclass(frozen=True)
class Phrase:
    """Tokens as the index holds them (folded, CJK one character each); the last one a
    prefix when `prefix`."""

    tokens: tuple[str, ...]
    prefix: bool = False

    @property
    def match(self) -> str:
        """The phrase as an FTS5 expression of its own."""
        return '"' + " ".join(self.tokens).replace('"', '""') + '"' + ("*" if self.prefix else "")


def phrases(expression: str) -> list[Phrase]:
    """The distinct phrases of an FTS5 expression, in order."""
    found: dict[Phrase, None] = {}
    for quoted, quoted_star, bare, bare_star, colon in _PIECE.findall(expression):
        if bare and (colon or bare in _OPERATORS or bare.isdigit()):
            continue  # a column name, an operator, or NEAR's distance
        text, star = (quoted.replace('""', '"'), quoted_star) if quoted else (bare, bare_star)
        tokens = tuple(fold(t) for t in _TOKEN.findall(query.spaced(text)))
        if tokens:
            found[Phrase(tokens, bool(star))] = None
    return list(found)


_TOKEN = re.compile(r"[^\W_]+")


def ranked(
    conn: sqlite3.Connection,
    expression: str,
    scored: Iterable[tuple[int, str]],
    pool: int,
    *,
    holding: bool = False,
) -> list[tuple[int, float, str]]:
    """(rowid, score, path) of the best `pool` of the `scored` rows (rowid, path: what the
    expression and the filters matched among the visible rows), best first, ties by rowid.
    `holding`: they are every visible row holding any of the phrases (the expression is
    their disjunction and nothing filters), so they need not be looked for again."""
    candidates = dict(scored)
    if not candidates:
        return []
    found = phrases(expression)
    visible = json.dumps(list(candidates)) if holding else _visible_matches(conn, found)
    rows, total_size = _sizes(conn)
    average = total_size / rows if rows else 0.0
    lengths = _lengths(conn, candidates)
    scores = dict.fromkeys(candidates, 0.0)
    for phrase in found:
        frequencies = _frequencies(conn, phrase, visible)
        weight = _idf(rows, len(frequencies))
        for rowid, frequency in frequencies.items():
            if rowid in scores:
                norm = K1 * (1 - B + B * lengths.get(rowid, 0) / average) if average else K1
                scores[rowid] += weight * frequency * (K1 + 1) / (frequency + norm)
    best = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:pool]
    return [(rowid, score, candidates[rowid]) for rowid, score in best]


def _idf(rows: int, holding: int) -> float:
    """FTS5's idf, floored as FTS5 floors it (a phrase in most rows still counts a little)."""
    value = math.log((rows - holding + 0.5) / (holding + 0.5)) if rows else 0.0
    return value if value > 0 else 1e-6


def _visible_matches(conn: sqlite3.Connection, found: list[Phrase]) -> str:
    """The rowids of the visible rows holding any of the phrases, as a JSON array: the rows
    whose phrase counts make each phrase's idf."""
    if not found:
        return "[]"
    expression = " OR ".join(phrase.match for phrase in found)
    rowids = [
        rowid
        for (rowid,) in conn.execute(
            "SELECT notes_fts.rowid FROM notes_fts JOIN notes n ON n.rowid = notes_fts.rowid"
            " WHERE notes_fts MATCH ?",
            [expression],
        )
    ]
    return json.dumps(rowids)


def _frequencies(conn: sqlite3.Connection, phrase: Phrase, rowids: str) -> dict[int, float]:
    """The phrase's weighted frequency in each of these rows that holds it."""
    _prepare(conn)
    if len(phrase.tokens) == 1:
        term, bounds = _term_clause(phrase.tokens[0], phrase.prefix)
        return dict(
            conn.execute(
                f"SELECT doc, total({_WEIGHTED}) FROM {VOCABULARY} WHERE {term}"
                " AND doc IN (SELECT value FROM json_each(?)) GROUP BY doc",
                [*bounds, rowids],
            )
        )
    places = [_places(conn, token, rowids, False) for token in phrase.tokens[:-1]]
    places.append(_places(conn, phrase.tokens[-1], rowids, phrase.prefix))
    counted: dict[int, float] = defaultdict(float)
    for doc, column, offset in places[0]:
        if all((doc, column, offset + k) in later for k, later in enumerate(places[1:], 1)):
            counted[doc] += WEIGHTS.get(column, 0.0)
    return {doc: count for doc, count in counted.items() if count}


def _places(
    conn: sqlite3.Connection, token: str, rowids: str, prefix: bool
) -> set[tuple[int, str, int]]:
    term, bounds = _term_clause(token, prefix)
    return set(
        conn.execute(
            f"SELECT doc, col, offset FROM {VOCABULARY} WHERE {term}"
            " AND doc IN (SELECT value FROM json_each(?))",
            [*bounds, rowids],
        )
    )


def _term_clause(token: str, prefix: bool) -> tuple[str, list[str]]:
    """The vocabulary's rows for a token, or for every token it begins when `prefix`: those
    from the token up to the token with its last character the next one (past the
    surrogates, which no text holds)."""
    if not prefix:
        return "term = ?", [token]
    following = ord(token[-1]) + 1
    if following > 0x10FFFF:
        return "term >= ?", [token]
    if 0xD800 <= following <= 0xDFFF:
        following = 0xE000
    return "term >= ? AND term < ?", [token, token[:-1] + chr(following)]


def _sizes(conn: sqlite3.Connection) -> tuple[int, int]:
    """How many visible rows the full-text table holds, and their tokens in all: counted
    once per set of rules and state of the index (`PRAGMA data_version` moves when another
    connection commits), and kept in the connection's temp schema (5k rows take 7 ms)."""
    _prepare(conn)
    rules = repr(scope.key())
    (version,) = conn.execute("PRAGMA data_version").fetchone()
    held = conn.execute(
        f"SELECT rows, tokens FROM {SIZES} WHERE rules = ? AND version = ?", [rules, version]
    ).fetchone()
    if held is not None:
        return int(held[0]), int(held[1])
    rows = total = 0
    for (blob,) in conn.execute(
        "SELECT d.sz FROM notes_fts_docsize d JOIN notes n ON n.rowid = d.id"
    ):
        rows += 1
        total += _tokens(blob)
    with tempschema.writable(conn):
        conn.execute(f"DELETE FROM {SIZES} WHERE rules = ?", [rules])
        conn.execute(f"INSERT INTO {SIZES} VALUES (?, ?, ?, ?)", [rules, version, rows, total])
    return rows, total


def _lengths(conn: sqlite3.Connection, rowids: Iterable[int]) -> dict[int, int]:
    """Each row's tokens over every column, as bm25() measures a row's length."""
    return {
        rowid: _tokens(blob)
        for rowid, blob in conn.execute(
            "SELECT id, sz FROM notes_fts_docsize WHERE id IN (SELECT value FROM json_each(?))",
            [json.dumps(list(rowids))],
        )
    }


def _tokens(blob: bytes) -> int:
    """The sum of a docsize record's varints: one per column."""
    total = value = 0
    for byte in blob:
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            total, value = total + value, 0
    return total


def _prepare(conn: sqlite3.Connection) -> None:
    """The instance vocabulary of the full-text table and the table of visible sizes, in
    the connection's temp schema (made once per connection)."""
    if conn.execute("SELECT 1 FROM sqlite_temp_master WHERE name = 'notes_sizes'").fetchone():
        return
    with tempschema.writable(conn):
        conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {VOCABULARY}"
            " USING fts5vocab(main, notes_fts, instance)"
        )
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {SIZES}"
            " (rules TEXT PRIMARY KEY, version INTEGER, rows INTEGER, tokens INTEGER)"
        )
