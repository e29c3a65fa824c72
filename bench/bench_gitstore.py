"""Commit cost against vault size: one small edit in a 100-file and a 10,000-file vault.

The target is a p50 ratio of at most 1.5: staging only touched paths keeps the cost flat.
The two vaults take turns, so that load from other processes falls on both alike.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from vault_core.git.store import GitStore, Identity

NODE = Identity("node", "node@secondbrain.invalid")
CYCLES = 50
PER_FOLDER = 100


def build(root: Path, files: int) -> tuple[GitStore, str]:
    """A vault of `files` notes in folders of 100, all committed in one commit."""
    paths = [f"notes/{i // PER_FOLDER:03d}/note-{i:05d}.md" for i in range(files)]
    for rel in paths:
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f"# Note {rel}\n\nsome text\n", encoding="utf-8")
    store = GitStore.open(root, "bench", committer=NODE)
    store.commit("import", paths)
    return store, paths[len(paths) // 2]


def edit_and_commit(store: GitStore, root: Path, rel: str, cycle: int) -> tuple[float, float]:
    """Wall and CPU seconds of committing one modified note."""
    (root / rel).write_text(f"# Note\n\nedit {cycle}\n", encoding="utf-8")
    start, start_cpu = time.perf_counter(), time.thread_time()
    assert store.commit(f"note_edit: {rel}", [rel]) is not None
    return time.perf_counter() - start, time.thread_time() - start_cpu


def main() -> None:
    with tempfile.TemporaryDirectory() as small, tempfile.TemporaryDirectory() as large:
        roots = {100: Path(small), 10_000: Path(large)}
        stores = {files: build(root, files) for files, root in roots.items()}
        timings: dict[int, list[tuple[float, float]]] = {files: [] for files in roots}
        try:
            for cycle in range(CYCLES):
                for files, (store, rel) in stores.items():
                    timings[files].append(edit_and_commit(store, roots[files], rel, cycle))
        finally:
            for store, _ in stores.values():
                store.close()
    p50 = {
        files: (statistics.median(t[0] for t in runs), statistics.median(t[1] for t in runs))
        for files, runs in timings.items()
    }
    for files, (wall, cpu) in p50.items():
        print(f"p50 commit, {files:>6,} files: {wall * 1000:7.2f} ms  (cpu {cpu * 1000:.2f} ms)")
    (wall_small, cpu_small), (wall_large, cpu_large) = p50[100], p50[10_000]
    print(f"ratio: {wall_large / wall_small:.2f} (target <= 1.5; cpu {cpu_large / cpu_small:.2f})")


if __name__ == "__main__":
    main()
