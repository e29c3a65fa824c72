"""How well note_search answers real questions, per kind of question (lexical, paraphrase,
howto, crosslang) and per search mode: bench/eval/questions.yaml over the English Obsidian
Help vault (173 notes), and bench/eval/multilingual.yaml over the whole Help vault in all its
languages (6,279 notes).

Modes: `fts` is the search as it was (every word must occur, FTS5 syntax), `keyword` the
natural-language keyword search (any word, word variants), `semantic` the vectors of the
bundled model alone, `hybrid` (the default) both fused — by score, and by RRF for
comparison. MRR@10, nDCG@10 (binary gains) and Recall@10, for the dev questions and,
separately, the held-out ones that were never looked at while tuning; then latency per
mode over all questions, and the embedding throughput.
"""

from __future__ import annotations

import gc
import math
import shutil
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import structlog
from bench_vectors import Peak, rss_mb
from ruamel.yaml import YAML

from vault_core.errors import InvalidArgumentError
from vault_core.index.store import Index
from vault_core.search import embedding, hybrid
from vault_core.search import fts as search
from vault_core.search import vectors as vector_search
from vault_core.search.vectors import VectorStore
from vault_core.testing import corpus_dir

HERE = Path(__file__).resolve().parent
SETS = (
    ("English vault", HERE / "eval" / "questions.yaml", "obsidian-help-en"),
    ("multilingual vault", HERE / "eval" / "multilingual.yaml", "obsidian-help-multilingual"),
)
KINDS = ("lexical", "paraphrase", "howto", "crosslang")
K = 10

Ranker = Callable[[str], list[str]]


def load(path: Path) -> list[dict[str, object]]:
    questions: list[dict[str, object]] = YAML(typ="safe").load(path.read_text())["questions"]
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
                if syntax == "fts":
                    found = search.search(index, question, limit=K, syntax=syntax)
                else:  # as note_search runs it: translations grouped
                    found = hybrid.find(index, None, question, limit=K, mode="keyword").results
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


def embedded(index: Index, spec: str = embedding.BUNDLED) -> VectorStore:
    """The corpus's vectors, made by the background worker; prints its throughput."""
    before = rss_mb()
    embedder = embedding.shared(spec)
    assert embedder is not None
    started = time.perf_counter()
    with Peak() as peak:
        vectors = VectorStore(index, embedder).start()
        while not vectors.ready():
            time.sleep(0.05)
    seconds = time.perf_counter() - started
    progress = vectors.progress()
    print(f"  embedded {progress.total} notes with {progress.model} in {seconds:.2f} s"
          f" ({progress.total / seconds:.0f} notes/s, background worker): searchable by"
          f" meaning {seconds:.0f} s after the index; RSS {before:.0f} MB before (model"
          f" loaded after), at most {peak.mb:.0f} MB while embedding")  # fmt: skip
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
    """p50 and p95 over three passes, each question's vector made anew every time (a node
    keeps the last questions' vectors; a model slower than the bundled one would otherwise
    be timed without its own cost)."""
    kept, vector_search.QUESTIONS = vector_search.QUESTIONS, 0
    try:
        rank("a question not asked before")  # embedded anew, it empties the kept vectors
        return _timed(rank, questions)
    finally:
        vector_search.QUESTIONS = kept


def _timed(rank: Ranker, questions: list[dict[str, object]]) -> tuple[float, float]:
    times = []
    for _ in range(3):
        for question in questions:
            started = time.perf_counter()
            rank(str(question["question"]))
            times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.95)]


def run(root: Path, questions: list[dict[str, object]]) -> None:
    """Index and embed the vault at `root` (what its index already holds is kept), then
    print the tables and the latency of every mode."""
    index = Index.open(root, "help")
    index.reconcile()
    vectors = embedded(index)
    modes = rankers(index, vectors)
    for split in ("dev", "held_out"):
        chosen = [q for q in questions if q["split"] == split]
        table(split, {mode: evaluate(rank, chosen) for mode, rank in modes.items()})
    print("  latency over all questions (ms):")
    p50s = {}
    for mode, rank in modes.items():
        p50, p95 = latency(rank, questions)
        p50s[mode] = p50
        print(f"    {mode:<14} p50 {p50:6.2f}  p95 {p95:6.2f}")
    print(f"    hybrid/keyword p50 {p50s['hybrid'] / p50s['keyword']:.2f}x")
    gc.collect()
    print(f"  RSS after the searches {rss_mb():.0f} MB (where it settles)")
    vectors.stop()
    index.close()


def main() -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))
    for title, path, corpus in SETS:
        questions = load(path)
        print(f"  {title}: {path.name}, {len(questions)} questions")
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "help"
            shutil.copytree(corpus_dir(corpus), root)
            run(root, questions)


if __name__ == "__main__":
    main()
