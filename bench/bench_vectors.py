"""What hybrid search costs at size: embedding throughput, memory, and search latency by mode,
on synthetic vaults (bench/vaultgen.py) of 10,000 and 50,000 notes.

`BENCH_VECTOR_SIZES` (comma-separated) narrows the sizes. For each: the cold index, the
background worker embedding every note (notes/s, chunks/s), the process's RSS before
embedding, at most while embedding (sampled every 50 ms) and after the searches, the
vectors' bytes in the index, and p50/p95 of note_search in keyword mode (before: `fts`;
now: natural, as `note_search` runs it, translations grouped), hybrid and semantic, over
180 two-word questions asked once each (so no question's vector is kept from an earlier
round), beside what hybrid's parts take alone (the query's embedding, the vector search,
the keyword side, the passage focus, a page); then how much of hybrid's top ten and of
the 100 nearest notes stay the same when every section is ranked by its whole vector
instead of its int8 codes first.
"""

from __future__ import annotations

import os
import random
import resource
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import structlog
from vaultgen import generate

from vault_core.index.store import Index
from vault_core.search import embedding, focus, hybrid
from vault_core.search import fts as search
from vault_core.search.vectors import VectorStore
from vault_core.words import terms as query


def rss_mb() -> float:
    with Path("/proc/self/status").open() as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Peak:
    """The process's largest RSS while the block runs, sampled every 50 ms by a thread."""

    def __init__(self) -> None:
        self.mb = rss_mb()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> Peak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()
        self.mb = max(self.mb, rss_mb())

    def _sample(self) -> None:
        while not self._done.wait(0.05):
            self.mb = max(self.mb, rss_mb())


def timings(
    calls: dict[str, Callable[[str], object]], rounds: list[list[str]]
) -> dict[str, list[float]]:
    """Milliseconds of each call per question, taken in turn question by question over the
    rounds (each round starting with another call and asking questions of its own), so that
    what else the machine is doing weighs on every mode alike."""
    times: dict[str, list[float]] = {label: [] for label in calls}
    order = list(calls)
    for round_, questions in enumerate(rounds):
        turn = order[round_ % len(order) :] + order[: round_ % len(order)]
        for question in questions:
            for label in turn:
                started = time.perf_counter()
                calls[label](question)
                times[label].append((time.perf_counter() - started) * 1000)
    return times


def percentiles(times: list[float]) -> tuple[float, float]:
    ordered = sorted(times)
    return statistics.median(ordered), ordered[int(len(ordered) * 0.95)]


def figures(n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = generate(Path(tmp) / "vault", n)
        index = Index.open(root, "bench")
        started = time.perf_counter()
        index.reconcile()
        cold = time.perf_counter() - started
        before = rss_mb()
        model = embedding.shared(embedding.BUNDLED)
        assert model is not None
        started = time.perf_counter()
        with Peak() as peak:
            vectors = VectorStore(index, model).start()
            while not vectors.ready():
                time.sleep(0.1)
        seconds = time.perf_counter() - started
        with index.reading() as conn:
            (chunks, size) = conn.execute(
                "SELECT count(*), sum(length(vector)) FROM embeddings"
            ).fetchone()
            bodies = [b for (b,) in conn.execute("SELECT body FROM notes_fts LIMIT 200")]
        rng = random.Random(7)
        words = [w for b in bodies for w in b.split()[5:60] if w.isalpha() and len(w) > 4]
        rounds = [[f"{rng.choice(words)} {rng.choice(words)}" for _ in range(60)] for _ in range(3)]
        hint = query.highlight
        ten = [m.path for m in vectors.nearest(rounds[0][0], 10)]
        asked = {q: model.embed_questions([q])[0] for questions in rounds for q in questions}
        ranked = {
            q: search.ranking(
                index, q, search.Filters(), hybrid.POOL, every_first=hybrid.EVERY_WORD
            )[0]
            for questions in rounds
            for q in questions
        }
        calls: dict[str, Callable[[str], object]] = {
            "fts (before)": lambda q: search.search(index, q, limit=10, syntax="fts"),
            "keyword": lambda q: hybrid.find(index, vectors, q, limit=10, mode="keyword"),
            "hybrid": lambda q: hybrid.find(index, vectors, q, limit=10),
            "semantic": lambda q: hybrid.find(index, vectors, q, limit=10, mode="semantic"),
            "  its query embedding": lambda q: model.embed_questions([q]),
            "  its vector search": lambda q: vectors.nearest_to(asked[q], hybrid.POOL),
            "  its keyword side": lambda q: search.ranking(
                index, q, search.Filters(), hybrid.POOL, every_first=hybrid.EVERY_WORD
            ),
            "  its passage focus": lambda q: focus.focused(index, ranked[q], query.terms(q)),
            "  its page of 10": lambda q: search.hits_for(index, ten, hint(query.terms(q))),
        }
        measured = {label: percentiles(t) for label, t in timings(calls, rounds).items()}
        same_ten, same_near = agreement(index, vectors, rounds[0])
        after = rss_mb()
        print(
            f"  {n:>6} notes: cold index {cold:6.1f} s; embedded {n} notes ({chunks} chunks) in"
            f" {seconds:6.1f} s = {n / seconds:5.0f} notes/s, {chunks / seconds:5.0f} chunks/s"
        )
        print(
            f"          vectors {size / 1e6:6.1f} MB in the index; RSS {before:6.0f} MB before"
            f" embedding, {peak.mb:6.0f} MB at most while embedding, {after:6.0f} MB after the"
            f" searches (+{after - before:.0f} MB; the peak {peak.mb / after:.2f}x where it"
            " settles)"
        )
        for label, (p50, p95) in measured.items():
            print(f"          {label:<22} p50 {p50:7.2f} ms  p95 {p95:7.2f} ms")
        fts, natural, fused = (measured[k][0] for k in ("fts (before)", "keyword", "hybrid"))
        print(
            f"          hybrid/fts p50 {fused / fts:5.2f}x, keyword/fts p50 {natural / fts:5.2f}x,"
            f" hybrid/keyword p50 {fused / natural:5.2f}x, keyword/hybrid p95"
            f" {measured['keyword'][1] / measured['hybrid'][1]:5.2f}x"
        )
        print(
            f"          against every section ranked by its whole vector: {same_ten:.1%} of"
            f" hybrid's top ten and {same_near:.1%} of the 100 nearest notes the same"
        )
        vectors.stop()
        index.close()


def agreement(index: Index, vectors: VectorStore, questions: list[str]) -> tuple[float, float]:
    """How much of hybrid's top ten and of the 100 nearest notes the int8 first pass keeps,
    against ranking every section by its whole vector (the table's candidates unbounded)."""
    table = vectors._table  # the bench compares the table with itself

    def both() -> tuple[list[list[str]], list[list[str]]]:
        tens = [[h.path for h in hybrid.find(index, vectors, q, limit=10).results.hits]
                for q in questions]  # fmt: skip
        nears = [[m.path for m in vectors.nearest(q, hybrid.POOL)] for q in questions]
        return tens, nears

    quick = both()
    bound, table.candidates = table.candidates, 10**12
    try:
        exact = both()
    finally:
        table.candidates = bound
    shares = []
    for approximate, full in zip(quick, exact, strict=True):
        kept = sum(len(set(a) & set(b)) for a, b in zip(approximate, full, strict=True))
        shares.append(kept / max(1, sum(len(b) for b in full)))
    return shares[0], shares[1]


def main() -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))
    sizes = [int(s) for s in os.environ.get("BENCH_VECTOR_SIZES", "10000,50000").split(",")]
    for n in sizes:
        figures(n)


if __name__ == "__main__":
    main()
