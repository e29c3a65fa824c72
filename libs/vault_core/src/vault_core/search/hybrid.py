"""Search by words and by meaning at once: the keyword ranking and the vector ranking fused.

Each side ranks up to POOL notes (vectors: each note by its closest section); the filters
apply to both. Fusion is by score: each side's scores are divided by its best, a note's
fused score is the larger of its two plus FUSION_WEIGHT times the smaller — so a note that
only one side finds keeps its place, one both find rises, and a rare word's exact match
(the keyword side's top score) stays at the top. Reciprocal-rank fusion was measured
against it on bench/eval (bench_search_eval) and ranked worse (docs/vault-core.md).
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Literal, TypeVar

from vault_core.errors import InvalidArgumentError
from vault_core.frontmatter import normalize_tag
from vault_core.index.store import Index
from vault_core.search import focus, translations
from vault_core.search import fts as search
from vault_core.search.vectors import Match, VectorStore
from vault_core.words import terms as query

Mode = Literal["hybrid", "keyword", "semantic"]
MODES: tuple[Mode, ...] = ("hybrid", "keyword", "semantic")
POOL = 100
NEAR = POOL + POOL // 2  # the vector side's candidates, some lost to the filters
FUSION_WEIGHT = 0.3
WITH_WORDS = 0.5
"""Closeness (cosine) a note found by meaning alone must have when the words found notes
too: else a question about a word one note holds ("zanzibar") would list unrelated notes
after it (their closeness to such a word: 0.26 at best on the Obsidian Help vault; a
question's own notes: 0.54–0.57). When the words find nothing, the closest notes by meaning
are all there is to offer, and each hit says it matched by meaning. Measured on bench/eval:
nDCG@10 over the dev questions the same as without the floor."""
EVERY_WORD = 10
"""Notes holding every word of the question that make the keyword side rank them alone;
with fewer, it ranks every note holding any word (BM25, which prefers those holding more).
BM25 scores each note it matches, so a question of common words cost a pass over most of
the vault: measured on bench/eval, ranking the all-words notes alone when there are at
least 10 gives the same nDCG@10 (dev 0.64, held-out 0.71; per kind within 0.01), at least
5 lost 0.02 on dev how-to questions, at least 1 lost 0.11; at 10,000 synthetic notes it
took hybrid's p50 from 3.46 to 3.13 ms and its p95 from 7.35 to 3.96. Keyword mode keeps
ranking any word."""
KEYWORD_POOL = 30
"""Notes keyword mode ranks before it groups translations (or twice the page's end, when
more): on bench/eval's dev questions 30 and 100 gave the same nDCG@10."""
KEYWORD_EVERY_WORD = EVERY_WORD
"""Keyword mode, like hybrid's keyword side, ranks the notes holding every word alone when
there are at least this many: BM25 over every note holding any word made keyword mode
slower than hybrid at 50,000 notes (p95). On bench/eval's dev questions it costs keyword
mode's how-to questions 0.02 of nDCG@10 (0.56 → 0.54) and nothing else."""
Fusion = Literal["score", "rrf"]
FUSION: Fusion = "score"
RRF_K = 60


@dataclass
class Found:
    """A search's answer, with the mode that ranked it and, while vectors are being made,
    how far that has come."""

    results: search.Results
    mode: Mode
    embedding: dict[str, object] | None = None


def find(
    index: Index,
    vectors: VectorStore | None,
    text: str,
    filters: search.Filters | None = None,
    *,
    limit: int = 25,
    offset: int = 0,
    mode: Mode | None = None,
    syntax: search.Syntax = "natural",
) -> Found:
    """Search in `mode` (default: hybrid once every note has its vectors, else keyword)."""
    filters = filters or search.Filters()
    ready = vectors is not None and vectors.ready()
    progress = vectors.progress().as_dict() if vectors is not None and not ready else None
    if mode == "semantic" and vectors is None:
        raise InvalidArgumentError(
            "semantic search is off on this node (embedding: off); use mode keyword"
        )
    chosen: Mode = mode or ("hybrid" if ready else "keyword")
    if chosen == "hybrid" and (not ready or syntax == "fts" or not text.strip()):
        chosen = "keyword"  # FTS5 syntax and a filter-only listing are keyword searches
    if chosen == "keyword" or vectors is None:
        if syntax == "fts" or not text.strip():
            found = search.search(index, text, filters, limit, offset, syntax=syntax)
            return Found(_marked(found, "words"), "keyword", progress)
        return Found(_keyword(index, text, filters, limit, offset), "keyword", progress)
    terms = query.terms(text)
    highlight = query.highlight(terms) if terms else ""
    narrowed = _narrowed(filters)
    if chosen == "semantic":
        meaning = _meaning(index, vectors, text, filters, narrowed=narrowed)
        ranked = _translated(index, [(m.path, m.score) for m in meaning], text, filters)
        sections = {m.path: m.heading for m in meaning}
        hits = _page(
            index, ranked, offset, limit, highlight=highlight, sections=sections, by_words=set()
        )
        if len(hits) < len(ranked[offset : offset + limit]) and not narrowed:
            meaning = _passing(index, meaning, filters)  # a note gone since it was embedded
            ranked = _translated(index, [(m.path, m.score) for m in meaning], text, filters)
            hits = _page(
                index, ranked, offset, limit, highlight=highlight, sections=sections, by_words=set()
            )
        return Found(search.Results(len(ranked), hits), "semantic", progress)
    # Both sides at once: numpy, SimSIMD and SQLite let go of the interpreter while they
    # work, so a helper thread searches the vectors while this one has FTS5 rank the words.
    near = _beside(lambda: _meaning(index, vectors, text, filters, narrowed=narrowed))
    words, matching = search.ranking(index, text, filters, POOL, terms, every_first=EVERY_WORD)
    words = focus.focused(index, words, terms)  # while the helper may still search
    meaning = near()
    by_words = {path for path, _ in words}
    fused, sections = _fused(words, meaning, by_words)
    fused = _translated(index, fused, text, filters)
    hits = _page(
        index, fused, offset, limit, highlight=highlight, sections=sections, by_words=by_words
    )
    if len(hits) < len(fused[offset : offset + limit]) and not narrowed:
        fused, sections = _fused(words, _passing(index, meaning, filters), by_words)
        fused = _translated(index, fused, text, filters)
        hits = _page(
            index, fused, offset, limit, highlight=highlight, sections=sections, by_words=by_words
        )
    total = max(matching, len(fused))
    return Found(search.Results(total, hits), "hybrid")


def _keyword(
    index: Index, text: str, filters: search.Filters, limit: int, offset: int
) -> search.Results:
    """The keyword ranking alone (BM25 over the notes holding every word when there are
    KEYWORD_EVERY_WORD of them, else over those holding any), translations of one note as
    one answer as hybrid ranks them: from a pool of at least KEYWORD_POOL notes and twice
    the page's end, so the groups that collapse still leave the page full."""
    terms = query.terms(text)
    pool = max(KEYWORD_POOL, 2 * (offset + limit))
    words, matching = search.ranking(
        index, text, filters, pool, terms, every_first=KEYWORD_EVERY_WORD
    )
    ranked = _translated(index, words, text, filters)
    by_words = {path for path, _ in words}
    hits = _page(
        index, ranked, offset, limit, highlight=query.highlight(terms) if terms else "",
        sections={}, by_words=by_words,
    )  # fmt: skip
    return search.Results(matching, hits)


def _fused(
    words: list[tuple[str, float]], meaning: list[Match], by_words: set[str]
) -> tuple[list[tuple[str, float]], dict[str, str]]:
    """Both rankings fused, and the closest section of each note found by meaning."""
    if words:
        meaning = [m for m in meaning if m.path in by_words or m.score >= WITH_WORDS]
    return fuse(words, [(m.path, m.score) for m in meaning]), {m.path: m.heading for m in meaning}


def _translated(
    index: Index, ranked: list[tuple[str, float]], text: str, filters: search.Filters
) -> list[tuple[str, float]]:
    """`ranked` with translations of one note as one answer (`translations`); a translation
    pulled in beside the one that ranked is kept only if it passes the filters."""
    grouped = translations.collapse(index, ranked, text)
    had = {path for path, _ in ranked}
    added = [path for path, _ in grouped if path not in had]
    if not added or not _narrowed(filters):
        return grouped
    allowed = search.passing(index, added, filters)
    return [(path, score) for path, score in grouped if path in had or path in allowed]


def fuse(
    words: list[tuple[str, float]], meaning: list[tuple[str, float]]
) -> list[tuple[str, float]]:
    """One ranking of two (path, score) rankings, best first."""
    if FUSION == "rrf":
        fused: dict[str, float] = {}
        for ranking in (words, meaning):
            for rank, (path, _) in enumerate(ranking):
                fused[path] = fused.get(path, 0.0) + 1 / (RRF_K + rank + 1)
        return sorted(fused.items(), key=lambda item: -item[1])
    joined = _normalised(words)
    for path, y in _normalised(meaning).items():
        x = joined.get(path)  # a note one side alone finds keeps that side's score
        joined[path] = y if x is None else max(x, y) + FUSION_WEIGHT * min(x, y)
    return sorted(joined.items(), key=lambda item: (-item[1], item[0]))


def _normalised(ranking: list[tuple[str, float]]) -> dict[str, float]:
    best = max((score for _, score in ranking), default=0.0)
    return {path: score / best if best > 0 else 0.0 for path, score in ranking}


T = TypeVar("T")
HELPERS = 2
"""Threads that search vectors beside the keyword side; a search that finds them all busy
searches its vectors itself, after its words. Measured at 10,000 synthetic notes on the
2-core machine: with a core free, hybrid's p50 2.48 ms against 3.18 searching both sides in
turn (p95 2.92 against 3.89); with both cores busy with other work, 4.83 against 4.25 (the
two threads then wait for the interpreter in turn). The helper searches the vectors and
this thread the words: the other way round gained half as much (2.82 ms)."""
_helpers = threading.BoundedSemaphore(HELPERS)
_pool: list[ThreadPoolExecutor] = []
_pool_lock = threading.Lock()


def _beside(work: Callable[[], T]) -> Callable[[], T]:
    """Start `work` in a helper thread, under the caller's path rules and deadline (its
    context); returns what gives its result (or raises its error). When no helper is
    free, what it returns does the work itself."""
    if not _helpers.acquire(blocking=False):
        return work
    context = contextvars.copy_context()

    def run() -> T:
        try:
            return context.run(work)
        finally:
            _helpers.release()

    try:
        future = _executor().submit(run)
    except BaseException:
        _helpers.release()
        raise
    return future.result


def _executor() -> ThreadPoolExecutor:
    with _pool_lock:
        if not _pool:
            _pool.append(ThreadPoolExecutor(HELPERS, thread_name_prefix="search-vectors"))
        return _pool[0]


def _narrowed(filters: search.Filters) -> bool:
    """Whether the filters leave notes out (an empty tag narrows nothing)."""
    return bool(
        filters.prefix.strip()
        or filters.glob.strip()
        or filters.modified_after_ns is not None
        or filters.modified_before_ns is not None
        or any(normalize_tag(tag) for tag in filters.tags)
    )


def _meaning(
    index: Index, vectors: VectorStore, text: str, filters: search.Filters, *, narrowed: bool
) -> list[Match]:
    """The vector side: the nearest notes (the caller's path rules apply to the vectors
    themselves). With filters, those that pass them; without, every one: a note deleted
    since its vectors were made is the one thing to leave out, and the page finds that
    out (`_page` gives fewer hits), so the index is not asked about each of NEAR notes."""
    if not text.strip():
        return []
    if not narrowed:
        return vectors.nearest(text, POOL)
    return _passing(index, vectors.nearest(text, NEAR), filters)


def _passing(index: Index, near: list[Match], filters: search.Filters) -> list[Match]:
    allowed = search.passing(index, [m.path for m in near], filters)
    return [m for m in near if m.path in allowed][:POOL]


def _page(
    index: Index,
    ranked: list[tuple[str, float]],
    offset: int,
    limit: int,
    *,
    highlight: str,
    sections: dict[str, str],
    by_words: set[str],
) -> list[search.Hit]:
    """The hits of one page of `ranked`, each saying why it matched."""
    page = ranked[offset : offset + limit]
    leads = {path: sections[path] for path, _ in page if path in sections and path not in by_words}
    hits = search.hits_for(index, [path for path, _ in page], highlight, leads)
    scores = dict(page)
    return [
        _with(
            hit,
            round(scores[hit.path], 4),
            [
                m
                for m, on in (("words", hit.path in by_words), ("meaning", hit.path in sections))
                if on
            ]
            or ["translation"],
            sections.get(hit.path, ""),
        )
        for hit in hits
    ]


def _marked(found: search.Results, why: str) -> search.Results:
    return search.Results(
        found.total, [_with(hit, hit.score, [why], hit.section) for hit in found.hits]
    )


def _with(hit: search.Hit, score: float, matched: list[str], section: str) -> search.Hit:
    """The hit with its score and why it matched, built directly (1.2 µs a hit against 2.2
    for dataclasses.replace, which looks every field up by name)."""
    return search.Hit(
        hit.path,
        hit.title,
        score,
        hit.snippet,
        hit.tags,
        hit.modified,
        hit.bytes,
        matched,
        hit.kind,
        section,
    )
