"""The best passages for a question under a token budget: enough context to act on.

A search's hits, best first, each give one passage: the section its vectors found closest
(a hit by meaning), else the section where the question's words occur most, else the
note's opening section — from its heading to the next heading. Passages are added while
the budget lasts; the one that does not fit whole is cut at the last sentence end that
fits (`cut: sentence`), or, when no sentence end fits, at a word, ending in "…"
(`cut: mid-sentence`), and none after it. Tokens are estimated as UTF-8 bytes / 4 (about a
token for four letters of English text, or for one CJK character and a third).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from vault_core import sections
from vault_core.search import fts as search
from vault_core.words import snippet
from vault_core.words import terms as query

BYTES_PER_TOKEN = 4
SMALLEST = 24
"""Tokens a cut passage must keep at least: a shorter remainder of the budget is left
unused rather than filled with a scrap."""
SENTENCE_END = re.compile(r"[.!?。！？](?=\s|$)|[。！？]|\n\s*\n")


@dataclass(frozen=True)
class Passage:
    path: str
    title: str
    section: str  # its heading, "" for the text before the first one
    text: str
    tokens: int
    why: str  # why this note and this section were chosen
    cut: str = ""  # "", "sentence" (ends at a sentence end) or "mid-sentence" (ends in "…")


def tokens(text: str) -> int:
    """The estimated tokens of `text`: its UTF-8 bytes / 4, rounded up."""
    return -(-len(text.encode("utf-8")) // BYTES_PER_TOKEN)


def best(
    hits: Sequence[search.Hit], question: str, budget: int, body: Callable[[str], str | None]
) -> list[Passage]:
    """One passage of each hit, best first, in at most `budget` tokens all together;
    `body(path)` gives a note's body (None: it is gone, and is passed over)."""
    wanted = _forms(question)
    found: list[Passage] = []
    left = budget
    for hit in hits:
        if left < SMALLEST:
            break
        text = body(hit.path)
        if text is None:
            continue
        heading, passage, held = _section(text, hit.section, wanted)
        why = _why(hit, heading, held)
        size = tokens(passage)
        if size <= left:
            found.append(Passage(hit.path, hit.title, heading, passage, size, why))
            left -= size
            continue
        shortened, cut = _shortened(passage, left * BYTES_PER_TOKEN)
        if shortened:
            found.append(
                Passage(hit.path, hit.title, heading, shortened, tokens(shortened), why, cut)
            )
        break
    return found


def _section(body: str, heading: str, wanted: list[tuple[str, str]]) -> tuple[str, str, list[str]]:
    """The chosen section of `body`: its heading, its text, and the question's words in it."""
    lines = body.split("\n")
    starts = [(s.start, s.text) for s in sections.headings(body)]
    spans = [(0, ""), *starts] if not starts or starts[0][0] > 0 else starts
    parts = [
        (title, "\n".join(lines[start : (spans[i + 1][0] if i + 1 < len(spans) else len(lines))]))
        for i, (start, title) in enumerate(spans)
    ]
    parts = [(title, text.strip()) for title, text in parts if text.strip()] or [("", "")]
    if heading:
        for title, text in parts:
            if title == heading:
                return title, text, _held(text, wanted)
    scored = [(len(_held(text, wanted)), -i) for i, (_, text) in enumerate(parts)]
    count, at = max(scored)
    title, text = parts[-at]
    return title, text, _held(text, wanted) if count else []


def _forms(question: str) -> list[tuple[str, str]]:
    """Each word the question asks about, and the form a passage holds it in (folded: its
    common part with its stem, so "conflicts" is held by "conflict"; a CJK pair as it is)."""
    found = []
    for term in query.terms(question):
        if term.function_word:
            continue
        form = (term.mark or term.match).split(" OR ")[-1].strip('"*').replace(" ", "")
        found.append((term.text, snippet.fold(form)))
    return found


def _held(text: str, wanted: list[tuple[str, str]]) -> list[str]:
    folded = snippet.fold(text)
    return [word for word, form in wanted if form and form in folded]


def _why(hit: search.Hit, heading: str, held: list[str]) -> str:
    place = f'section "{heading}"' if heading else "its opening"
    if "meaning" in hit.matched and hit.section == heading:
        return f"closest in meaning: {place}"
    if held:
        return f"{place} holds " + ", ".join(held[:8])
    if "translation" in hit.matched:
        return f"a translation of a note that matched; {place}"
    return f"matched by {', '.join(hit.matched) or 'words'}; {place}"


def _shortened(text: str, size: int) -> tuple[str, str]:
    """`text` cut to at most `size` UTF-8 bytes: at its last sentence end, else at a word."""
    if size < SMALLEST * BYTES_PER_TOKEN:
        return "", ""
    head = text.encode("utf-8")[:size].decode("utf-8", "ignore")
    ends = [m.end() for m in SENTENCE_END.finditer(head)]
    if ends and ends[-1] >= len(head) // 4:
        return head[: ends[-1]].rstrip(), "sentence"
    room = head[: max(0, len(head) - len("…".encode()))]
    space = room.rfind(" ")
    return (room[:space] if space > 0 else room).rstrip() + "…", "mid-sentence"
