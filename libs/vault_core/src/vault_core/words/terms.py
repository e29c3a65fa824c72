"""A question in plain words as FTS5 terms: never a syntax error, word variants found.

Agents ask "how do I see which notes link to this one?", not FTS5 expressions. Each word
becomes a term that matches the word itself, its stem (Snowball, in the question's
language) and, for longer stems, every word that starts with it ("interval" finds
"intervals"); function words ("how", "do", "the") are dropped unless nothing else is
left; punctuation is text, never syntax; `"quoted words"` stay a phrase and `word*` a
prefix. Runs of Chinese, Japanese or Korean characters match as phrases of single
characters, which is how the index stores them (`spaced`).
"""

from __future__ import annotations

import functools
import re
import threading
from dataclasses import dataclass
from typing import Any

import snowballstemmer

from vault_core.words.snippet import fold
from vault_core.words.stopwords import STOPWORDS

# Ideographs, kana and hangul: written without spaces between words, so the index keeps
# each character a token of its own (split by an invisible U+200B, which FTS5 treats as a
# separator) and a query matches a run of them as a phrase.
CJK = (
    "\u2e80-\u2fdf\u3040-\u30ff\u3100-\u312f\u3190-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f"
)
_CJK_PAIR = re.compile(f"(?<=[{CJK}])(?=[{CJK}])")
_CJK_RUN = re.compile(f"[{CJK}]+")
SEPARATOR = "\u200b"

# What a word is, as FTS5's unicode61 tokenizer sees it: letters, digits, marks. A quoted
# phrase and a trailing * are the two pieces of syntax plain-word users expect.
_PIECE = re.compile(rf'"([^"]*)"|([{CJK}]+)|([^\W_{CJK}]+(?:[\'’][^\W_{CJK}]+)*)(\*?)')
_TOKEN = re.compile(r"[^\W_]+")
MIN_PREFIX = 4
MAX_TERMS = 32

LANGUAGES = ("english", "german", "french", "spanish", "italian", "portuguese", "dutch")


@dataclass(frozen=True)
class Term:
    """One thing the question asks for: `text` as typed, `match` its FTS5 expression, `mark`
    the one form a snippet highlights (the widest; `match` itself when it has one form)."""

    text: str
    match: str
    function_word: bool = False
    mark: str = ""


def spaced(text: str) -> str:
    """The text as the index stores it: CJK characters split into single-character tokens."""
    return _CJK_PAIR.sub(SEPARATOR, text) if _CJK_RUN.search(text) else text


def unspaced(text: str) -> str:
    return text.replace(SEPARATOR, "")


def terms(question: str) -> list[Term]:
    """The terms of a question, function words dropped unless they are all it has."""
    language = guess_language(question)
    found: list[Term] = []
    seen: set[str] = set()
    for phrase, cjk, word, star in _PIECE.findall(question):
        for term in _bigrams(cjk) if cjk else [_term(phrase, word, star, language)]:
            if term is not None and term.match not in seen:
                seen.add(term.match)
                found.append(term)
    meaningful = [term for term in found if not term.function_word]
    return (meaningful or found)[:MAX_TERMS]


def any_of(found: list[Term]) -> str:
    """An FTS5 expression matching a note that has at least one of the terms."""
    return " OR ".join(f"({term.match})" for term in found)


def all_of(found: list[Term]) -> str:
    """An FTS5 expression matching a note that has every one of the terms (in any form)."""
    return " AND ".join(f"({term.match})" for term in found)


def highlight(found: list[Term]) -> str:
    """The terms as a snippet marks them: one form each (the prefix where there is one)."""
    return " OR ".join(term.mark or term.match for term in found)


def guess_language(question: str) -> str:
    """The language whose function words the question uses most (English when none)."""
    words = [w.lower() for w in _TOKEN.findall(question) if len(w) > 1]
    scores = {lang: sum(w in STOPWORDS[lang] for w in words) for lang in LANGUAGES}
    best = max(LANGUAGES, key=lambda lang: scores[lang])
    return best if scores[best] > scores["english"] else "english"


def _bigrams(run: str) -> list[Term | None]:
    """A run of CJK characters as its overlapping pairs: words there are not spaced, and a
    question's run seldom stands as a whole in a note."""
    if len(run) <= 2:
        return [Term(run, _quote(" ".join(run)))]
    return [Term(run[i : i + 2], _quote(f"{run[i]} {run[i + 1]}")) for i in range(len(run) - 1)]


def _term(phrase: str, word: str, star: str, language: str) -> Term | None:
    if phrase:
        tokens = _TOKEN.findall(spaced(phrase).replace(SEPARATOR, " "))
        return Term(phrase, _quote(" ".join(tokens))) if tokens else None
    lowered = word.lower()
    tokens = _TOKEN.findall(lowered)  # "don't" → don, t: the tokenizer splits at the quote
    if len(tokens) > 1:
        return Term(word, _quote(" ".join(tokens)), lowered in STOPWORDS[language])
    if star:
        return Term(word + "*", f"{_quote(lowered)}*")
    forms = _variants(lowered, language)
    return Term(word, " OR ".join(forms), lowered in STOPWORDS[language], forms[-1])


def _variants(word: str, language: str) -> list[str]:
    """The word, its stem, and every word starting with their common part."""
    stem = _stem(language, word)
    forms = [_quote(word)]
    if (len(stem) >= 4 or (len(stem) == 3 and language == "english")) and fold(stem) != fold(word):
        forms.append(_quote(stem))
    prefix = _common_prefix(fold(word), fold(stem))
    # Snowball spells some endings differently (properti, from property): cut that letter.
    if len(prefix) > MIN_PREFIX and prefix[-1] in "iye" and prefix == stem:
        prefix = prefix[:-1]
    if len(prefix) >= MIN_PREFIX and not prefix.isdigit():
        forms.append(f"{_quote(prefix)}*")
    return forms


def _common_prefix(a: str, b: str) -> str:
    size = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        size += 1
    return a[:size]


def _quote(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


@functools.lru_cache(maxsize=65536)
def _stem(language: str, word: str) -> str:
    stem: str = _stemmer(language).stemWord(word)
    return stem


_local = threading.local()  # a Snowball stemmer keeps state between calls: one per thread


def _stemmer(language: str) -> Any:
    stemmers: dict[str, Any] = _local.__dict__.setdefault("stemmers", {})
    if language not in stemmers:
        stemmers[language] = snowballstemmer.stemmer(language)
    return stemmers[language]
