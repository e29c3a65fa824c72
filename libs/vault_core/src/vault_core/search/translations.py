"""Translations of one note count as one answer, in the language the question asks in.

Notes that share a translation key (their `permalink`: a multilingual Obsidian Publish
vault gives each translation of a page the same one) are one note in many languages. A
ranking lists each such group once, where its best member ranked: by the members in the
question's language and in the vault's main language (the one most of its notes are in),
so a German question gets the German page and the original beside it; when the question's
language is unclear (a few English terms read as any language), by the member that ranked
best. Variants the guesser reads as one language (Simplified and Traditional Chinese,
Portuguese and Brazilian Portuguese) come in the order the search ranked them: the leading
one (the one written as the question is) before the original, the others after it. Every
other translation would only push other answers off the page.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import defaultdict
from collections.abc import Sequence

from vault_core import scope
from vault_core.index.store import Index
from vault_core.words import languages

Ranked = list[tuple[str, float]]

_main: dict[tuple[str, int, object], tuple[str, frozenset[str]]] = {}
_main_lock = threading.Lock()


def collapse(index: Index, ranked: Ranked, question: str) -> Ranked:
    """`ranked` with each group of translations at its best member's place, given by the
    members the question's language picks (the caller's path rules apply to them). A member
    pulled in beside the one that ranked takes its score; the caller checks it against the
    search's filters."""
    if not ranked:
        return ranked
    with index.querying() as conn:
        keys = _keys(conn, [path for path, _ in ranked])
        if not keys:
            return ranked
        main, present = _languages(index, conn)
        asked = languages.of_question(question, present)
        wanted = () if asked is None else tuple(dict.fromkeys((asked, main)))
        members = _members(conn, set(keys.values()), wanted)
    position = {path: i for i, (path, _) in enumerate(ranked)}
    found: Ranked = []
    placed: set[str] = set()
    done: set[str] = set()
    for path, score in ranked:
        key = keys.get(path)
        if key is not None and key in done:
            continue
        chosen = [path]
        if key is not None:
            done.add(key)
            each = [_in(members[key], lang, position) for lang in wanted]
            # The lead of each language first (the question's, then the original), their
            # other variants after them.
            chosen = [ours[0] for ours in each if ours] + [one for ours in each for one in ours[1:]]
            chosen = chosen or [path]
        for one in chosen:
            if one not in placed:
                placed.add(one)
                found.append((one, score))
    return found


def _in(members: list[tuple[str, str]], lang: str, position: dict[str, int]) -> list[str]:
    """The members in `lang`, the ones the search ranked first (then by path): of two
    variants the guesser reads as one language (Simplified and Traditional Chinese,
    Portuguese and Brazilian Portuguese), the one the question's own words found leads."""
    ours = [one for one, of in members if of == lang]
    return sorted(ours, key=lambda one: position.get(one, len(position)))


def _keys(conn: sqlite3.Connection, paths: Sequence[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for start in range(0, len(paths), 500):
        chunk = list(paths[start : start + 500])
        marks = ", ".join("?" * len(chunk))
        found.update(
            conn.execute(
                f"SELECT path, key FROM translations WHERE key != '' AND path IN ({marks})",
                chunk,
            ).fetchall()
        )
    return found


def _members(
    conn: sqlite3.Connection, keys: set[str], wanted: tuple[str, ...]
) -> dict[str, list[tuple[str, str]]]:
    """Each key's visible notes (the notes view holds only those) in the `wanted` languages
    (none when no language is wanted: only a group's best-ranked member is kept then)."""
    found: defaultdict[str, list[tuple[str, str]]] = defaultdict(list)
    if not wanted:
        return found
    ordered = sorted(keys)
    langs = ", ".join("?" * len(wanted))
    for start in range(0, len(ordered), 500):
        chunk = ordered[start : start + 500]
        marks = ", ".join("?" * len(chunk))
        for key, path, lang in conn.execute(
            "SELECT t.key, t.path, t.lang FROM translations t JOIN notes n ON n.path = t.path"
            f" WHERE t.key IN ({marks}) AND t.lang IN ({langs}) ORDER BY t.path",
            [*chunk, *wanted],
        ):
            found[key].append((path, lang))
    return found


def _languages(index: Index, conn: sqlite3.Connection) -> tuple[str, frozenset[str]]:
    """The language most visible notes are in, and every one they are in: kept until the
    index changes, per set of path rules."""
    cached = (str(index.db_path), index.version, scope.key())
    with _main_lock:
        if cached in _main:
            return _main[cached]
    counts = conn.execute(
        "SELECT t.lang, count(*) FROM translations t JOIN notes n ON n.path = t.path"
        " GROUP BY t.lang ORDER BY count(*) DESC, t.lang"
    ).fetchall()
    result = (str(counts[0][0]) if counts else "", frozenset(str(lang) for lang, _ in counts))
    with _main_lock:
        if len(_main) >= 64:
            _main.clear()
        _main[cached] = result
    return result
