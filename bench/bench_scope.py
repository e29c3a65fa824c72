"""Search under path rules vs without, on one large vault, measured in one run.

A caller limited to one folder of ~200 notes in a 50,000-note vault must get its full page
of hits and exact counts at a cost close to an unrestricted search: the rules are applied
inside the index query (temp views with a path range per folder), not after it.
`SCOPE_NOTES` sets the vault size (default 50,000).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import structlog
from bench_vectors import percentiles, timings
from vaultgen import FOLDERS, generate

from tickets import Reach
from vault_core import scope
from vault_core.index.store import Index
from vault_core.search import fts as search

NOTES = int(os.environ.get("SCOPE_NOTES", "50000"))
ROUNDS = 30
QUERIES = ["project notes", "the", "data model", ""]


def scoped(index: Index, text: str, rules: Reach) -> search.Results:
    with scope.applied(rules):
        return search.search(index, text, limit=25)


def small_folder(root: Path) -> str:
    """The first nested folder: about vaultgen.FOLDER_NOTES notes."""
    folder = root / FOLDERS[0]
    sub = sorted(p for p in folder.iterdir() if p.is_dir())[0]
    return sub.relative_to(root).as_posix()


def main() -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))
    with tempfile.TemporaryDirectory(prefix="sb-bench-scope-") as tmp:
        root = generate(Path(tmp) / "v", NOTES, nested=True)
        index = Index.open(root, "v")
        index.reconcile()
        narrow = small_folder(root)
        shapes = {
            f"one folder ({narrow})": Reach.of([narrow]),
            f"a top folder ({FOLDERS[1]})": Reach.of([FOLDERS[1]]),
            f"{FOLDERS[3]} minus one subfolder": Reach.of(
                [FOLDERS[3]], None, [small_folder(root).replace(FOLDERS[0], FOLDERS[3], 1)]
            ),
        }
        print(
            f"search on {NOTES} notes, limit 25 with exact total, p50 of {ROUNDS}, the whole"
            " vault and each set of rules asked in turn"
        )
        for text in QUERIES:
            calls = {"whole vault": lambda _q, text=text: search.search(index, text, limit=25)}
            for name, rules in shapes.items():
                calls[name] = lambda _q, text=text, rules=rules: scoped(index, text, rules)
            medians = {
                label: percentiles(times)[0]
                for label, times in timings(calls, [[text] * ROUNDS]).items()
            }
            base = medians["whole vault"]
            whole = search.search(index, text, limit=25).total
            print(f"  {text or '(recent)'!r:16} whole vault {base:7.2f} ms ({whole} hits)")
            for name, rules in shapes.items():
                found = scoped(index, text, rules)
                assert all(rules.reads(hit.path) for hit in found.hits)
                print(
                    f"  {'':16} {name:34} {medians[name]:7.2f} ms ({found.total} hits,"
                    f" page {len(found.hits)}) = {medians[name] / base:4.2f}x"
                )
        index.close()


if __name__ == "__main__":
    main()
