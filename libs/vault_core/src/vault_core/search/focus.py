"""How closely a note holds a question's words together: its best passage's share of them.

BM25 scores a note by the question's words wherever they stand, so a release note that
says "page" in one bullet, "template" in another and "drop" in a third ranks beside a note
whose one paragraph holds all three. Hybrid search scales the keyword side's best
CANDIDATES notes by 1 - WEIGHT + WEIGHT × focus, where focus is the idf-weighted share of
the question's words that its best passage holds (a paragraph, a list item or a heading's
line: the text between blank lines, list items and headings), and every other note by
1 - WEIGHT, as if none of its passages held the words together. A question of one word is
left as it is. Measured on bench/eval's dev questions (docs/vault-core.md): paraphrase
nDCG@10 0.48 → 0.51, lexical 0.94 → 0.96, all 0.68 → 0.70, the rest within 0.01; a bonus
for the words in a passage's heading gained nothing.

The idf is counted over the notes the caller sees (the notes view under path rules), so
no weight tells of a hidden note, and kept per index version and set of rules.
"""

from __future__ import annotations

import bisect
import math
import re
import sqlite3
import threading
import unicodedata
from collections.abc import Sequence

from vault_core import scope
from vault_core.index.store import Index
from vault_core.words import terms as query

WEIGHT = 0.5
CANDIDATES = 20
"""Notes of the keyword ranking whose passages are read: measured on bench/eval's dev
questions, 20, 30 and 100 gave the same nDCG@10 within 0.01."""
LONGEST = 32_768
"""Characters of a note's body read for its passages: a 4 MiB note costs as much as a long
one."""
OCCURRENCES = 16
"""Occurrences of a word looked at in a note: a common word said a hundred times cost as
much as all the rest (on bench/eval's dev questions, 16 gave the same nDCG@10 as all of
them, lexical 0.94 → 0.96, and focus took 11 ms a question on the Help vault at load 12
against 17; 8 lost 0.02 of other-language Recall@10)."""
# A passage ends at a blank line, before a list item and before a heading.
_BOUNDS = re.compile(r"\n\s*\n|\n(?=[ \t]*(?:[-*+]|\d+[.)])\s)|\n(?=#)")
_MARKS = re.compile(r"[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")
_CJK_START = re.compile(f"[{query.CJK}]")
_KEPT = 4096

_idf: dict[tuple[str, int, object, str], float] = {}
_idf_lock = threading.Lock()


def focused(
    index: Index, words: Sequence[tuple[str, float]], terms: Sequence[query.Term]
) -> list[tuple[str, float]]:
    """`words` (a keyword ranking, best first) with each score scaled by its note's focus;
    in the order of the new scores."""
    wanted = [term for term in terms if not term.function_word]
    if len(wanted) < 2 or not words:
        return list(words)
    paths = [path for path, _ in words[:CANDIDATES]]
    with index.querying() as conn:
        weights = _weights(index, conn, wanted)
        marks = ", ".join("?" * len(paths))
        bodies = conn.execute(
            f"SELECT n.path, substr(f.body, 1, {LONGEST}) FROM notes n"
            f" JOIN notes_fts f ON f.rowid = n.rowid WHERE n.path IN ({marks})",
            paths,
        ).fetchall()
    whole = sum(weights)
    if whole <= 0:
        return list(words)
    forms = [_form(term) for term in wanted]
    # A question in ASCII finds its words by lower case alone: folding every note's
    # accents away was a third of the time, for the odd "café" a "cafe" would find.
    lower = all(term.text.isascii() for term in wanted)
    focus = {path: _best(body, forms, weights, lower=lower) / whole for path, body in bodies}
    rescored = [
        (path, score * (1 - WEIGHT + WEIGHT * focus.get(path, 0.0))) for path, score in words
    ]
    return sorted(rescored, key=lambda item: -item[1])


def fold(text: str) -> str:
    """`snippet.fold`'s lower case without diacritics, faster over a whole note: ASCII text
    is only lowered, the rest decomposed and its combining marks dropped by one pattern."""
    if text.isascii():
        return text.lower()
    return _MARKS.sub("", unicodedata.normalize("NFD", text)).lower()


def _form(term: query.Term) -> str:
    """The form of a term a passage holds (its widest: the common part with its stem)."""
    form = fold((term.mark or term.match).split(" OR ")[-1].strip('"*'))
    return form.replace(" ", "") if _CJK_START.match(form) else form


def _best(
    body: str, forms: Sequence[str], weights: Sequence[float], *, lower: bool = False
) -> float:
    """The largest sum of the weights of the forms one passage of `body` holds (`lower`:
    compared in lower case only, not folded)."""
    text = query.unspaced(body)
    text = text.lower() if lower else fold(text)
    bounds = [match.start() for match in _BOUNDS.finditer(text)]
    held: dict[int, set[int]] = {}
    for i, form in enumerate(forms):
        if not form:
            continue
        cjk = bool(_CJK_START.match(form))
        at, seen = text.find(form), 0
        while at >= 0 and seen < OCCURRENCES:
            if cjk or at == 0 or not text[at - 1].isalnum():  # a word's start
                held.setdefault(bisect.bisect_right(bounds, at), set()).add(i)
                seen += 1
            at = text.find(form, at + len(form))
    return max((sum(weights[i] for i in found) for found in held.values()), default=0.0)


def _weights(index: Index, conn: sqlite3.Connection, terms: Sequence[query.Term]) -> list[float]:
    """Each term's idf over the visible notes (BM25's: ln(1 + (N - n + 0.5) / (n + 0.5)))."""
    rules = scope.key()
    cached = (str(index.db_path), index.version, rules)
    with _idf_lock:
        known = {term.match: _idf.get((*cached, term.match)) for term in terms}
    missing = [match for match, weight in known.items() if weight is None]
    if missing:
        visible = scope.current() is not None
        (total,) = conn.execute("SELECT count(*) FROM notes").fetchone()
        counting = (
            "SELECT count(*) FROM notes_fts JOIN notes n ON n.rowid = notes_fts.rowid"
            " WHERE notes_fts MATCH ?"
            if visible
            else "SELECT count(*) FROM notes_fts WHERE notes_fts MATCH ?"
        )
        for match in missing:
            (holding,) = conn.execute(counting, [match]).fetchone()
            known[match] = math.log(1 + (total - holding + 0.5) / (holding + 0.5))
        with _idf_lock:
            if len(_idf) + len(missing) > _KEPT:
                _idf.clear()
            _idf.update({(*cached, match): known[match] or 0.0 for match in missing})
    return [known[term.match] or 0.0 for term in terms]
