"""Parse and hash every note of the Obsidian Help corpus; compare with merely reading it.

Both loops read the same files from a warm page cache, so the ratio is the cost
of our parsing (frontmatter, structure, tags, hash) over the I/O floor.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from vault_core import note
from vault_core.testing import corpus_dir

ROUNDS = 15


def read_only(files: list[Path]) -> int:
    return sum(len(p.read_bytes()) for p in files)


def parse_all(files: list[Path], root: Path) -> int:
    total = 0
    for path in files:
        parsed = note.parse(path.relative_to(root).as_posix(), path.read_bytes())
        _ = (parsed.content_hash, parsed.title, parsed.tags, parsed.aliases, parsed.links)
        total += len(parsed.tasks) + len(parsed.headings)
    return total


def best_of(rounds: int, work: object) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        work()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    root = corpus_dir()
    files = sorted(root.rglob("*.md"))
    size = sum(p.stat().st_size for p in files)
    read_only(files)  # warm the page cache
    t_read = best_of(ROUNDS, lambda: read_only(files))
    t_parse = best_of(ROUNDS, lambda: parse_all(files, root))
    print(f"corpus: {len(files)} notes, {size / 1e6:.2f} MB (median of {ROUNDS} rounds)")
    print(
        f"  read only (I/O floor): {len(files) / t_read:12,.0f} notes/s  {size / t_read / 1e6:8.1f} MB/s"
    )
    print(
        f"  parse + hash:          {len(files) / t_parse:12,.0f} notes/s  {size / t_parse / 1e6:8.1f} MB/s"
    )
    print(f"  parse cost over the floor: {t_parse / t_read:.1f}x")


if __name__ == "__main__":
    main()
