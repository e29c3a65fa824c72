"""The vectors of one vault: made in the background, kept in its index, searched in memory.

A worker thread compares the index's notes (path, hash) with what it has embedded for the
current model, embeds what is new or changed a batch at a time and drops what is gone, so
a write, a cold index or a model change never waits for a model: until the vault is done,
search says how far it has come and ranks by keywords. Vectors are stored as float16 in
the index database (`embeddings`, with `embedded` recording the hash each note had) and
held in memory as float32 in one growing matrix (1 KiB a section with 256 dimensions), so
a search is one matrix-vector product.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import structlog

from vault_core import chunks, query
from vault_core.embedding import Embedder, Vectors
from vault_core.index import Index

log = structlog.get_logger("vault_core")

BATCH = 64  # notes per embedding round: a write waits at most one round's store
IDLE = 5.0  # seconds between looks when nothing poked the worker


@dataclass(frozen=True)
class Progress:
    model: str
    embedded: int
    total: int

    @property
    def done(self) -> bool:
        return self.embedded >= self.total

    def as_dict(self) -> dict[str, object]:
        return {"model": self.model, "embedded": self.embedded, "total": self.total,
                "done": self.done}  # fmt: skip


@dataclass(frozen=True)
class Match:
    path: str
    heading: str
    score: float


@dataclass
class _Table:
    """Rows of (path, heading) and their vectors; a replaced note's old rows are dead."""

    dimensions: int
    data: npt.NDArray[np.float32] = field(init=False)
    alive: npt.NDArray[np.bool_] = field(init=False)
    meta: list[tuple[str, str]] = field(default_factory=list)
    rows_of: dict[str, list[int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.data = np.zeros((1024, self.dimensions), dtype=np.float32)
        self.alive = np.zeros(1024, dtype=bool)

    def put(self, path: str, headings: Sequence[str], vectors: npt.NDArray[Any]) -> None:
        self.drop(path)
        start, count = len(self.meta), len(headings)
        while start + count > len(self.data):
            self.data = np.concatenate([self.data, np.zeros_like(self.data)])
            self.alive = np.concatenate([self.alive, np.zeros_like(self.alive)])
        self.data[start : start + count] = vectors
        self.alive[start : start + count] = True
        self.meta += [(path, heading) for heading in headings]
        self.rows_of[path] = list(range(start, start + count))
        if len(self.meta) > 1024 and self.alive[: len(self.meta)].sum() < len(self.meta) // 2:
            self._compact()

    def drop(self, path: str) -> None:
        for row in self.rows_of.pop(path, []):
            self.alive[row] = False

    def _compact(self) -> None:
        keep = np.flatnonzero(self.alive[: len(self.meta)])
        self.data = np.concatenate([self.data[keep], np.zeros_like(self.data[: len(keep) + 1])])
        self.alive = np.zeros(len(self.data), dtype=bool)
        self.alive[: len(keep)] = True
        self.meta = [self.meta[row] for row in keep]
        self.rows_of = {}
        for row, (path, _) in enumerate(self.meta):
            self.rows_of.setdefault(path, []).append(row)

    def nearest(self, vector: Vectors, rows: int) -> list[tuple[int, float]]:
        size = len(self.meta)
        scores = self.data[:size] @ vector
        scores[~self.alive[:size]] = -np.inf
        best = min(rows, size)
        if best == 0:
            return []
        top = np.argpartition(-scores, best - 1)[:best]
        return [(int(row), float(scores[row])) for row in top if np.isfinite(scores[row])]


class VectorStore:
    """Vectors of one vault for one embedder; `start` the worker, `poke` it after changes."""

    def __init__(self, index: Index, embedder: Embedder) -> None:
        self.index = index
        self.embedder = embedder
        self._table = _Table(embedder.dimensions)
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._loaded = threading.Event()
        self._pending = -1  # notes left to embed at the last look (-1: not looked yet)
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
        return self._loaded.is_set() and self._pending == 0

    def progress(self) -> Progress:
        with self.index.reading() as conn:
            (total,) = conn.execute("SELECT count(*) FROM notes WHERE is_note = 1").fetchone()
            (embedded,) = conn.execute(
                "SELECT count(*) FROM embedded e JOIN notes n ON n.path = e.path"
                " WHERE e.model = ? AND e.hash = n.hash AND n.is_note = 1",
                [self.embedder.name],
            ).fetchone()
        return Progress(self.embedder.name, embedded, total)

    def nearest(self, text: str, limit: int) -> list[Match]:
        """The notes closest in meaning to `text`, best first, each with its best section."""
        return self._notes_near(self.embedder.embed([text])[0], limit)

    def similar(self, path: str, limit: int) -> list[Match]:
        """The notes closest in meaning to the note at `path` (itself left out); none if
        it has no vectors yet."""
        with self._lock:
            rows = self._table.rows_of.get(path, [])
            if not rows:
                return []
            centre = self._table.data[rows].astype(np.float32).mean(axis=0)
        norm = float(np.linalg.norm(centre))
        if norm == 0:
            return []
        return [m for m in self._notes_near(centre / norm, limit + 1) if m.path != path][:limit]

    def _notes_near(self, vector: Vectors, limit: int) -> list[Match]:
        """The `limit` notes whose closest section is nearest `vector`, best first."""
        with self._lock:
            rows = self._table.nearest(vector, limit * 3)
            meta = [(self._table.meta[row], score) for row, score in rows]
        best: dict[str, Match] = {}
        for (path, heading), score in sorted(meta, key=lambda item: -item[1]):
            if path not in best:
                best[path] = Match(path, heading, round(score, 4))
        return list(best.values())[:limit]

    # ------------------------------------------------------------------ the worker

    def _run(self) -> None:
        try:
            self._load()
            while not self._stop.is_set():
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
        grouped: dict[str, tuple[list[str], list[bytes]]] = {}
        for path, heading, blob in rows:
            headings, blobs = grouped.setdefault(path, ([], []))
            headings.append(heading)
            blobs.append(blob)
        with self._lock:
            for path, (headings, blobs) in grouped.items():
                vectors = np.frombuffer(b"".join(blobs), dtype=np.float16)
                self._table.put(path, headings, vectors.reshape(len(headings), -1))
        with self.index.writing() as conn:  # another model's vectors are of no use any more
            conn.execute("DELETE FROM embeddings WHERE model != ?", [self.embedder.name])
            conn.execute("DELETE FROM embedded WHERE model != ?", [self.embedder.name])
        self._loaded.set()

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
            gone = [p for (p,) in conn.execute(
                "SELECT e.path FROM embedded e LEFT JOIN notes n ON n.path = e.path"
                " AND n.is_note = 1 WHERE e.model = ? AND n.path IS NULL", [model],
            )]  # fmt: skip
        self._pending = len(todo)
        if gone:
            self._forget(gone)
        if not todo:
            return bool(gone)
        self._embed(todo[:BATCH])
        self._pending = max(0, len(todo) - BATCH)
        return True

    def _embed(self, notes: list[tuple[str, str, str, str]]) -> None:
        pieces = [(path, digest, chunks.chunks(title, query.unspaced(body)))
                  for path, digest, title, body in notes]  # fmt: skip
        texts = [chunk.text for _, _, found in pieces for chunk in found]
        vectors = self.embedder.embed(texts).astype(np.float16)
        model, at = self.embedder.name, 0
        with self.index.writing() as conn:
            for path, digest, found in pieces:
                conn.execute("DELETE FROM embeddings WHERE path = ? AND model = ?", [path, model])
                conn.executemany(
                    "INSERT INTO embeddings (path, chunk, model, heading, vector)"
                    " VALUES (?, ?, ?, ?, ?)",
                    [(path, n, model, chunk.heading, vectors[at + n].tobytes())
                     for n, chunk in enumerate(found)],
                )  # fmt: skip
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
