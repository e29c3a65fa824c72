"""Search by words and by meaning at once: the keyword ranking and the vector ranking fused.

Each side ranks up to POOL notes (vectors: each note by its closest section); the filters
apply to both. Fusion is by score: each side's scores are divided by its best, a note's
fused score is the larger of its two plus FUSION_WEIGHT times the smaller — so a note that
only one side finds keeps its place, one both find rises, and a rare word's exact match
(the keyword side's top score) stays at the top. Reciprocal-rank fusion was measured
against it on bench/eval (bench_search_eval) and ranked worse (docs/vault-core.md).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from vault_core import query, search
from vault_core.errors import InvalidArgumentError
from vault_core.index import Index
from vault_core.vectors import Match, VectorStore

Mode = Literal["hybrid", "keyword", "semantic"]
MODES: tuple[Mode, ...] = ("hybrid", "keyword", "semantic")
POOL = 100
FUSION_WEIGHT = 0.3
WITH_WORDS = 0.5
"""Closeness (cosine) a note found by meaning alone must have when the words found notes
too: else a question about a word one note holds ("zanzibar") would list unrelated notes
after it (their closeness to such a word: 0.26 at best on the Obsidian Help vault; a
question's own notes: 0.54–0.57). When the words find nothing, the closest notes by meaning
are all there is to offer, and each hit says it matched by meaning. Measured on bench/eval:
nDCG@10 over the dev questions the same as without the floor."""
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
        found = search.search(index, text, filters, limit, offset, syntax=syntax)
        return Found(_marked(found, "words"), "keyword", progress)
    meaning = _meaning(index, vectors, text, filters)
    if chosen == "semantic":
        ranked = [(m.path, m.score) for m in meaning]
        hits = _page(index, ranked[offset : offset + limit], text,
                     {m.path: m.heading for m in meaning}, set())  # fmt: skip
        return Found(search.Results(len(ranked), hits), "semantic", progress)
    words, matching = search.ranking(index, text, filters, POOL)
    by_words = {path for path, _ in words}
    if words:
        meaning = [m for m in meaning if m.path in by_words or m.score >= WITH_WORDS]
    fused = fuse(words, [(m.path, m.score) for m in meaning])
    sections = {m.path: m.heading for m in meaning}
    hits = _page(index, fused[offset : offset + limit], text, sections, by_words)
    total = max(matching, len(fused))
    return Found(search.Results(total, hits), "hybrid")


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
    a, b = _normalised(words), _normalised(meaning)
    joined = {
        path: max(a.get(path, 0.0), b.get(path, 0.0))
        + FUSION_WEIGHT * min(a.get(path, 0.0), b.get(path, 0.0))
        for path in {*a, *b}
    }
    return sorted(joined.items(), key=lambda item: (-item[1], item[0]))


def _normalised(ranking: list[tuple[str, float]]) -> dict[str, float]:
    best = max((score for _, score in ranking), default=0.0)
    return {path: score / best if best > 0 else 0.0 for path, score in ranking}


def _meaning(index: Index, vectors: VectorStore, text: str, filters: search.Filters) -> list[Match]:
    """The vector side: nearest notes that pass the filters (and are still notes)."""
    if not text.strip():
        return []
    near = vectors.nearest(text, POOL + POOL // 2)
    allowed = search.passing(index, [m.path for m in near], filters)
    return [m for m in near if m.path in allowed][:POOL]


def _page(
    index: Index,
    ranked: list[tuple[str, float]],
    text: str,
    sections: dict[str, str],
    by_words: set[str],
) -> list[search.Hit]:
    """The hits of `ranked` (one page of it), each saying why it matched."""
    page = ranked
    terms = query.terms(text)
    hits = search.hits_for(
        index, [path for path, _ in page], query.highlight(terms) if terms else ""
    )
    scores = dict(page)
    marked = []
    for hit in hits:
        matched = [
            m
            for m, on in (("words", hit.path in by_words), ("meaning", hit.path in sections))
            if on
        ]
        marked.append(replace(hit, score=round(scores[hit.path], 4), matched=matched,
                              section=sections.get(hit.path, "")))  # fmt: skip
    return marked


def _marked(found: search.Results, why: str) -> search.Results:
    return search.Results(found.total, [replace(hit, matched=[why]) for hit in found.hits])
