"""note_search as an agent meets it: over MCP (loopback HTTP, JSON-RPC, the token checked)
against `secondbrain serve` on a synthetic vault of 10,000 notes whose vectors are made,
by mode, with the questions asked in turn mode by mode so load weighs on each alike.

"fts" is the search as it was before natural-language queries (`syntax: "fts"`: every
word must occur, BM25); "keyword" the natural keyword mode; "hybrid" the default once the
vectors are made; "semantic" by meaning only. A JSON-RPC `ping` over the same connection
is the floor every call pays. bench_vectors.py times the same modes in-process, without
the node around them. BENCH_SEARCH_MCP_NOTES sets the vault size (default 10000).

"as filed" is the search as it was when issue 13 asked for natural-language search (the
commit before that work, `FILED`, checked out in a git worktree and served beside today's
node over a copy of the same vault, its plain query asked in turn with the others): the
"today's" its latency target was set against. "fts (before)" is today's code in that
syntax, which the same work made faster too. Without the repository's history (a shallow
clone), that node is left out.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_node import RawClient, serving
from bench_vectors import percentiles, timings
from vaultgen import generate

from vault_core.library import Library, Settings
from vault_core.search import embedding

NOTES = int(os.environ.get("BENCH_SEARCH_MCP_NOTES", "10000"))
FILED = "40506ea^"  # the commit before note_search took questions in plain words
ROUNDS, PER_ROUND = 3, 60
EMBED_DEADLINE = 1800.0
MODES: dict[str, dict[str, Any]] = {
    "fts (before)": {"mode": "keyword", "syntax": "fts"},
    "keyword": {"mode": "keyword"},
    "hybrid": {},
    "semantic": {"mode": "semantic"},
}


def prepared(data: Path) -> None:
    """Index, commit and embed the vault once in-process, as a node that ran before has."""
    started = time.perf_counter()
    model = embedding.shared(embedding.BUNDLED)
    library = Library(data, Settings(watch=False, embedder=model)).open_all()
    try:
        vectors = library.get("default").vectors
        assert vectors is not None, "the bundled model did not load"
        while not vectors.ready():
            if time.perf_counter() - started > EMBED_DEADLINE:
                raise RuntimeError("embedding did not finish")
            time.sleep(0.2)
    finally:
        library.close()
    print(
        f"  indexed, committed and embedded {NOTES} notes in {time.perf_counter() - started:.0f} s"
    )


def questions(vault: Path) -> list[list[str]]:
    """Two words drawn from note bodies, distinct questions in every round."""
    rng = random.Random(7)
    files = sorted(vault.rglob("*.md"))
    words = [
        w
        for path in rng.sample(files, 200)
        for w in path.read_text(encoding="utf-8").split()[5:60]
        if w.isalpha() and len(w) > 4
    ]
    return [
        [f"{rng.choice(words)} {rng.choice(words)}" for _ in range(PER_ROUND)]
        for _ in range(ROUNDS)
    ]


def wait_embedded(client: RawClient) -> None:
    started = time.perf_counter()
    while True:
        result = client.call("vault_stats", {})
        state = (result.get("structuredContent") or {}).get("embedding") or {}
        if not result["isError"] and state.get("done"):
            return
        if time.perf_counter() - started > EMBED_DEADLINE:
            raise RuntimeError(f"the node never finished embedding: {state}")
        time.sleep(0.2)


def ping(client: RawClient) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    status, _ = client.request("POST", "/mcp", body)
    assert status == 200


def timed(
    client: RawClient, rounds: list[list[str]], filed: RawClient | None = None
) -> dict[str, list[float]]:
    calls: dict[str, Callable[[str], object]] = {"ping (floor)": lambda _q: ping(client)}
    if filed is not None:

        def as_filed(q: str) -> None:
            result = filed.call("note_search", {"query": q, "limit": 10})
            if result["isError"]:
                raise RuntimeError(f"as filed {q!r}: {result['content'][0]['text']}")

        calls["as filed"] = as_filed
    for label, extra in MODES.items():

        def search(q: str, extra: dict[str, Any] = extra, label: str = label) -> None:
            result = client.call("note_search", {"query": q, "limit": 10, **extra})
            if result["isError"]:
                raise RuntimeError(f"{label} {q!r}: {result['content'][0]['text']}")
            mode = result["structuredContent"]["mode"]
            wanted = extra.get("mode", "hybrid")
            if mode != wanted:
                raise RuntimeError(f"{label}: answered in {mode} mode, not {wanted}")

        calls[label] = search
    for question in rounds[0][:10]:  # warm the connection, the caches and the model
        for call in calls.values():
            call(question)
    return timings(calls, rounds)


@contextlib.contextmanager
def checkout(commit: str, into: Path) -> Iterator[Path | None]:
    """The repository at `commit` in a git worktree under `into`, removed after; None when
    the history does not hold it."""
    repo = Path(__file__).resolve().parent.parent
    target = into / "filed"
    made = subprocess.run(
        ["git", "-C", str(repo), "worktree", "add", "--detach", str(target), commit],
        capture_output=True,
        check=False,
    )
    if made.returncode != 0:
        print(f"  (no {commit} in this clone's history: the search as filed is left out)")
        yield None
        return
    try:
        yield target
    finally:
        subprocess.run(
            ["git", "-C", str(repo), "worktree", "remove", "--force", str(target)],
            capture_output=True,
            check=False,
        )


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-search-mcp-") as folder:
        root = Path(folder)
        vault = generate(root / "data" / "default", NOTES)
        prepared(root / "data")
        shutil.copytree(root / "data", root / "filed" / "data", symlinks=True)
        rounds = questions(vault)
        with contextlib.ExitStack() as stack:
            node = stack.enter_context(serving(root))
            code = stack.enter_context(checkout(FILED, root / "code"))
            old = stack.enter_context(serving(root / "filed", code)) if code else None
            client = RawClient(node)
            stack.callback(client.close)
            filed = RawClient(old) if old else None
            if filed is not None:
                stack.callback(filed.close)
            wait_embedded(client)
            times = timed(client, rounds, filed)
    print(f"  note_search over MCP at {NOTES} notes, {ROUNDS * PER_ROUND} questions, one client:")
    medians: dict[str, float] = {}
    for label, values in times.items():
        medians[label], p95 = percentiles(values)
        print(f"    {label:<14} p50 {medians[label]:6.2f} ms  p95 {p95:6.2f} ms")
    for base in ("fts (before)", "as filed"):
        if base in medians:
            for label in ("keyword", "hybrid", "semantic"):
                print(f"    {label}/{base} p50 {medians[label] / medians[base]:5.2f}x")


if __name__ == "__main__":
    main()
