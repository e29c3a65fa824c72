"""The per-vault SQLite index (spec §10): a cache of the notes, rebuilt whenever in doubt.

One writer connection behind a lock and a pool of reader connections (WAL), so
searches run beside each other and beside writes. An update for a path only
ever stores what the file holds at the moment of the write transaction, so a
slow watcher can never overwrite a newer state written by a tool. A file that
cannot be indexed is skipped and listed in `skips`, never a failure.
"""

from __future__ import annotations

import contextlib
import queue
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import structlog

from vault_core import deadline, linkstore, paths, snapshot
from vault_core.frontmatter import plain_value
from vault_core.query import spaced
from vault_core.schema import SCHEMA, SCHEMA_VERSION
from vault_core.skips import Skipped, Skips
from vault_core.snapshot import Snapshot
from vault_core.text import content_hash

log = structlog.get_logger("vault_core")

INDEX_FILE = "index.db"
READERS = 8  # kept open; more concurrent readers open and close their own
BATCH = 200  # files per reconcile transaction; each file is still stored whole
_RETRIES = 5


@dataclass(frozen=True)
class ReconcileStats:
    files: int
    changed: int
    removed: int
    skipped: int
    seconds: float


class Index:
    """The index of one vault. Thread-safe; open with `Index.open(vault_root, name)`."""

    def __init__(self, root: Path, vault: str, db_path: Path, readers: int = READERS) -> None:
        self.root = root
        self.vault = vault
        self.db_path = db_path
        self._write_lock = threading.Lock()
        self._readers: queue.LifoQueue[sqlite3.Connection] = queue.LifoQueue()
        self._reader_count = readers
        self._writer = self._connect()
        self.skips = Skips(vault)
        self.on_change: Callable[[], None] | None = None
        """Called after every write transaction (the vector worker's poke)."""

    @classmethod
    def open(cls, root: Path, vault: str, readers: int = READERS) -> Index:
        """Open or create `<root>/.secondbrain/index.db`; a broken file is rebuilt, loudly."""
        db_path = root / ".secondbrain" / INDEX_FILE
        db_path.parent.mkdir(parents=True, exist_ok=True)
        index = None
        try:
            index = cls(root, vault, db_path, readers)
            index._migrate()
        except sqlite3.DatabaseError as exc:
            # Loud, but no traceback: the cause is the file, and the fix is the rebuild.
            log.error("index_rebuilt", vault=vault, reason=f"{type(exc).__name__}: {exc}")  # noqa: TRY400
            if index is not None:
                index.close()
            _remove_db(db_path)
            index = cls(root, vault, db_path, readers)
            index._migrate()
        return index

    def _connect(self, *, readonly: bool = False) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.db_path, timeout=5.0, check_same_thread=False, isolation_level=None
        )
        conn.execute("PRAGMA busy_timeout = 5000")
        if readonly:
            conn.execute("PRAGMA query_only = 1")
        else:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
        return conn

    def _migrate(self) -> None:
        conn = self._writer
        conn.execute("PRAGMA quick_check").fetchone()
        row = None
        with contextlib.suppress(sqlite3.OperationalError):
            row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        if row is not None and row[0] != SCHEMA_VERSION:
            raise sqlite3.DatabaseError(f"index schema {row[0]} is not {SCHEMA_VERSION}")
        conn.executescript(SCHEMA)
        conn.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema', ?)", (SCHEMA_VERSION,)
        )

    def close(self) -> None:
        with self._write_lock:
            self._writer.close()
        while True:
            try:
                self._readers.get_nowait().close()
            except queue.Empty:
                break

    @contextlib.contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """A reader connection from the pool (created on demand, at most `readers` kept)."""
        try:
            conn = self._readers.get_nowait()
        except queue.Empty:
            conn = self._connect(readonly=True)
        try:
            yield conn
        finally:
            if self._readers.qsize() < self._reader_count:
                self._readers.put(conn)
            else:
                conn.close()

    @contextlib.contextmanager
    def writing(self) -> Iterator[sqlite3.Connection]:
        """The writer in a transaction, for what is derived from the notes (their vectors)."""
        with self._write_lock, self._transaction() as conn:
            yield conn

    @contextlib.contextmanager
    def querying(self) -> Iterator[sqlite3.Connection]:
        """A reader connection whose statements the per-call deadline can interrupt."""
        with self.reading() as conn, deadline.interruptible(conn):
            yield conn

    # ------------------------------------------------------------------ updates

    def update_paths(self, rels: Sequence[str]) -> None:
        """Bring these paths up to date: ingest what exists, remove what is gone."""
        for rel in rels:
            self.update_path(rel)

    def update_path(self, rel: str) -> None:
        """Spec §10.2 `UpdatePath`: re-read one file (or drop it) and re-resolve links.

        A path that is gone takes along what the index holds under it: a folder
        moved out of the vault is reported as that one path. So does a path `walk` would
        not yield (through a linked folder, into a dot folder): the watcher follows links.
        """
        if not paths.valid_name(rel):
            self.skips.add(Skipped(paths.shown(rel), "bad_name"))
            return
        target = self.root.joinpath(*rel.split("/"))
        if not paths.walkable(self.root, rel):
            with self._write_lock, self._transaction() as conn:
                self._drop(conn, rel, everything_under=True)
            return
        if self._unchanged(rel, target):
            return  # e.g. the watcher reporting a write this index already took in
        for _ in range(_RETRIES):
            snap = snapshot.read(self.root, rel, target)
            with self._write_lock, self._transaction() as conn:
                if not snapshot.still(self.root, target, snap):
                    continue  # the file changed while we read it: read it again
                if snap is None:
                    self._drop(conn, rel)
                    return
                old = linkstore.names_of(conn, rel)
                linkstore.resolve_after_change(conn, rel, old, _store(conn, snap))
            self._note_skip(snap)
            return
        log.warning("index_update_gave_up", vault=self.vault, path=rel)

    def _drop(self, conn: sqlite3.Connection, rel: str, *, everything_under: bool = False) -> None:
        """Remove `rel` and what is gone under it (or everything under it) from the index."""
        under = self._under(conn, rel)
        if not everything_under:
            under = [p for p in under if snapshot.present(self.root, p) is None]
        for gone in [rel, *under]:
            old = linkstore.names_of(conn, gone)
            _delete(conn, gone)
            linkstore.resolve_after_change(conn, gone, old, [])
            self.skips.discard(gone)

    def _note_skip(self, snap: Snapshot) -> None:
        if snap.skipped:
            self.skips.add(Skipped(snap.rel, snap.skipped, snap.mtime_ns, snap.size))
        else:
            self.skips.discard(snap.rel)

    def _unchanged(self, rel: str, target: Path) -> bool:
        """The index already holds exactly what the file holds (stat and content hash)."""
        found = snapshot.stat_of(self.root, target)
        earlier = self.skips.get(rel)
        if found is not None and earlier is not None:
            return (earlier.mtime_ns, earlier.size) == (found.st_mtime_ns, found.st_size)
        if found is None:
            return False
        with self.reading() as conn:
            row = conn.execute(
                "SELECT mtime, size, hash, is_note FROM notes WHERE path = ?", (rel,)
            ).fetchone()
        if row is None or (row[0], row[1]) != (found.st_mtime_ns, found.st_size):
            return False
        try:
            return not row[3] or content_hash(target.read_bytes()) == row[2]
        except OSError:
            return False

    def _under(self, conn: sqlite3.Connection, rel: str) -> list[str]:
        """Indexed paths below folder `rel` ('0' is the byte after '/')."""
        rows = conn.execute(
            "SELECT path FROM notes WHERE path > ? AND path < ?", (rel + "/", rel + "0")
        ).fetchall()
        return [p for (p,) in rows]

    def reconcile(self, progress: Callable[[int, int], object] | None = None) -> ReconcileStats:
        """Spec §10.2: ingest new and changed files, drop vanished ones, re-resolve links.

        `progress(done, total)` is called as files to ingest are stored.
        """
        started = time.perf_counter()
        with self.reading() as conn:
            known = {p: (m, s) for p, m, s in conn.execute("SELECT path, mtime, size FROM notes")}
        seen, todo, skipped = self._walk(known)
        stored: set[str] = set()
        batch: list[tuple[paths.Entry, Snapshot | None]] = []
        for done, pair in enumerate(snapshot.read_many(self.root, todo), start=1):
            batch.append(pair)
            if len(batch) == BATCH or done == len(todo):
                stored |= self._store_batch(batch, fresh=not known, skipped=skipped)
                batch = []
                if progress is not None:
                    progress(done, len(todo))
        self.skips.replace(skipped.values())
        changed = len(stored)
        dropped = any(e.rel in known and e.rel not in stored for e in todo)
        removed = sum(self._remove_if_gone(rel) for rel in set(known) - seen)
        if changed or removed or dropped:
            with self._write_lock, self._transaction() as conn:
                linkstore.resolve_all(conn)
        elapsed = time.perf_counter() - started
        stats = ReconcileStats(len(seen), changed, removed, len(skipped), elapsed)
        log.info("index_reconciled", vault=self.vault, files=stats.files, changed=changed,
                 removed=removed, skipped=stats.skipped, ms=round(elapsed * 1000))  # fmt: skip
        return stats

    def _walk(
        self, known: dict[str, tuple[int, int]]
    ) -> tuple[set[str], list[paths.Entry], dict[str, Skipped]]:
        """Every visible path, the files to read (new or changed), and what is skipped: what
        the walk passes over, and files skipped before for what they hold, unchanged since."""
        seen, todo = set(), []
        skipped: dict[str, Skipped] = {}
        earlier = {item.path: item for item in self.skips.listing() if item.size >= 0}
        for entry in paths.walk(self.root, skipped=lambda item: skipped.update({item.path: item})):
            seen.add(entry.rel)
            stamp = (entry.mtime_ns, entry.size)
            before = earlier.get(entry.rel)
            if before is not None and (before.mtime_ns, before.size) == stamp:
                skipped[entry.rel] = before
            elif known.get(entry.rel) != stamp:
                todo.append(entry)
        return seen, todo, skipped

    def _store_batch(
        self,
        snaps: Sequence[tuple[paths.Entry, Snapshot | None]],
        *,
        fresh: bool,
        skipped: dict[str, Skipped],
    ) -> set[str]:
        """Store files read outside the lock in one transaction (each file whole).

        Returns the paths now indexed; those that cannot be go into `skipped`. A file
        that changed between read and store is read again on its own; one that
        vanished since the walk is dropped.
        """
        stored, again, done = set(), [], []
        with self._write_lock, self._transaction() as conn:
            for entry, snap in snaps:
                if not snapshot.still(self.root, entry.abs, snap):
                    again.append(entry)
                elif snap is None:
                    _delete(conn, entry.rel)
                else:
                    # `fresh` was judged before the lock: an update may have stored it since.
                    _store(conn, snap, fresh=fresh and not _indexed(conn, entry.rel))
                    done.append(snap)
        done += [snap for e in again if (snap := self._ingest_one(e.rel, e.abs)) is not None]
        for snap in done:
            if snap.skipped:
                skipped[snap.rel] = Skipped(snap.rel, snap.skipped, snap.mtime_ns, snap.size)
            else:
                stored.add(snap.rel)
        return stored

    def _ingest_one(self, rel: str, target: Path) -> Snapshot | None:
        for _ in range(_RETRIES):
            snap = snapshot.read(self.root, rel, target)
            with self._write_lock, self._transaction() as conn:
                if not snapshot.still(self.root, target, snap):
                    continue
                if snap is None:
                    _delete(conn, rel)
                    return None
                _store(conn, snap)
                return snap
        return None

    def _remove_if_gone(self, rel: str) -> bool:
        with self._write_lock, self._transaction() as conn:
            if snapshot.present(self.root, rel) is not None:
                return False  # still there after all (a rename in flight): keep it
            _delete(conn, rel)
            return True

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        conn = self._writer
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        else:
            conn.execute("COMMIT")
            if self.on_change is not None:
                self.on_change()


def _indexed(conn: sqlite3.Connection, rel: str) -> bool:
    return conn.execute("SELECT 1 FROM notes WHERE path = ?", (rel,)).fetchone() is not None


def _delete(conn: sqlite3.Connection, rel: str) -> None:
    row = conn.execute("SELECT rowid FROM notes WHERE path = ?", (rel,)).fetchone()
    if row is not None:
        conn.execute("DELETE FROM notes_fts WHERE rowid = ?", (row[0],))
    for table, column in _PATH_TABLES:
        conn.execute(f"DELETE FROM {table} WHERE {column} = ?", (rel,))


_PATH_TABLES = (
    ("notes", "path"), ("tags", "path"), ("links", "src"), ("headings", "path"),
    ("aliases", "path"), ("tasks", "path"), ("embeddings", "path"), ("names", "path"),
)  # fmt: skip


def _store(
    conn: sqlite3.Connection, snap: Snapshot, *, fresh: bool = False
) -> list[tuple[int, str]]:
    """Spec §10.2 `ingest`: replace every row of the path; returns its link names.

    `fresh` (an empty index being filled) skips the deletes: there is nothing to replace.
    """
    if not fresh:
        _delete(conn, snap.rel)
    if snap.skipped:
        return []  # listed in `Index.skips`, which logs it
    note = snap.note
    if note is None:
        name = snap.rel.rsplit("/", 1)[-1]
        cursor = conn.execute(
            "INSERT INTO notes (path, title, mtime, size, is_note) VALUES (?, ?, ?, ?, 0)",
            (snap.rel, name, snap.mtime_ns, snap.size),
        )
        if snap.text:  # a PDF's pages: searchable text, its row still marked is_note = 0
            conn.execute(
                "INSERT INTO notes_fts (rowid, path, title, body) VALUES (?, ?, ?, ?)",
                (cursor.lastrowid, snap.rel, spaced(name), spaced(snap.text)),
            )
        return linkstore.store_names(conn, snap.rel, None, [])
    meta = note.frontmatter
    cursor = conn.execute(
        "INSERT INTO notes (path, title, mtime, size, hash, created, updated, is_note, words)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?)",
        (snap.rel, note.title, snap.mtime_ns, snap.size, note.content_hash,
         _text(meta.get("created")), _text(meta.get("updated")), note.words),
    )  # fmt: skip
    conn.execute(
        "INSERT INTO notes_fts (rowid, path, title, body) VALUES (?, ?, ?, ?)",
        (cursor.lastrowid, snap.rel, spaced(note.title), spaced(note.body)),
    )
    _insert(conn, "tags (path, tag)", ((snap.rel, t) for t in note.tags))
    linkstore.store_links(conn, snap.rel, note.links)
    _insert(conn, "headings (path, level, text, line)",
            ((snap.rel, h.level, h.text, h.line) for h in note.headings))  # fmt: skip
    _insert(conn, "aliases (path, alias)", ((snap.rel, a) for a in note.aliases))
    _insert(conn, "tasks (path, line, text, done)",
            ((snap.rel, t.line, t.text, int(t.done)) for t in note.tasks))  # fmt: skip
    return linkstore.store_names(conn, snap.rel, note.title, note.aliases)


def _insert(conn: sqlite3.Connection, into: str, rows: Iterable[tuple[object, ...]]) -> None:
    rows = list(rows)
    if rows:
        marks = ", ".join("?" * len(rows[0]))
        conn.executemany(f"INSERT INTO {into} VALUES ({marks})", rows)


def _text(value: object) -> str:
    return "" if value is None else str(plain_value(value))


def _remove_db(db_path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{db_path}{suffix}").unlink(missing_ok=True)
