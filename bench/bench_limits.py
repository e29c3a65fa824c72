"""Worst inputs against the limits on input: a note full of one word, a YAML alias bomb.

Search: one note holding "word" N times beside 200 ordinary notes, searched for
"word" through `search.search` (snippet from a bounded window) and through the
statement as it was before (FTS5's snippet() over the whole note, whose cost
grows with the square of the matches), on the same index file. Frontmatter: the
billion-laughs shape at L levels, read as before (libyaml, then expanded to JSON
values) and as now (refused by the alias budget). Prints each pair and their ratio.
BENCH_WORDS=2000,10000,20000 and BENCH_LEVELS=5,6 choose the sizes run both ways
(the before-style cost of 50,000 words is ~19 s, of 800,000 beyond five minutes, so
those two run bounded only, beside the square-law estimate from the largest size
run both ways); 9 levels run refused only.
"""

from __future__ import annotations

import os
import resource
import statistics
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import structlog
import yaml

from vault_core import yamlread
from vault_core.frontmatter import Frontmatter, plain_value
from vault_core.index.store import Index
from vault_core.search import fts as search

WORDS = [int(n) for n in os.environ.get("BENCH_WORDS", "2000,10000,20000").split(",")]
BOUNDED_ONLY = [50_000, 800_000]
LEVELS = [int(n) for n in os.environ.get("BENCH_LEVELS", "5,6").split(",")]
OLD_SNIPPET = "snippet(notes_fts, 2, '<<', '>>', ' … ', 24)"


def timed(work: Callable[[], object], rounds: int = 3) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def planted_index(root: Path, words: int) -> Index:
    root.mkdir(parents=True)
    (root / "big.md").write_text("# Big\n\n" + "word " * words + "\n")
    for n in range(200):
        (root / f"n{n}.md").write_text(f"# Note {n}\n\nAn ordinary note with a word or two.\n")
    index = Index.open(root, "bench")
    index.reconcile()
    return index


def before_style(index: Index) -> list[tuple[object, ...]]:
    sql = search.ranked_sql([]).replace("notes_fts.body", OLD_SNIPPET)
    with index.reading() as conn:
        rows: list[tuple[object, ...]] = conn.execute(
            sql, [search.fts_query("word"), search.RANK, 25, 0]
        ).fetchall()
    return rows


def search_figures(base: Path) -> None:
    print("note_search for 'word': one note holding it N times, 200 ordinary notes")
    measured: tuple[int, float] | None = None
    for words in sorted({*WORDS, *BOUNDED_ONLY}):
        index = planted_index(base / f"w{words}", words)
        now = timed(partial(search.search, index, "word"))
        line = f"  {words:>7,} words: bounded {now * 1000:8.1f} ms"
        if words in WORDS:
            then = timed(partial(before_style, index), rounds=1)
            measured = (words, then)
            line += f"   before-style {then * 1000:10.1f} ms   ratio {then / now:8.0f}x"
        elif measured is not None:
            # Not run: its cost grows with the square of the matches.
            guess = measured[1] * (words / measured[0]) ** 2
            line += f"   before-style ~{guess:8.0f} s by the square law from {measured[0]:,}"
            line += f"   ratio ~{guess / now:.0f}x"
        index.close()
        print(line, flush=True)


def laughs(levels: int) -> str:
    lines = ["a0: &a0 [lol]"] + [
        f"a{n}: &a{n} [" + ", ".join([f"*a{n - 1}"] * 10) + "]" for n in range(1, levels + 1)
    ]
    return "\n".join(lines) + "\n"


def read_now(source: str) -> object:
    return Frontmatter(source).plain()


def read_before(source: str) -> object:
    """What reading did before the budget: libyaml, then every value expanded."""
    return plain_value(yaml.load(source, Loader=yaml.CSafeLoader))


def yaml_figures() -> None:
    print(
        f"frontmatter: billion laughs at L levels (10**L leaves), alias budget {yamlread.ALIAS_BUDGET}"
    )
    for levels in sorted({*LEVELS, 9}):
        source = laughs(levels)
        start_rss = rss_mb()
        now = timed(partial(read_now, source))
        assert Frontmatter(source).error is not None
        line = f"  {levels} levels ({len(source)} bytes): refused in {now * 1e6:7.0f} µs"
        line += f" (+{rss_mb() - start_rss:.0f} MB)"
        if levels in LEVELS:
            start_rss = rss_mb()
            then = timed(partial(read_before, source), rounds=1)
            line += (
                f"   before-style {then * 1000:8.0f} ms (+{rss_mb() - start_rss:.0f} MB peak)"
                f"   ratio {then / now:8.0f}x"
            )
        print(line, flush=True)


def main() -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))
    with tempfile.TemporaryDirectory() as tmp:
        search_figures(Path(tmp))
    yaml_figures()


if __name__ == "__main__":
    main()
