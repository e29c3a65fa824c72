"""Search snippets built from a bounded window of each hit's body.

FTS5's snippet() scores every match of a note against every other one, so a
note holding one word 800,000 times held a search for minutes. Here the first
match is found by a linear scan, and snippet() runs on at most WINDOW characters
around it, in a private in-memory table with the index's tokenizer: FTS5's own
highlighting, with the work per hit bounded whatever a note holds.
"""

from __future__ import annotations

import bisect
import re
import sqlite3
import threading
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

WINDOW = 1024
"""Characters of a body one snippet looks at: FTS5's snippet cost grows with the square
of the matches inside them, so this bounds it (a quarter of a million pairs at most)."""
BEFORE = 200  # of them, ahead of the match, so the snippet can centre it
TOKENIZER = "unicode61 remove_diacritics 2"  # the index's (schema.py): the same words match
TOKENS = 24
OPEN, CLOSE, ELLIPSIS = "<<", ">>", " … "
_CANDIDATES = 32  # matches tried for a window that holds every term of the query
_MAX_TERMS = 32
_OPERATORS = frozenset({"AND", "OR", "NOT", "NEAR"})
_QUERY_TOKEN = re.compile(r'"((?:[^"]|"")*)"\s*(\*?)|([^\s"()*:^+{},]+)\s*(\*?)(\s*:)?')
_WORD = re.compile(r"[^\W_]+")
_SPACE = re.compile(r"\s")
_COMBINING = "[\u0300-\u036f]*"


@dataclass(frozen=True)
class Term:
    """One word of a query, folded as the tokenizer folds it; `prefix` for `word*`."""

    word: str
    prefix: bool = False

    def pattern(self) -> str:
        chars = "".join(_char_class(ch) + _COMBINING for ch in self.word)
        return rf"(?<![^\W_]){chars}" + ("" if self.prefix else r"(?![^\W_])")

    def query(self) -> str:
        return f'"{self.word}"' + (" *" if self.prefix else "")


@dataclass(frozen=True)
class Window:
    """The part of a body a snippet is made from: `text` is body[start:end]."""

    text: str
    start: int
    end: int
    size: int  # of the whole body

    def framed(self, snippet: str) -> str:
        """FTS5 saw only the window: mark the cut ends as it marks its own."""
        if self.start > 0 and not snippet.startswith(ELLIPSIS):
            snippet = ELLIPSIS + snippet.lstrip()
        if self.end < self.size and not snippet.endswith(ELLIPSIS):
            snippet = snippet.rstrip() + ELLIPSIS
        return snippet


def terms(query: str) -> list[Term]:
    """The words of an FTS5 query, operators and column names left out."""
    found: list[Term] = []
    for match in _QUERY_TOKEN.finditer(query):
        quoted, quoted_star, bare, bare_star, column = match.groups()
        if bare is not None and (column or bare in _OPERATORS):
            continue
        words = _WORD.findall(fold(quoted.replace('""', '"') if bare is None else bare))
        star = bool(quoted_star if bare is None else bare_star)
        found += [Term(w, star and i == len(words) - 1) for i, w in enumerate(words)]
    return list(dict.fromkeys(found))[:_MAX_TERMS]


def fold(text: str) -> str:
    """Lower case without diacritics, as unicode61 with `remove_diacritics 2` compares words.

    Canonical decomposition only, and lower() rather than casefold(): the tokenizer
    keeps ß and ligatures as they are.
    """
    decomposed = unicodedata.normalize("NFD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).lower()


def window(body: str, wanted: Sequence[Term]) -> Window:
    """At most WINDOW characters of `body`: around the first match that holds the most terms.

    Linear in the body: one scan to the first match, then at most _CANDIDATES
    windows, each searched once per term; a match inside the first half of the window
    just tried starts no window of its own (it would be nearly the same one). No match
    at all gives the start of the body.
    """
    if len(body) <= WINDOW or not wanted:
        return _cut(body, 0)
    if body.isascii():  # nothing to decompose: lower case is the whole fold (a third faster)
        return _window_by_offsets(body, body.lower(), wanted)
    folded = _COMBINING_MARK.sub("", unicodedata.normalize("NFD", body)).lower()
    if len(folded) == len(body):  # letter for letter: offsets in `folded` are offsets in body
        return _window_by_offsets(body, folded, wanted)
    text = body
    each = [re.compile(t.pattern(), re.IGNORECASE) for t in wanted]
    anywhere = re.compile("|".join(t.pattern() for t in wanted), re.IGNORECASE)
    best: Window | None = None
    best_count = 0
    tried = 0
    skip_to = 0
    for match in anywhere.finditer(text):
        if match.start() < skip_to:
            continue
        if tried == _CANDIDATES:
            break
        tried += 1
        candidate = _cut(body, max(0, match.start() - BEFORE))
        skip_to = candidate.start + WINDOW // 2
        count = sum(1 for p in each if p.search(text, candidate.start, candidate.end))
        if count > best_count:
            best, best_count = candidate, count
        if count == len(each):
            break
    return best or _cut(body, 0)


def _window_by_offsets(body: str, folded: str, wanted: Sequence[Term]) -> Window:
    """`window` for a body whose folded form keeps its offsets: each word found by a plain
    literal search, the candidate windows scored by bisecting each word's offsets."""
    found = [_offsets(folded, term) for term in wanted]
    starts = sorted(offset for offsets in found for offset in offsets)
    best: Window | None = None
    best_count, tried, skip_to = 0, 0, 0
    for offset in starts:
        if offset < skip_to:
            continue
        if tried == _CANDIDATES:
            break
        tried += 1
        candidate = _cut(body, max(0, offset - BEFORE))
        skip_to = candidate.start + WINDOW // 2
        count = sum(
            1
            for offsets in found
            if bisect.bisect_left(offsets, candidate.start)
            < bisect.bisect_left(offsets, candidate.end)
        )
        if count > best_count:
            best, best_count = candidate, count
        if count == len(found):
            break
    return best or _cut(body, 0)


def _offsets(folded: str, term: Term, most: int = 4096) -> list[int]:
    """Where the word starts in `folded`, at a word boundary (at most `most` of them)."""
    found: list[int] = []
    size = len(term.word)
    at = folded.find(term.word)
    while at >= 0 and len(found) < most:
        after = at + size
        if (at == 0 or not _is_word(folded[at - 1])) and (
            term.prefix or after == len(folded) or not _is_word(folded[after])
        ):
            found.append(at)
        at = folded.find(term.word, at + 1)
    return found


def _is_word(ch: str) -> bool:
    return ch.isalnum()


_COMBINING_MARK = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")


def _cut(body: str, start: int) -> Window:
    if start > 0:
        space = _SPACE.search(body, start, start + BEFORE)
        start = space.end() if space else start
    end = min(len(body), start + WINDOW)
    if end < len(body):
        space = _SPACE.search(body[end - BEFORE : end][::-1])
        end = end - space.start() - 1 if space else end
    return Window(body[start:end], start, end, len(body))


def snippets(query: str, bodies: Sequence[str]) -> list[str]:
    """One snippet per body for the FTS5 `query` the index matched them with.

    The window is matched with the query itself first; a window that holds only
    some of its terms (an AND of words far apart) gets those terms highlighted.
    """
    wanted = terms(query)
    windows = [window(body, wanted) for body in bodies]
    conn = _table()
    conn.execute("BEGIN")
    try:  # rolled back: the table is empty again for this thread's next search
        conn.executemany(
            "INSERT INTO w (rowid, body, anchor) VALUES (?, ?, 'x')",
            [(i, w.text) for i, w in enumerate(windows)],
        )
        found = _highlighted(conn, query)
        missing = [i for i, text in found.items() if OPEN not in text]
        if missing and wanted:
            any_term = " OR ".join(t.query() for t in wanted)
            found.update(
                (i, text) for i, text in _highlighted(conn, any_term).items() if i in missing
            )
    finally:
        conn.execute("ROLLBACK")
    return [w.framed(found.get(i, "")) for i, w in enumerate(windows)]


LEAD = 240  # characters at most of a section's opening words


def lead(body: str, heading: str) -> str:
    """A snippet for a note found by meaning, not by its words: the first TOKENS words of
    the section under `heading` (the body's start for ""), up to the next heading, with
    FTS5's ellipses where it is cut. No FTS5 and no scan of the whole body: the heading is
    looked for as a line. A section of nothing but its heading shows the heading."""
    start = _section_start(body, heading) if heading else 0
    text = body[start : start + LEAD * 4]
    following = _HEADING_LINE.search(text, 1)
    words = text[: following.start() if following else None].split(maxsplit=TOKENS)
    if not words:
        return heading
    shown = " ".join(words[:TOKENS])
    cut = len(words) > TOKENS or (following is None and start + len(text) < len(body))
    if len(shown) > LEAD:
        shown, cut = shown[:LEAD].rsplit(" ", 1)[0], True
    return (ELLIPSIS.lstrip() if start > 0 else "") + shown + (ELLIPSIS if cut else "")


_HEADING_LINE = re.compile(r"^#{1,6}[ \t]", re.MULTILINE)
_HEADING_TEXT = re.compile(r"^#{1,6}([ \t].*)$", re.MULTILINE)


def _section_start(body: str, heading: str) -> int:
    """Where the first heading line `heading` (closing hashes and spaces aside) ends, or 0.
    One pattern made once for every heading: a pattern of each heading cost a compile per
    hit (half a millisecond a page of hits found by meaning)."""
    for line in _HEADING_TEXT.finditer(body):
        text = line.group(1)
        # At least one space after the hashes; the heading may begin with more of them.
        for at in range(1, len(text) - len(text.lstrip(" \t")) + 1):
            if text.startswith(heading, at) and not text[at + len(heading) :].strip(" \t#"):
                return line.end()
    return 0


_LOCAL = threading.local()


def _table() -> sqlite3.Connection:
    """This thread's in-memory table of windows, made once: its statements stay prepared."""
    conn: sqlite3.Connection | None = getattr(_LOCAL, "conn", None)
    if conn is None:
        conn = sqlite3.connect(":memory:", isolation_level=None)
        conn.execute(
            "CREATE VIRTUAL TABLE w USING fts5(path, title, body, anchor,"
            f" tokenize = '{TOKENIZER}')"
        )
        _LOCAL.conn = conn
    return conn


def _highlighted(conn: sqlite3.Connection, query: str) -> dict[int, str]:
    """Every window's snippet; `anchor:x` makes each row match, so none is left out."""
    sql = (
        f"SELECT rowid, snippet(w, 2, '{OPEN}', '{CLOSE}', '{ELLIPSIS}', {TOKENS})"
        " FROM w WHERE w MATCH ?"
    )
    try:
        rows = conn.execute(sql, [f"({query}) OR anchor:x"]).fetchall()
    except sqlite3.OperationalError:
        rows = conn.execute(sql, ["anchor:x"]).fetchall()  # the query names columns w lacks
    return dict(rows)


def _char_class(ch: str) -> str:
    variants = _VARIANTS.get(ch)
    return f"[{ch}{variants}]" if variants else re.escape(ch)


def _variants() -> dict[str, str]:
    """Each ASCII letter with the Latin letters that fold to it (é → e, Å → a)."""
    found: dict[str, str] = {}
    for code in (*range(0xC0, 0x250), *range(0x1E00, 0x1F00)):
        base = fold(chr(code))
        if len(base) == 1 and "a" <= base <= "z":
            found[base] = found.get(base, "") + chr(code)
    return found


_VARIANTS = _variants()
