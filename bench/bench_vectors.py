"""What hybrid search costs at size: embedding throughput, memory, and search latency by mode,
on synthetic vaults (bench/vaultgen.py) of 10,000 and 50,000 notes.

`BENCH_VECTOR_SIZES` (comma-separated) narrows the sizes. For each: the cold index, the
background worker embedding every note (notes/s, chunks/s), the process's RSS before and
after, the vectors' bytes in the index, and p50/p95 of note_search's ranking in keyword
mode (before: `fts`; now: natural) and hybrid, over the same 60 two-word questions.
"""

from __future__ import annotations

import os
import random
import resource
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import structlog
from vaultgen import generate

from vault_core import embedding, hybrid, search
from vault_core.index import Index
from vault_core.vectors import VectorStore


def rss_mb() -> float:
    with Path("/proc/self/status").open() as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timings(call: Callable[[str], object], questions: list[str]) -> tuple[float, float]:
    times = []
    for question in questions:
        started = time.perf_counter()
        call(question)
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.95)]


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
        questions = [f"{rng.choice(words)} {rng.choice(words)}" for _ in range(60)]
        fts = timings(lambda q: search.search(index, q, limit=10, syntax="fts"), questions)
        natural = timings(lambda q: search.search(index, q, limit=10), questions)
        fused = timings(lambda q: hybrid.find(index, vectors, q, limit=10), questions)
        after = rss_mb()
        print(
            f"  {n:>6} notes: cold index {cold:6.1f} s; embedded {n} notes ({chunks} chunks) in"
            f" {seconds:6.1f} s = {n / seconds:5.0f} notes/s, {chunks / seconds:5.0f} chunks/s"
        )
        print(
            f"          vectors {size / 1e6:6.1f} MB in the index; RSS {before:6.0f} MB before"
            f" embedding, {after:6.0f} MB after (+{after - before:.0f} MB)"
        )
        for label, (p50, p95) in (("fts (before)", fts), ("keyword", natural), ("hybrid", fused)):
            print(f"          {label:<13} p50 {p50:7.2f} ms  p95 {p95:7.2f} ms")
        print(
            f"          hybrid/fts p50 {fused[0] / fts[0]:5.1f}x, keyword/fts p50"
            f" {natural[0] / fts[0]:5.1f}x"
        )
        vectors.stop()
        index.close()


def main() -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))
    sizes = [int(s) for s in os.environ.get("BENCH_VECTOR_SIZES", "10000,50000").split(",")]
    for n in sizes:
        figures(n)


if __name__ == "__main__":
    main()
