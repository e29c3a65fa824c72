"""Large vaults (issue 20): every cost at 10,000 / 50,000 / 100,000 notes next to 10,000's.

Per size, in one run: cold index (notes/s) beside the naive ceiling (a regex pass and one
FTS5 transaction over the same files), warm start, search p50/p95 (a word, a phrase, a word
with a tag filter), backlinks of a hub note, vault_stats, note_create / note_edit p50/p95
and process CPU per write through the write path with git and a watcher (as the node runs
them) next to the same on a 100-note vault, a create that makes a new folder (reconciles
it caused, the worst write right after it), the first open of a vault without history
(index and git import) by a library that serves a small vault meanwhile (its searches and
edits, and what asking for the big one answers), writes while the repository packs, and
the RSS of a fresh process that opened the vault and served searches.

    bench/bench_large.py --sizes 10000,50000,100000 [--repeat 3] [--parts ...] [--profile]

`make bench` runs BENCH_LARGE_SIZES (default 10000,50000). Generated vaults (and their git
import) are cached under .cache/bench-large/, so a rerun starts in seconds; every run works
on a hard-linked copy, which the write path's atomic replace never writes through.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import random
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import structlog

sys.path.insert(0, str(Path(__file__).resolve().parent))

from vaultgen import HUB, generate

from vault_core import edit
from vault_core.edit import WriteOp
from vault_core.index.store import Index
from vault_core.library import Library, OpenVault, Settings, VaultOpeningError
from vault_core.search import answers as queries
from vault_core.search import fts as search
from vault_core.vault import Actor

CACHE = Path(__file__).resolve().parent.parent / ".cache" / "bench-large"
GENERATION = "g1"  # bump when vaultgen's output changes
ACTOR = Actor("bench")
PARTS = ("index", "search", "write", "folder", "pack", "rss")
WRITES = 60
WRITE_ROUNDS = 3
Figures = dict[str, float]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def timed(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def run_git(root: Path, *args: str) -> None:
    base = ["git", "-c", "user.name=bench", "-c", "user.email=b@b", "-c", "gc.auto=0"]
    subprocess.run([*base, "-C", str(root), *args], check=True, stdout=subprocess.DEVNULL)


# ------------------------------------------------------------------ vaults


def pristine(n: int, *, with_git: bool) -> Path:
    """The cached generated vault of `n` notes; `with_git`: imported and packed by git, as
    a vault that has lived with history a while."""
    plain = CACHE / f"v{n}-{GENERATION}"
    if not plain.exists():
        building = plain.with_name(plain.name + ".part")
        shutil.rmtree(building, ignore_errors=True)
        generate(building, n, nested=True)
        building.rename(plain)
    if not with_git:
        return plain
    gitted = plain.with_name(plain.name + "-git")
    if not gitted.exists():
        building = copy(plain, gitted.with_name(gitted.name + ".part"))
        run_git(building, "init", "-q", "-b", "main")
        (building / ".gitignore").write_text(".secondbrain/\n")
        run_git(building, "add", "-A")
        run_git(building, "commit", "-qm", "import")
        run_git(building, "gc", "--quiet")
        building.rename(gitted)
    return gitted


def copy(source: Path, target: Path) -> Path:
    """A hard-linked copy: notes are replaced atomically (a new inode), never written through."""
    shutil.rmtree(target, ignore_errors=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["cp", "-al", str(source), str(target)], check=True)
    return target


# ------------------------------------------------------------------ index


def cold_index(root: Path, repeat: int, profile: bool) -> Figures:
    runs, ceilings, cpu = [], [], []
    for k in range(repeat):
        Index.remove(root)
        index = Index.open(root, "bench")
        profiler = cProfile.Profile() if profile and k == 0 else None
        if profiler is not None:
            profiler.enable()
        started = time.process_time()
        runs.append(timed(index.reconcile))
        # The writer's CPU: on a shared machine it says more than the wall time does.
        cpu.append(time.process_time() - started)
        if profiler is not None:
            profiler.disable()
            print_profile(profiler)
        index.close()
        ceilings.append(naive_ceiling(root))
    warm = []
    for _ in range(3):
        index = Index.open(root, "bench")
        warm.append(timed(index.reconcile))
        index.close()
    return {
        "cold_s": statistics.median(runs),
        "cold_cpu_s": statistics.median(cpu),
        "ceiling_s": statistics.median(ceilings),
        "warm_s": statistics.median(warm),
    }


def print_profile(profiler: cProfile.Profile) -> None:
    stats = pstats.Stats(profiler)
    stats.sort_stats("tottime").print_stats(14)


_LINK = re.compile(r"\[\[([^\]|#]+)")
_TAG = re.compile(r"(?<![\w#])#([\w/-]+)")
_TITLE = re.compile(r"^title: (.*)$", re.MULTILINE)


def naive_ceiling(root: Path) -> float:
    """Seconds to walk, read and regex every note and store it in one FTS5 transaction."""
    db = root.parent / f"{root.name}-ceiling.db"
    db.unlink(missing_ok=True)
    start = time.perf_counter()
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute(
        "CREATE VIRTUAL TABLE f USING fts5(path UNINDEXED, title, body,"
        ' tokenize = "unicode61 remove_diacritics 2")'
    )
    conn.execute("BEGIN")
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            if name.endswith(".md"):
                text = Path(folder, name).read_text(encoding="utf-8")
                _LINK.findall(text), _TAG.findall(text)
                title = _TITLE.search(text)
                rel = Path(folder, name).relative_to(root).as_posix()
                conn.execute(
                    "INSERT INTO f VALUES (?, ?, ?)", (rel, title[1] if title else name, text)
                )
    conn.execute("COMMIT")
    conn.close()
    elapsed = time.perf_counter() - start
    db.unlink(missing_ok=True)
    return elapsed


# ------------------------------------------------------------------ reads


def search_cases(index: Index, rng: random.Random) -> dict[str, list[tuple[str, search.Filters]]]:
    with index.reading() as conn:
        bodies = [b for (b,) in conn.execute("SELECT body FROM notes_fts LIMIT 300")]
        tags = [t for (t,) in conn.execute("SELECT tag FROM tags GROUP BY tag LIMIT 50")]
    words = [w.strip(".,#[]()") for b in bodies for w in b.split()[5:40]]
    words = sorted({w for w in words if w.isalpha() and len(w) > 4})
    phrases = []
    for body in rng.sample(bodies, 40):
        parts = [p.strip(".,") for p in body.split()[8:10]]
        phrases.append(('"' + " ".join(parts) + '"', search.Filters()))
    return {
        "word": [(w, search.Filters()) for w in rng.sample(words, 40)],
        "phrase": phrases,
        "tag": [(w, search.Filters(tags=[rng.choice(tags)])) for w in rng.sample(words, 40)],
    }


def read_figures(index: Index) -> Figures:
    out: Figures = {}
    for kind, cases in search_cases(index, random.Random(7)).items():
        times = [
            timed(lambda t=text, f=filters: search.search(index, t, f))
            for _ in range(3)
            for text, filters in cases
        ]
        out[f"search_{kind}_p50"], out[f"search_{kind}_p95"] = pct(times, 0.5), pct(times, 0.95)
    hub = f"{HUB}.md"
    out["backlinks_hub"] = statistics.median(
        timed(lambda: queries.backlinks(index, hub)) for _ in range(20)
    )
    out["hub_backlinks"] = len(queries.backlinks(index, hub)["incoming"])
    fresh = []
    for _ in range(3):  # after a change: computed; asked again: the copy kept
        index.version += 1  # what a write does to it, without changing the notes
        fresh.append(timed(lambda: queries.stats(index)))
    out["stats_fresh"] = statistics.median(fresh)
    out["stats"] = statistics.median(timed(lambda: queries.stats(index)) for _ in range(5))
    return out


# ------------------------------------------------------------------ writes


def folders_of(root: Path, count: int) -> list[str]:
    found = sorted(
        rel
        for rel in {p.parent.relative_to(root).as_posix() for p in root.glob("*/*/*.md")}
        if not rel.startswith(".")  # the trash of earlier edits
    )
    return found[:: max(1, len(found) // count)][:count]


def create_op(rel: str, k: int) -> WriteOp:
    text = f"---\ntitle: Bench {k}\ntags: [bench]\n---\n# Bench {k}\n\nSome text [[Hub]].\n"
    return WriteOp(rel, lambda _cur, _ex, text=text: text, commit_as="note_create", only_new=True)


def edit_op(rel: str, k: int) -> WriteOp:
    line = f"\nedit {k}\n"
    return WriteOp(rel, lambda cur, _ex, line=line: cur + line, commit_as="note_edit")


def write_series(opened: OpenVault, ops: list[WriteOp]) -> tuple[list[float], float]:
    """Each write's seconds, and the process CPU per write (the watcher's share included)."""
    cpu = time.process_time()
    times = [timed(lambda op=op: edit.apply(opened.vault, op, ACTOR)) for op in ops]
    time.sleep(0.6)  # the watcher's batch of these writes is part of their cost
    return times, (time.process_time() - cpu) / len(ops)


def write_figures(opened: OpenVault, tag: str) -> Figures:
    """Each figure the median of WRITE_ROUNDS rounds: a shared disk's fsyncs vary more
    between rounds than a write's own cost varies with the vault's size."""
    root = opened.vault.root
    folders = folders_of(root, 12)
    rounds: list[Figures] = []
    for r in range(WRITE_ROUNDS):
        creates = [
            create_op(f"{folders[k % len(folders)]}/Bench {tag}{r} {k}.md", k)
            for k in range(WRITES)
        ]
        created, create_cpu = write_series(opened, creates)
        edits = [edit_op(op.path, k) for k, op in enumerate(creates)]
        edited, edit_cpu = write_series(opened, edits)
        rounds.append(
            {
                "create_p50": pct(created, 0.5),
                "create_p95": pct(created, 0.95),
                "create_cpu": create_cpu,
                "edit_p50": pct(edited, 0.5),
                "edit_p95": pct(edited, 0.95),
                "edit_cpu": edit_cpu,
            }
        )
    return {key: statistics.median(f[key] for f in rounds) for key in rounds[0]}


def folder_figures(opened: OpenVault) -> Figures:
    """A create that makes a new folder: reconciles it set off, and the writes after it."""
    watcher = opened.watcher
    assert watcher is not None
    calls: list[float] = []
    full = watcher._reconcile

    def counted() -> object:
        start = time.perf_counter()
        try:
            return full()
        finally:
            calls.append(time.perf_counter() - start)

    watcher._reconcile = counted
    first = timed(
        lambda: edit.apply(opened.vault, create_op("projects/new-folder/First.md", 0), ACTOR)
    )
    after, until = [], time.monotonic() + 3.0
    k = 0
    while time.monotonic() < until:
        after.append(
            timed(
                lambda k=k: edit.apply(
                    opened.vault, edit_op("projects/new-folder/First.md", k), ACTOR
                )
            )
        )
        k += 1
        time.sleep(0.05)
    watcher._reconcile = full
    return {
        "folder_create": first,
        "folder_after_max": max(after),
        "folder_reconciles": len(calls),
        "folder_reconcile_s": sum(calls),
    }


def pack_figures(n: int, work: Path) -> Figures:
    """First open of a vault without history (index + import), as a node opens it beside a
    small vault that answers meanwhile, then edits while the background pack of that import
    runs."""
    shutil.rmtree(work, ignore_errors=True)
    copy(pristine(100, with_git=True), work / "small")
    library = Library(work, Settings(watch=True)).open_all()
    small = library.get("small")
    other, asked = [], []  # the small vault's calls, and asking for the big one, meanwhile
    rel, k = "wiki/Bench small.md", 0
    edit.apply(small.vault, create_op(rel, 0), ACTOR)
    root = copy(pristine(n, with_git=False), work / "big")  # a vault folder appears
    cpu = time.process_time()
    started = time.perf_counter()
    while True:
        try:
            asked_at = time.perf_counter()
            opened = library.get("big")
            break
        except VaultOpeningError:
            asked.append(time.perf_counter() - asked_at)
        other.append(timed(lambda: search.search(small.index, "bench")))
        other.append(timed(lambda k=k: edit.apply(small.vault, edit_op(rel, k), ACTOR)))
        k += 1
        time.sleep(0.05)
    first_open = time.perf_counter() - started
    cpu = time.process_time() - cpu
    assert opened.git is not None
    objects = root / ".git" / "objects"
    loose = sum(1 for _ in objects.glob("??/*"))
    packs = sum(1 for _ in (objects / "pack").glob("*.pack"))
    packer = opened.git._packer
    packer.request()
    times, started = [], time.perf_counter()
    rel = next(iter(sorted(root.glob("wiki/*/*.md")))).relative_to(root).as_posix()
    k = 0
    while packer._thread is not None or k < 20:
        times.append(timed(lambda k=k: edit.apply(opened.vault, edit_op(rel, k), ACTOR)))
        k += 1
        time.sleep(0.05)
    pack = time.perf_counter() - started
    library.close()
    return {
        "first_open_s": first_open,
        "first_open_cpu": cpu,
        "open_other_calls": len(other),
        "open_other_p50": pct(other, 0.5) if other else 0.0,
        "open_other_p99": pct(other, 0.99) if other else 0.0,
        "open_other_max": max(other, default=0.0),
        "open_asked_max": max(asked, default=0.0),
        "import_loose": loose,
        "import_packs": packs,
        "pack_s": pack,
        "pack_writes": len(times),
        "pack_write_p50": pct(times, 0.5),
        "pack_write_p99": pct(times, 0.99),
        "pack_write_max": max(times),
    }


# ------------------------------------------------------------------ memory


def rss_child(root: Path) -> None:
    """Run in a fresh process: RSS after imports, after opening, after serving searches."""
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))
    base = rss_kib()
    opened = OpenVault.open(root, "bench", Settings(watch=True))
    after_open = rss_kib()
    for kind, cases in search_cases(opened.index, random.Random(3)).items():
        del kind
        for text, filters in cases * 5:
            search.search(opened.index, text, filters)
    queries.stats(opened.index)
    queries.backlinks(opened.index, f"{HUB}.md")
    print(json.dumps({"rss_base_mb": base / 1024, "rss_open_mb": after_open / 1024,
                      "rss_served_mb": rss_kib() / 1024, "rss_peak_mb": rss_kib("VmHWM") / 1024}))  # fmt: skip
    opened.close()


def rss_kib(field: str = "VmRSS") -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def rss_figures(root: Path) -> Figures:
    out = subprocess.run(
        [sys.executable, __file__, "--rss-child", str(root)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return {k: float(v) for k, v in json.loads(out.strip().splitlines()[-1]).items()}


# ------------------------------------------------------------------ one size


def measure(n: int, args: argparse.Namespace) -> Figures:
    work = CACHE / "work" / f"v{n}"
    root = copy(pristine(n, with_git=True), work)
    figures: Figures = {"notes": n}
    try:
        if "index" in args.parts:
            figures |= cold_index(root, args.repeat if n <= 10_000 else 1, args.profile)
        if {"search", "write", "folder"} & set(args.parts):
            opened = OpenVault.open(root, "bench", Settings(watch=True))
            try:
                if "search" in args.parts:
                    figures |= read_figures(opened.index)
                if "write" in args.parts:
                    # The cold index just wrote up to 700 MB; its writeback made each
                    # write's fsyncs wait (p50 2.4x the 100-note figure at 100,000 notes).
                    os.sync()
                    figures |= write_figures(opened, "w")
                if "folder" in args.parts:
                    figures |= folder_figures(opened)
            finally:
                opened.close()
        if "rss" in args.parts:
            figures |= rss_figures(root)
        if "pack" in args.parts:
            figures |= pack_figures(n, CACHE / "work" / f"p{n}")
    finally:
        shutil.rmtree(CACHE / "work", ignore_errors=True)
    print(
        f"  {n:,} notes measured: {json.dumps({k: round(v, 4) for k, v in figures.items()})}",
        flush=True,
    )
    return figures


def small_writes() -> Figures:
    """The same writes on a 100-note vault: what a write costs when the vault is small."""
    root = copy(pristine(100, with_git=True), CACHE / "work" / "v100")
    try:
        opened = OpenVault.open(root, "bench", Settings(watch=True))
        try:
            return write_figures(opened, "s")
        finally:
            opened.close()
    finally:
        shutil.rmtree(CACHE / "work", ignore_errors=True)


# ------------------------------------------------------------------ report

ROWS: list[tuple[str, str, Callable[[Figures], float | None]]] = [
    # label, unit, value; each shown with its ratio to the 10,000-note figure
    ("cold index", "notes/s", lambda f: f["notes"] / f["cold_s"] if "cold_s" in f else None),
    ("cold index", "s", lambda f: f.get("cold_s")),
    ("cold index, CPU of the writing process", "s", lambda f: f.get("cold_cpu_s")),
    (
        "naive ceiling",
        "notes/s",
        lambda f: f["notes"] / f["ceiling_s"] if "ceiling_s" in f else None,
    ),
    (
        "ours / ceiling",
        "%",
        lambda f: 100 * f["ceiling_s"] / f["cold_s"] if "cold_s" in f else None,
    ),
    ("warm start", "ms", lambda f: ms(f.get("warm_s"))),
    ("search word p50", "ms", lambda f: ms(f.get("search_word_p50"))),
    ("search word p95", "ms", lambda f: ms(f.get("search_word_p95"))),
    ("search phrase p50", "ms", lambda f: ms(f.get("search_phrase_p50"))),
    ("search phrase p95", "ms", lambda f: ms(f.get("search_phrase_p95"))),
    ("search word+tag p50", "ms", lambda f: ms(f.get("search_tag_p50"))),
    ("search word+tag p95", "ms", lambda f: ms(f.get("search_tag_p95"))),
    ("backlinks of the hub", "ms", lambda f: ms(f.get("backlinks_hub"))),
    ("vault_stats after a change", "ms", lambda f: ms(f.get("stats_fresh"))),
    ("vault_stats asked again", "ms", lambda f: ms(f.get("stats"))),
    ("note_create p50", "ms", lambda f: ms(f.get("create_p50"))),
    ("note_create p95", "ms", lambda f: ms(f.get("create_p95"))),
    ("note_create CPU/call", "ms", lambda f: ms(f.get("create_cpu"))),
    ("note_edit p50", "ms", lambda f: ms(f.get("edit_p50"))),
    ("note_edit p95", "ms", lambda f: ms(f.get("edit_p95"))),
    ("note_edit CPU/call", "ms", lambda f: ms(f.get("edit_cpu"))),
    ("create in a new folder", "ms", lambda f: ms(f.get("folder_create"))),
    ("full reconciles it caused", "", lambda f: f.get("folder_reconciles")),
    ("worst write in the 3 s after", "ms", lambda f: ms(f.get("folder_after_max"))),
    ("first open (index + git import)", "s", lambda f: f.get("first_open_s")),
    ("first open, this process's CPU", "s", lambda f: f.get("first_open_cpu")),
    ("another vault during it: calls", "", lambda f: f.get("open_other_calls")),
    ("another vault during it: p50", "ms", lambda f: ms(f.get("open_other_p50"))),
    ("another vault during it: p99", "ms", lambda f: ms(f.get("open_other_p99"))),
    ("another vault during it: max", "ms", lambda f: ms(f.get("open_other_max"))),
    ("asking for the vault being opened, max", "ms", lambda f: ms(f.get("open_asked_max"))),
    ("loose objects after the import", "", lambda f: f.get("import_loose")),
    ("packs after the import", "", lambda f: f.get("import_packs")),
    ("background pack of the import", "s", lambda f: f.get("pack_s")),
    ("edit during the pack p50", "ms", lambda f: ms(f.get("pack_write_p50"))),
    ("edit during the pack p99", "ms", lambda f: ms(f.get("pack_write_p99"))),
    ("edit during the pack max", "ms", lambda f: ms(f.get("pack_write_max"))),
    ("RSS after imports", "MB", lambda f: f.get("rss_base_mb")),
    ("RSS after opening", "MB", lambda f: f.get("rss_open_mb")),
    ("RSS after 600 searches", "MB", lambda f: f.get("rss_served_mb")),
]


def ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1000


def report(results: list[Figures], small: Figures | None) -> None:
    base = next((f for f in results if f["notes"] == 10_000), results[0])
    sizes = [f"{int(f['notes']):,} notes" for f in results]
    print(f"| measured in one run, {os.cpu_count()} cores | " + " | ".join(sizes) + " |")
    print("| --- |" + " --- |" * len(results))
    for label, unit, value in ROWS:
        cells = [format_cell(value(f), value(base), f is base) for f in results]
        if any(c != "-" for c in cells):
            print(f"| {label}{f' ({unit})' if unit else ''} | " + " | ".join(cells) + " |")
    if small is not None:
        print(f"\nwrites on a 100-note vault: create p50 {small['create_p50'] * 1e3:.1f} ms,"
              f" edit p50 {small['edit_p50'] * 1e3:.1f} ms, CPU/call create"
              f" {small['create_cpu'] * 1e3:.1f} ms, edit {small['edit_cpu'] * 1e3:.1f} ms")  # fmt: skip
        for f in results:
            if "create_p50" in f:
                print(f"  {int(f['notes']):>7,} notes / 100 notes: create p50 {f['create_p50'] / small['create_p50']:.2f}x,"
                      f" edit p50 {f['edit_p50'] / small['edit_p50']:.2f}x, CPU create"
                      f" {f['create_cpu'] / small['create_cpu']:.2f}x, edit {f['edit_cpu'] / small['edit_cpu']:.2f}x"
                      " (target <= 1.5x)")  # fmt: skip


def format_cell(value: float | None, base: float | None, is_base: bool) -> str:
    if value is None:
        return "-"
    shown = f"{value:,.0f}" if abs(value) >= 100 else f"{value:.2f}"
    if is_base or not base:
        return shown
    return f"{shown} ({value / base:.2f}x)"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--sizes", default=os.environ.get("BENCH_LARGE_SIZES", "10000,50000"))
    parser.add_argument(
        "--repeat", type=int, default=3, help="cold index runs at <= 10,000 notes (median)"
    )
    parser.add_argument("--parts", default=",".join(PARTS), help=f"any of {','.join(PARTS)}")
    parser.add_argument(
        "--profile", action="store_true", help="profile each size's first cold index"
    )
    parser.add_argument("--rss-child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args([] if argv is None and __name__ != "__main__" else argv)
    if args.rss_child is not None:
        rss_child(args.rss_child)
        return
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))
    args.parts = args.parts.split(",")
    sizes = sorted(int(s) for s in args.sizes.split(","))
    small = small_writes() if "write" in args.parts else None
    results = [measure(n, args) for n in sizes]
    CACHE.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (CACHE / f"results-{stamp}.json").write_text(
        json.dumps({"small": small, "sizes": results}, indent=1)
    )
    report(results, small)


if __name__ == "__main__":
    main()
