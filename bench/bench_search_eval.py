"""How well note_search answers real questions: bench/eval/questions.yaml over the Obsidian
Help vault, per kind of question (lexical, paraphrase, howto, crosslang) and per search mode.

Modes: `fts` is the search as it was (every word must occur, FTS5 syntax), `keyword` the
natural-language keyword search (any word, word variants), `semantic` the vectors of the
bundled model alone, `hybrid` (the default) both fused — by score, and by RRF for
comparison. MRR@10, nDCG@10 (binary gains) and Recall@10, for the dev questions and,
separately, the held-out ones that were never looked at while tuning; then latency per
mode over all questions, and the embedding throughput.
"""

from __future__ import annotations

import math
import shutil
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import structlog
from ruamel.yaml import YAML

from vault_core import embedding, hybrid, search
from vault_core.errors import InvalidArgumentError
from vault_core.index import Index
from vault_core.testing import corpus_dir
from vault_core.vectors import VectorStore

HERE = Path(__file__).resolve().parent
QUESTIONS = HERE / "eval" / "questions.yaml"
KINDS = ("lexical", "paraphrase", "howto", "crosslang")
K = 10

Ranker = Callable[[str], list[str]]


def load() -> list[dict[str, object]]:
    questions: list[dict[str, object]] = YAML(typ="safe").load(QUESTIONS.read_text())["questions"]
    return questions


def metrics(ranked: list[str], relevant: list[str]) -> tuple[float, float, float]:
    """MRR@K, nDCG@K and Recall@K of one ranking."""
    top = ranked[:K]
    hits = [i for i, path in enumerate(top) if path in relevant]
    mrr = 1 / (hits[0] + 1) if hits else 0.0
    dcg = sum(1 / math.log2(i + 2) for i in hits)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(K, len(relevant))))
    return mrr, dcg / ideal, len(hits) / len(relevant)


def rankers(index: Index, vectors: VectorStore) -> dict[str, Ranker]:
    def keyword(syntax: search.Syntax) -> Ranker:
        def rank(question: str) -> list[str]:
            try:
                found = search.search(index, question, limit=K, syntax=syntax)
            except InvalidArgumentError:
                return []  # the old search refused it: nothing found
            return [hit.path for hit in found.hits]

        return rank

    def by(mode: hybrid.Mode, fusion: hybrid.Fusion = "score") -> Ranker:
        def rank(question: str) -> list[str]:
            hybrid.FUSION = fusion
            found = hybrid.find(index, vectors, question, limit=K, mode=mode)
            hybrid.FUSION = "score"
            return [hit.path for hit in found.results.hits]

        return rank

    return {
        "fts (before)": keyword("fts"),
        "keyword": keyword("natural"),
        "semantic": by("semantic"),
        "hybrid (rrf)": by("hybrid", "rrf"),
        "hybrid": by("hybrid"),
    }


def embedded(index: Index) -> VectorStore:
    """The corpus's vectors, made by the background worker; prints its throughput."""
    embedder = embedding.shared(embedding.BUNDLED)
    assert embedder is not None
    started = time.perf_counter()
    vectors = VectorStore(index, embedder).start()
    while not vectors.ready():
        time.sleep(0.05)
    seconds = time.perf_counter() - started
    progress = vectors.progress()
    print(f"  embedded {progress.total} notes with {progress.model} in {seconds:.2f} s"
          f" ({progress.total / seconds:.0f} notes/s, background worker)")  # fmt: skip
    return vectors


def evaluate(rank: Ranker, questions: list[dict[str, object]]) -> dict[str, tuple[float, ...]]:
    per_kind: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
    for question in questions:
        ranked = rank(str(question["question"]))
        scores = metrics(ranked, list(question["relevant"]))  # type: ignore[call-overload]
        per_kind[str(question["kind"])].append(scores)
        per_kind["all"].append(scores)
    return {
        kind: (*(statistics.fmean(s[i] for s in rows) for i in range(3)), len(rows))
        for kind, rows in per_kind.items()
    }


def table(title: str, results: dict[str, dict[str, tuple[float, ...]]]) -> None:
    print(f"  {title}: MRR@10 / nDCG@10 / Recall@10 (questions)")
    print(f"  {'mode':<14}" + "".join(f"{kind:>22}" for kind in (*KINDS, "all")))
    for mode, by_kind in results.items():
        cells = []
        for kind in (*KINDS, "all"):
            mrr, ndcg, recall, n = by_kind.get(kind, (0.0, 0.0, 0.0, 0))
            cells.append(f"{mrr:.2f}/{ndcg:.2f}/{recall:.2f} ({n:>2})".rjust(22))
        print(f"  {mode:<14}" + "".join(cells))


def latency(rank: Ranker, questions: list[dict[str, object]]) -> tuple[float, float]:
    times = []
    for _ in range(3):
        for question in questions:
            started = time.perf_counter()
            rank(str(question["question"]))
            times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.95)]


def main() -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))
    questions = load()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "help"
        shutil.copytree(corpus_dir(), root)
        index = Index.open(root, "help")
        index.reconcile()
        vectors = embedded(index)
        modes = rankers(index, vectors)
        for split in ("dev", "held_out"):
            chosen = [q for q in questions if q["split"] == split]
            table(split, {mode: evaluate(rank, chosen) for mode, rank in modes.items()})
        print("  latency over all questions (ms):")
        for mode, rank in modes.items():
            p50, p95 = latency(rank, questions)
            print(f"    {mode:<14} p50 {p50:6.2f}  p95 {p95:6.2f}")
        vectors.stop()
        index.close()


if __name__ == "__main__":
    main()
