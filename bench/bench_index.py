"""Index, search and write costs on synthetic vaults of 1,000 / 10,000 / 50,000 notes.

Prints, from one run: cold index throughput, warm start as a share of cold,
search p50/p95 next to the same FTS5 query run raw on the same index file,
8 concurrent searchers against 1, and write + index update + git commit p50
at 10,000 and 50,000 notes over the same at 100 notes.
Set BENCH_SIZES=1000,10000 to run fewer sizes, BENCH_PARTS=write (index, search) for fewer parts.
"""

from __future__ import annotations

import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import structlog

sys.path.insert(0, str(Path(__file__).resolve().parent))

from vaultgen import generate

from vault_core import edit
from vault_core.edit import WriteOp
from vault_core.index.store import Index
from vault_core.library import OpenVault, Settings
from vault_core.search import fts as search
from vault_core.vault import Actor

SIZES = [int(s) for s in os.environ.get("BENCH_SIZES", "1000,10000,50000").split(",")]
PARTS = os.environ.get("BENCH_PARTS", "index,search,write").split(",")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def timed(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def index_figures(root: Path, n: int) -> None:
    size = sum(p.stat().st_size for p in root.rglob("*.md"))
    shutil.rmtree(root / ".secondbrain", ignore_errors=True)
    index = Index.open(root, "bench")
    cold = timed(index.reconcile)
    index.close()
    warm_index = Index.open(root, "bench")  # a restart: new connections, same file
    warm = timed(warm_index.reconcile)
    warm_index.close()
    print(f"  {n:>6} notes: cold {n / cold:7.0f} notes/s {size / cold / 1e6:6.1f} MB/s"
          f" ({cold:6.1f} s); warm start {warm * 1000:7.0f} ms = {100 * warm / cold:4.1f} % of cold")  # fmt: skip


def queries(index: Index, rng: random.Random) -> dict[str, list[tuple[str, search.Filters, str]]]:
    with index.reading() as conn:
        bodies = [b for (b,) in conn.execute("SELECT body FROM notes_fts LIMIT 300")]
        tags = [t for (t,) in conn.execute("SELECT tag FROM tags GROUP BY tag LIMIT 50")]
    words = [w.strip(".,#[]()") for b in bodies for w in b.split()[5:40]]
    words = [w for w in words if w.isalpha() and len(w) > 4]
    single = [(w, search.Filters(), "") for w in rng.sample(words, 40)]
    phrases = []
    for body in rng.sample(bodies, 40):
        parts = body.split()[8:10]
        phrases.append(('"' + " ".join(p.strip(".,") for p in parts) + '"', search.Filters(), ""))
    filtered = [(w, search.Filters(tags=[rng.choice(tags)]), "") for w in rng.sample(words, 40)]
    return {"single word": single, "phrase": phrases, "word + tag": filtered}


def search_figures(root: Path) -> None:
    index = Index.open(root, "bench")
    raw_conn = index._connect(readonly=True)
    rng = random.Random(7)
    for kind, cases in queries(index, rng).items():
        ours, raw = [], []
        for _ in range(3):
            for text, filters, _ in cases:
                ours.append(timed(lambda t=text, f=filters: search.search(index, t, f)))
                # The same FTS5 statement, run bare on its own connection: what our
                # layer adds is the count, the result shaping and the Python around it.
                where, params = search._where(filters)
                sql = search.ranked_sql(where)
                args = [search.fts_query(text), search.RANK, *params, 25, 0]
                raw.append(timed(lambda s=sql, a=args: raw_conn.execute(s, a).fetchall()))
        print(f"  {kind:12}: ours p50 {pct(ours, .5) * 1e3:6.2f} ms p95 {pct(ours, .95) * 1e3:6.2f} ms"
              f" | raw p50 {pct(raw, .5) * 1e3:6.2f} ms p95 {pct(raw, .95) * 1e3:6.2f} ms"
              f" | ratio p50 {pct(ours, .5) / pct(raw, .5):4.2f}x")  # fmt: skip
    concurrency_figures(index, [c[0] for c in queries(index, rng)["single word"]])
    raw_conn.close()
    index.close()


def concurrency_figures(index: Index, words: list[str]) -> None:
    per_thread = 60

    def worker() -> None:
        for k in range(per_thread):
            search.search(index, words[k % len(words)])

    def run(threads: int) -> float:
        pool = [threading.Thread(target=worker) for _ in range(threads)]
        start = time.perf_counter()
        for t in pool:
            t.start()
        for t in pool:
            t.join()
        return threads * per_thread / (time.perf_counter() - start)

    one, eight = run(1), run(8)
    print(f"  concurrency : 1 searcher {one:6.0f} q/s, 8 searchers {eight:6.0f} q/s"
          f" = {eight / one:4.2f}x")  # fmt: skip


def git_import(root: Path) -> None:
    git = [
        "git",
        "-c",
        "user.name=bench",
        "-c",
        "user.email=b@b",
        "-c",
        "gc.auto=0",
        "-C",
        str(root),
    ]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    (root / ".gitignore").write_text(".secondbrain/\n")
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "import"], check=True)
    # A vault that has lived with git for a while has its objects packed; without this the
    # node's own background packing of the import would run during the measurement.
    subprocess.run([*git, "gc", "--quiet"], check=True)


def write_p50(root: Path, rounds: int = 60) -> float:
    opened = OpenVault.open(root, "bench", Settings(watch=False))
    notes = sorted(p.relative_to(root).as_posix() for p in root.glob("wiki/*.md"))[:rounds]
    times = []
    for k, rel in enumerate(notes * (rounds // max(1, len(notes)) + 1)):
        if k >= rounds:
            break
        line = f"\nedit {k} [[{Path(rel).stem}]]\n"
        op = WriteOp(rel, lambda cur, _e, line=line: cur + line, reason=f"note_edit: {rel}")
        times.append(timed(lambda op=op: edit.apply(opened.vault, op, Actor("bench"))))
    opened.close()
    return statistics.median(times)


def main() -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))
    with tempfile.TemporaryDirectory(prefix="sb-bench-") as tmp:
        roots = {n: generate(Path(tmp) / f"v{n}", n) for n in SIZES}
        if "index" in PARTS:
            print("index (cold = empty index, warm = restart over an unchanged vault)")
            for n in SIZES:
                index_figures(roots[n], n)
        middle = roots[10000 if 10000 in roots else SIZES[-1]]
        if "search" in PARTS:
            print(
                f"search on {len(list(middle.rglob('*.md')))} notes (limit 25, with count and tags)"
            )
            search_figures(middle)
        if "write" not in PARTS:
            return
        small = generate(Path(tmp) / "v100", 100)
        print("write + index update + git commit (p50 of 60 edits)")
        base = None
        for n, root in [(100, small), *sorted(roots.items())]:
            if n < 100 or (n != 100 and n < 10000):
                continue
            git_import(root)
            p50 = write_p50(root)
            base = base or p50
            print(
                f"  {n:>6} notes: p50 {p50 * 1000:6.1f} ms = {p50 / base:4.2f}x the 100-note vault"
            )


if __name__ == "__main__":
    main()
