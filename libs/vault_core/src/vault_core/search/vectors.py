"""The vectors of one vault: made in the background, kept in its index, searched in memory.

A worker thread compares the index's notes (path, hash) with what it has embedded for the
current model, embeds what is new or changed a batch at a time and drops what is gone, so
a write, a cold index or a model change never waits for a model: until the vault is done,
search says how far it has come and ranks by keywords. Vectors are stored as float16 in
the index database (`embeddings`, with `embedded` recording the hash each note had) and
held in memory as they are stored (512 bytes a section with 256 dimensions), beside int8
codes of each vector's first dimensions (128 bytes): a search ranks every section by its
codes (SimSIMD's integer dot products) and the best 2,048 by the whole vector (SimSIMD's
float16 dot products).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
import simsimd
import structlog

from vault_core import scope
from vault_core.index.store import Index
from vault_core.search import chunks
from vault_core.search.embedding import Embedder, Vectors, head
from vault_core.words import terms as query

log = structlog.get_logger("vault_core")

# SimSIMD's AVX-512 FP16 kernels ("sapphire") sum float16 products in float16: a cosine came
# out up to 1.7e-4 off, enough to reorder close sections. Without them its float16 kernels
# convert to float32 and sum there (4e-8 off), as on any CPU without AVX-512 FP16; its int8
# kernels (the first pass) are not theirs.
simsimd.disable_capability("sapphire")

BATCH = 64  # notes per embedding round: a write waits at most one round's store
IDLE = 5.0  # seconds between looks when nothing poked the worker
MASKS = 16  # visibility masks kept, one per set of path rules recently searched with
QUESTIONS = 256  # question vectors kept (1 KiB each)
CANDIDATES = 2048
"""Rows a search ranks by their whole vectors, once every row is ranked by the int8 codes
of its first dimensions (`embedding.head`). Measured against ranking every row by its
whole vector, on bench_vectors' synthetic vaults and 60 questions: hybrid's top ten keep
99.5% of their hits at 10,000 notes (40,000 rows) and at 50,000 (200,000 rows), the 100
nearest notes 99.6% and 98.7%; 1,024 rows kept 98.7% and 97.7% of the top ten (95.3% of
the 100 nearest at 50,000) for 0.3 ms less, 4,096 kept 99.8% and 100% for 0.2–0.6 ms
more."""


ROOM = 16
"""Sections a note is given room for when a vault's vectors are loaded, so a fresh vault is
embedded without the table growing: each growth held the old arrays and the new at once
(at 50,000 notes the memory while embedding peaked at 1.38× where it settled). The room is
zeros the kernel hands out only when written (`np.zeros` of this size is mapped, not
filled), so the rows never used cost no memory; a vault with more sections than that grows
as before."""


@dataclass(frozen=True)
class Progress:
    model: str
    embedded: int
    total: int
    loaded: bool = True
    """The stored vectors are in memory: until then search cannot rank by meaning, however
    many notes the table says are embedded (a node just started on an embedded vault)."""

    @property
    def done(self) -> bool:
        return self.loaded and self.embedded >= self.total

    def as_dict(self) -> dict[str, object]:
        return {
            "model": self.model,
            "embedded": self.embedded,
            "total": self.total,
            "done": self.done,
        }


class _Mask(NamedTuple):
    """A visibility mask of the first `rows` rows, made when the table had moved `moves`
    times."""

    moves: int
    rows: int
    mask: npt.NDArray[np.bool_]


class Match(NamedTuple):
    path: str
    heading: str
    score: float


@dataclass
class _Table:
    """Rows of (path, heading) and their vectors; a replaced note's old rows are dead.

    Each vector is kept whole as float16, the index's own precision (the values it was
    stored with, in half the memory of float32), and its first `head` dimensions also as
    int8 codes with the row's scale (`_quantised`): a search ranks every row by its codes
    (128 bytes a row for WordLlama, against 512 for those dimensions as float32), then only
    the best `candidates` rows by their whole vectors (`nearest`, `_dot`). A table of
    `candidates` rows or fewer is ranked by the whole vectors alone. Picking the 2,048
    candidates' rows out of the table was the larger part of that second pass: 79 µs as
    float16 against 195 as float32 at 10,000 notes, and SimSIMD's float16 kernel ranks them
    in 18 µs where numpy's float32 vecdot took 41.
    """

    dimensions: int
    head: int
    candidates: int = CANDIDATES
    full: npt.NDArray[np.float16] = field(init=False)
    codes: npt.NDArray[np.int8] = field(init=False)
    scales: npt.NDArray[np.float32] = field(init=False)  # what one unit of a row's codes is
    alive: npt.NDArray[np.bool_] = field(init=False)
    owner: npt.NDArray[np.int32] = field(init=False)  # each row's note: its note's first row
    meta: list[tuple[str, str]] = field(default_factory=list)
    rows_of: dict[str, list[int]] = field(default_factory=dict)
    moves: int = 0  # counts compactions: rows [0, n) stay the same rows until the next

    def __post_init__(self) -> None:
        self.head = min(self.head or self.dimensions, self.dimensions)
        self.full = np.zeros((1024, self.dimensions), dtype=np.float16)
        self.codes = np.zeros((1024, self.head), dtype=np.int8)
        self.scales = np.zeros(1024, dtype=np.float32)
        self.alive = np.zeros(1024, dtype=bool)
        self.owner = np.zeros(1024, dtype=np.int32)

    def put(self, path: str, headings: Sequence[str], vectors: npt.NDArray[Any]) -> None:
        self.drop(path)
        start, count = len(self.meta), len(headings)
        if start + count > len(self.alive):
            self._grow(start + count)
        rows = slice(start, start + count)
        self.full[rows] = vectors
        self.codes[rows], self.scales[rows] = _quantised(
            self.full[rows, : self.head].astype(np.float32)
        )
        self.alive[rows] = True
        self.owner[rows] = start
        self.meta += [(path, heading) for heading in headings]
        self.rows_of[path] = list(range(start, start + count))
        if len(self.meta) > 1024 and self.alive[: len(self.meta)].sum() < len(self.meta) // 2:
            self._compact()

    def drop(self, path: str) -> None:
        for row in self.rows_of.pop(path, []):
            self.alive[row] = False

    def vectors(self, rows: Sequence[int]) -> npt.NDArray[np.float32]:
        picked: npt.NDArray[np.float32] = self.full[list(rows)].astype(np.float32)
        return picked

    def reserve(self, rows: int) -> None:
        """Room for `rows` rows in all, made at once (a load knows how many it brings)."""
        if rows > len(self.alive):
            self._resize(rows, np.arange(len(self.meta)))

    def _grow(self, needed: int) -> None:
        self.reserve(max(needed, len(self.alive) + len(self.alive) // 2))

    def _resize(self, size: int, keep: npt.NDArray[np.intp]) -> None:
        full = np.zeros((size, self.dimensions), dtype=np.float16)
        codes = np.zeros((size, self.head), dtype=np.int8)
        scales = np.zeros(size, dtype=np.float32)
        alive = np.zeros(size, dtype=bool)
        owner = np.zeros(size, dtype=np.int32)
        full[: len(keep)] = self.full[keep]
        codes[: len(keep)] = self.codes[keep]
        scales[: len(keep)] = self.scales[keep]
        alive[: len(keep)] = self.alive[keep]
        # A note's rows stay together and in order: its first row moves by as much as they.
        moved = np.zeros(len(self.alive), dtype=np.int32)
        moved[keep] = np.arange(len(keep), dtype=np.int32)
        owner[: len(keep)] = moved[self.owner[keep]]
        self.full, self.codes, self.scales = full, codes, scales
        self.alive, self.owner = alive, owner

    def _compact(self) -> None:
        keep = np.flatnonzero(self.alive[: len(self.meta)])
        self._resize(len(keep) + 1024, keep)
        self.meta = [self.meta[row] for row in keep]
        self.rows_of = {}
        for row, (path, _) in enumerate(self.meta):
            self.rows_of.setdefault(path, []).append(row)
        self.moves += 1

    def nearest(
        self, vector: Vectors, rows: int, visible: npt.NDArray[np.bool_] | None = None
    ) -> list[tuple[int, float]]:
        """The `rows` rows nearest `vector`, nearest first, dead and invisible ones left out."""
        found, scores = self._ranked(vector, rows, visible)
        return list(zip(found.tolist(), scores.tolist(), strict=True))

    def nearest_notes(
        self, vector: Vectors, notes: int, visible: npt.NDArray[np.bool_] | None = None
    ) -> list[tuple[int, float]]:
        """The `notes` notes nearest `vector`, nearest first, each as its nearest row and that
        row's score: picked among the 3 × `notes` nearest rows, in arrays, not row by row."""
        found, scores = self._ranked(vector, notes * 3, visible)
        _, first = np.unique(self.owner[found], return_index=True)
        first = np.sort(first)[:notes]
        return list(zip(found[first].tolist(), scores[first].tolist(), strict=True))

    def _ranked(
        self, vector: Vectors, rows: int, visible: npt.NDArray[np.bool_] | None
    ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float32]]:
        size = len(self.meta)
        whole = vector.astype(np.float16)
        if size > self.candidates:
            scores = _coarse(self.codes[:size], vector[: self.head])
            scores *= self.scales[:size]  # in order only: the question's own scale left out
        else:
            scores = _dot(self.full[:size], whole)
        scores[~self.alive[:size]] = -np.inf
        if visible is not None:  # the caller's path rules, before anything is picked
            scores[~visible[:size]] = -np.inf
        found = np.arange(size)
        if size > self.candidates:
            found = _best(scores, self.candidates)
            found = found[np.isfinite(scores[found])]
            scores = _dot(self.full[found], whole)
        best = _best(scores, rows)
        best = best[np.argsort(-scores[best], kind="stable")]
        best = best[np.isfinite(scores[best])]
        return found[best], scores[best]


def _quantised(
    vectors: npt.NDArray[np.float32],
) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.float32]]:
    """Each row as int8 codes and its scale (row ≈ codes × scale): the row's largest
    magnitude becomes ±127, so no row's range is wasted on another's."""
    peak = np.abs(vectors).max(axis=1) if vectors.size else np.zeros(len(vectors), np.float32)
    scales = (np.where(peak > 0, peak, 1.0) / 127).astype(np.float32)
    codes = np.rint(vectors / scales[:, None]).astype(np.int8)
    return codes, scales


def _coarse(codes: npt.NDArray[np.int8], vector: Vectors) -> npt.NDArray[np.float32]:
    """Each row's dot product with `vector` from its int8 codes, to be multiplied by the
    row's scale (and the question's, a constant left out where only their order counts), by
    SimSIMD's integer kernels in this thread: a quarter of the bytes of
    float32 and no BLAS threads to wait for (`_dot`). Measured at 10,000 notes (40,000 rows
    of 128): 0.25 ms against 0.75 for numpy's float32 vecdot, with the same rows handed on."""
    (query_codes,), _ = _quantised(vector[None, :].astype(np.float32))
    raw = simsimd.cdist(query_codes[None, :], codes, metric="dot", out_dtype="float32")
    scores: npt.NDArray[np.float32] = np.asarray(raw).reshape(-1)
    return scores


def _dot(rows: npt.NDArray[np.float16], vector: npt.NDArray[np.float16]) -> npt.NDArray[np.float32]:
    """Each float16 row's dot product with `vector`, by SimSIMD in this thread alone (it
    sums in float32: 55 µs for 2,048 rows of 256). A matrix product hands the work to BLAS,
    which splits it over both cores and waits for the slower half: while other work holds a
    core that wait was the search's whole cost (at 10,000 notes under load, 0.29 against
    0.46 ms in the median but 63 against 4.5 ms at p95)."""
    if not len(rows):
        return np.zeros(0, dtype=np.float32)
    raw = simsimd.cdist(vector[None, :], rows, metric="dot", out_dtype="float32")
    scores: npt.NDArray[np.float32] = np.asarray(raw).reshape(-1)
    return scores


def _best(scores: npt.NDArray[np.float32], count: int) -> npt.NDArray[np.intp]:
    """Where the `count` highest scores are, in no order."""
    if count >= len(scores):
        return np.arange(len(scores))
    if count <= 0:
        return np.arange(0)
    if len(scores) >= SAMPLED * count:
        # A threshold from every STRIDE-th score, set to let about 1.5 × count through: when
        # at least count pass it, the best count are all among them, and only those are
        # partitioned (at 40,000 rows for 2,048: 40 µs against 90 over every score).
        sample = scores[::STRIDE]
        rank = min(len(sample), -(-3 * count // (2 * STRIDE)))
        threshold = np.partition(sample, len(sample) - rank)[len(sample) - rank]
        passed = np.flatnonzero(scores >= threshold)
        if len(passed) >= count:
            return passed[np.argpartition(-scores[passed], count - 1)[:count]]
    return np.argpartition(-scores, count - 1)[:count]


SAMPLED = 8  # `_best` takes a threshold from a sample when there are this many per pick
STRIDE = 16


class VectorStore:
    """Vectors of one vault for one embedder; `start` the worker, `poke` it after changes."""

    def __init__(
        self,
        index: Index,
        embedder: Embedder,
        *,
        keep: Collection[str] = (),
        until: Callable[[], bool] | None = None,
    ) -> None:
        """`keep`: other models whose stored vectors stay (every other model's go when the
        store loads); `until`: a stand-in's end — once it returns True, the worker drops
        this model's vectors and stops."""
        self.index = index
        self.embedder = embedder
        self._keep = tuple(keep)
        self._until = until
        self._retired = False
        self._table = _Table(embedder.dimensions, head(embedder))
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._loaded = threading.Event()
        self._pending = -1  # notes left to embed at the last look (-1: not looked yet)
        self._masks: dict[object, _Mask] = {}
        self._questions: dict[str, Vectors] = {}
        self._thread = threading.Thread(target=self._run, name=f"embed-{index.vault}", daemon=True)

    def start(self) -> VectorStore:
        self._thread.start()
        return self

    def poke(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)

    def ready(self) -> bool:
        """Every note embedded with this model: search may rank by meaning."""
        return self._loaded.is_set() and self._pending == 0 and not self._retired

    def progress(self) -> Progress:
        with self.index.reading() as conn:
            (total,) = conn.execute("SELECT count(*) FROM notes WHERE is_note = 1").fetchone()
            (embedded,) = conn.execute(
                "SELECT count(*) FROM embedded e JOIN notes n ON n.path = e.path"
                " WHERE e.model = ? AND e.hash = n.hash AND n.is_note = 1",
                [self.embedder.name],
            ).fetchone()
        loaded = self._loaded.is_set() and self._pending >= 0  # and looked for work once
        return Progress(self.embedder.name, embedded, total, loaded)

    def nearest(self, text: str, limit: int) -> list[Match]:
        """The notes closest in meaning to `text`, best first, each with its best section."""
        return self.nearest_to(self.embedded(text), limit)

    def embedded(self, text: str) -> Vectors:
        """The question's vector, kept for the last QUESTIONS questions: the next page of a
        search, or the same question asked again, is not embedded again."""
        with self._lock:
            known = self._questions.pop(text, None)
            if known is not None:
                self._questions[text] = known  # the most recent last
                return known
        vector: Vectors = self.embedder.embed_questions([text])[0]
        vector.flags.writeable = False
        with self._lock:
            self._questions[text] = vector
            while len(self._questions) > QUESTIONS:
                self._questions.pop(next(iter(self._questions)))
        return vector

    def similar(self, path: str, limit: int) -> list[Match]:
        """The notes closest in meaning to the note at `path` (itself left out); none if
        it has no vectors yet."""
        with self._lock:
            rows = self._table.rows_of.get(path, [])
            if not rows:
                return []
            centre = self._table.vectors(rows).mean(axis=0)
        norm = float(np.linalg.norm(centre))
        if norm == 0:
            return []
        return [m for m in self.nearest_to(centre / norm, limit + 1) if m.path != path][:limit]

    def nearest_to(self, vector: Vectors, limit: int) -> list[Match]:
        """The `limit` notes whose closest section is nearest `vector`, best first; only
        notes the running call may see (`vault_core.scope`) take part."""
        with self._lock:
            rows = self._table.nearest_notes(vector, limit, self._visible())
            meta = [(self._table.meta[row], score) for row, score in rows]
        return [Match(path, heading, round(score, 4)) for (path, heading), score in meta]

    def _visible(self) -> npt.NDArray[np.bool_] | None:
        """Which rows the running call may see, kept per set of rules: rows are only ever
        added at the end (a replaced note's old rows die) until a compaction moves them, so
        after a write only the new rows' notes are asked about (at 50,000 notes, asking
        about every row after each write took 150 ms)."""
        key = scope.key()
        if key is None:
            return None
        table, size = self._table, len(self._table.meta)
        held = self._masks.pop(key, None)
        if held is not None and held.moves == table.moves and held.rows <= size:
            mask = held.mask
            if held.rows < size:
                mask = np.concatenate([mask[: held.rows], self._visible_rows(held.rows, size)])
        else:
            mask = self._visible_rows(0, size)
        while len(self._masks) >= MASKS:
            self._masks.pop(next(iter(self._masks)))
        self._masks[key] = _Mask(table.moves, size, mask)  # the most recent last
        return mask

    def _visible_rows(self, start: int, end: int) -> npt.NDArray[np.bool_]:
        """Whether the running call may see rows [start, end): asked once per note (its
        first row), not once per section."""
        table = self._table
        owners = table.owner[start:end]
        firsts = np.flatnonzero(owners == np.arange(start, end)) + start
        seen = np.fromiter(
            (scope.visible(table.meta[row][0]) for row in firsts.tolist()), bool, len(firsts)
        )
        by_note = np.zeros(end - start, dtype=bool)
        by_note[firsts - start] = seen
        visible: npt.NDArray[np.bool_] = by_note[owners - start]
        return visible

    # ------------------------------------------------------------------ the worker

    def _run(self) -> None:
        try:
            self._load()
            while not self._stop.is_set():
                if self._until is not None and self._until():
                    self._retire()
                    return
                if not self._round():
                    self._wake.wait(IDLE)
                    self._wake.clear()
        except Exception as exc:  # noqa: BLE001 — a thread's boundary: log, stop embedding
            log.error("embedding_stopped", vault=self.index.vault, error_type=type(exc).__name__)  # noqa: TRY400

    def _load(self) -> None:
        with self.index.reading() as conn:
            rows = conn.execute(
                "SELECT path, heading, vector FROM embeddings WHERE model = ? ORDER BY path, chunk",
                [self.embedder.name],
            ).fetchall()
            (notes,) = conn.execute("SELECT count(*) FROM notes WHERE is_note = 1").fetchone()
        grouped: dict[str, tuple[list[str], list[bytes]]] = {}
        for path, heading, blob in rows:
            headings, blobs = grouped.setdefault(path, ([], []))
            headings.append(heading)
            blobs.append(blob)
        with self._lock:
            self._table.reserve(max(len(rows), notes * ROOM))
            for path, (headings, blobs) in grouped.items():
                vectors = np.frombuffer(b"".join(blobs), dtype=np.float16)
                self._table.put(path, headings, vectors.reshape(len(headings), -1))
        kept = [self.embedder.name, *self._keep]
        others = f"model NOT IN ({', '.join('?' * len(kept))})"
        with self.index.writing() as conn:  # another model's vectors are of no use any more
            conn.execute(f"DELETE FROM embeddings WHERE {others}", kept)
            conn.execute(f"DELETE FROM embedded WHERE {others}", kept)
        self._loaded.set()

    def _retire(self) -> None:
        """A stand-in's end: the model it stood in for has every note, so this one's
        vectors go from the index and from memory."""
        self._retired = True
        model = self.embedder.name
        with self.index.writing() as conn:
            conn.execute("DELETE FROM embeddings WHERE model = ?", [model])
            conn.execute("DELETE FROM embedded WHERE model = ?", [model])
        with self._lock:
            self._table = _Table(self.embedder.dimensions, head(self.embedder))
            self._masks.clear()
        log.info("stand_in_retired", vault=self.index.vault, model=model)

    def _round(self) -> bool:
        """Embed one batch of what changed and drop what is gone; False when nothing was."""
        model = self.embedder.name
        with self.index.reading() as conn:
            todo = conn.execute(
                "SELECT n.path, n.hash, n.title, f.body FROM notes n"
                " JOIN notes_fts f ON f.rowid = n.rowid"
                " LEFT JOIN embedded e ON e.path = n.path AND e.model = ?"
                " WHERE n.is_note = 1 AND (e.hash IS NULL OR e.hash != n.hash) LIMIT ?",
                [model, BATCH + 1],
            ).fetchall()
            gone = [
                p
                for (p,) in conn.execute(
                    "SELECT e.path FROM embedded e LEFT JOIN notes n ON n.path = e.path"
                    " AND n.is_note = 1 WHERE e.model = ? AND n.path IS NULL",
                    [model],
                )
            ]
        self._pending = len(todo)
        if gone:
            self._forget(gone)
        if not todo:
            return bool(gone)
        self._embed(todo[:BATCH])
        self._pending = max(0, len(todo) - BATCH)
        return True

    def _embed(self, notes: list[tuple[str, str, str, str]]) -> None:
        pieces = [
            (path, digest, chunks.chunks(title, query.unspaced(body)))
            for path, digest, title, body in notes
        ]
        texts = [chunk.text for _, _, found in pieces for chunk in found]
        vectors = self.embedder.embed(texts).astype(np.float16)
        model, at = self.embedder.name, 0
        with self.index.writing() as conn:
            for path, digest, found in pieces:
                conn.execute("DELETE FROM embeddings WHERE path = ? AND model = ?", [path, model])
                conn.executemany(
                    "INSERT INTO embeddings (path, chunk, model, heading, vector)"
                    " VALUES (?, ?, ?, ?, ?)",
                    [
                        (path, n, model, chunk.heading, vectors[at + n].tobytes())
                        for n, chunk in enumerate(found)
                    ],
                )
                conn.execute(
                    "INSERT OR REPLACE INTO embedded (path, model, hash) VALUES (?, ?, ?)",
                    [path, model, digest],
                )
                at += len(found)
        with self._lock:
            at = 0
            for path, _, found in pieces:
                if found:
                    self._table.put(path, [c.heading for c in found], vectors[at : at + len(found)])
                else:
                    self._table.drop(path)
                at += len(found)

    def _forget(self, gone: list[str]) -> None:
        model = self.embedder.name
        with self.index.writing() as conn:
            for path in gone:
                conn.execute("DELETE FROM embeddings WHERE path = ? AND model = ?", [path, model])
                conn.execute("DELETE FROM embedded WHERE path = ? AND model = ?", [path, model])
        with self._lock:
            for path in gone:
                self._table.drop(path)
