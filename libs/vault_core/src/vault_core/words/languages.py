"""The language a note is written in, and the one a question is asked in (py3langid: a
naive Bayes model of byte n-grams over 97 languages, which ships in its wheel; numpy only).

A note's language is guessed once, when it is indexed: by the model from its title and the
start of its body when it has a translation key (it is one of several translations, and
which one answers a question depends on it), else roughly, by the function words of seven
languages (`rough`: the model took 2 ms a note on the shared machine, a 50,000-note vault's
cold index 100 s more). A question is short: its guess counts only when the languages the
vault's notes are in make it likely (`of_question`), else its language decides nothing.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Collection
from typing import Any

from vault_core.words.stopwords import STOPWORDS

SAMPLE = 300
"""Characters of a note's text its language is guessed from: on the multilingual Obsidian
Help vault, 42 of 6,279 notes guessed as another language (22 of them Traditional Chinese
as Cantonese), against 23 with 600 characters and 172 with 160."""
CODES = {
    "english": "en",
    "german": "de",
    "french": "fr",
    "spanish": "es",
    "italian": "it",
    "portuguese": "pt",
    "dutch": "nl",
}
CONFIDENT = 0.5
"""Share of the probability (among the vault's languages) a question's best guess must have.
On bench/eval's multilingual dev questions every guess above it was right; below it were
short lists of English terms ("canvas file format json" reads 0.18 English)."""

_WORD = re.compile(r"[^\W_]+")
_model: list[Any] = []
_lock = threading.Lock()


def _identifier() -> Any:
    with _lock:
        if not _model:
            from py3langid.langid import MODEL_FILE, LanguageIdentifier  # noqa: PLC0415

            _model.append(LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True))
        return _model[0]


def of_note(title: str, body: str) -> str:
    """The ISO 639-1 code of the language a note is written in (its best guess)."""
    label: str = _identifier().classify(f"{title}\n{body[:SAMPLE]}")[0]
    return label


def rough(body: str) -> str:
    """The language whose function words the start of `body` uses most, "" when none."""
    words = [w.lower() for w in _WORD.findall(body[:SAMPLE])]
    scores = {code: sum(w in STOPWORDS[name] for w in words) for name, code in CODES.items()}
    best = max(scores, key=lambda code: scores[code])
    return best if scores[best] else ""


def of_question(question: str, languages: Collection[str]) -> str | None:
    """The language of `question` among `languages` (those of the vault's notes), or None
    when no guess is CONFIDENT."""
    if not question.strip() or not languages:
        return None
    ranked = [(label, p) for label, p in _identifier().rank(question) if label in languages]
    total = sum(p for _, p in ranked)
    if not ranked or total <= 0:
        return None
    label, p = ranked[0]
    return str(label) if p / total >= CONFIDENT else None
