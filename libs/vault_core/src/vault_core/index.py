"""The per-vault SQLite index (spec §10): a cache of the notes, rebuilt whenever in doubt.

One writer connection behind a lock and a pool of reader connections (WAL), so
searches run beside each other and beside writes. An update for a path only
ever stores what the file holds at the moment of the write transaction, so a
slow watcher can never overwrite a newer state written by a tool.
"""

from __future__ import annotations

import contextlib
import queue
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import structlog

from vault_core import linkstore, paths
from vault_core.errors import NOTE_LIMIT, VaultError
from vault_core.frontmatter import plain_value
from vault_core.note import Note, parse
from vault_core.schema import SCHEMA, SCHEMA_VERSION

log = structlog.get_logger("vault_core")

INDEX_FILE = "index.db"
READERS = 4
BATCH = 200  # files per reconcile transaction; each file is still stored whole
_RETRIES = 5


@dataclass(frozen=True)
class ReconcileStats:
    files: int
    changed: int
    removed: int
    skipped: int
    seconds: float


@dataclass(frozen=True)
class _Snapshot:
    """What a file held when it was read: its stat and, for a note, its parse."""

    rel: str
    mtime_ns: int
    size: int
    note: Note | None  # None for an attachment


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

    @classmethod
    def open(cls, root: Path, vault: str, readers: int = READERS) -> Index:
        """Open or create `<root>/.secondbrain/index.db`; a broken file is rebuilt, loudly."""
        db_path = root / ".secondbrain" / INDEX_FILE
        db_path.parent.mkdir(parents=True, exist_ok=True)
        try:
            index = cls(root, vault, db_path, readers)
            index._migrate()
        except sqlite3.DatabaseError as exc:
            # Loud, but no traceback: the cause is the file, and the fix is the rebuild.
            log.error("index_rebuilt", vault=vault, reason=f"{type(exc).__name__}: {exc}")  # noqa: TRY400
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

    # ------------------------------------------------------------------ updates

    def update_paths(self, rels: Sequence[str]) -> None:
        """Bring these paths up to date: ingest what exists, remove what is gone."""
        for rel in rels:
            self.update_path(rel)

    def update_path(self, rel: str) -> None:
        """Spec §10.2 `UpdatePath`: re-read one file (or drop it) and re-resolve links."""
        target = self.root.joinpath(*rel.split("/"))
        for _ in range(_RETRIES):
            snapshot = _read(self.root, rel, target)
            with self._write_lock, self._transaction() as conn:
                if not _still(target, snapshot):
                    continue  # the file changed while we read it: read it again
                old = linkstore.names_of(conn, rel)
                if snapshot is None:
                    _delete(conn, rel)
                    new: list[tuple[int, str]] = []
                else:
                    new = _store(conn, snapshot)
                linkstore.resolve_after_change(conn, rel, old, new)
                return
        log.warning("index_update_gave_up", vault=self.vault, path=rel)

    def reconcile(self) -> ReconcileStats:
        """Spec §10.2: ingest new and changed files, drop vanished ones, re-resolve links."""
        started = time.perf_counter()
        with self.reading() as conn:
            known = {p: (m, s) for p, m, s in conn.execute("SELECT path, mtime, size FROM notes")}
        seen, todo, changed, skipped = set(), [], 0, 0
        for entry in paths.walk(self.root):
            seen.add(entry.rel)
            if known.get(entry.rel) != (entry.mtime_ns, entry.size):
                todo.append(entry)
        for start in range(0, len(todo), BATCH):
            stored = self._ingest_batch(todo[start : start + BATCH], fresh=not known)
            changed += stored
            skipped += min(BATCH, len(todo) - start) - stored
        removed = sum(self._remove_if_gone(rel) for rel in set(known) - seen)
        if changed or removed:
            with self._write_lock, self._transaction() as conn:
                linkstore.resolve_all(conn)
        stats = ReconcileStats(len(seen), changed, removed, skipped, time.perf_counter() - started)
        log.info("index_reconciled", vault=self.vault, files=stats.files, changed=changed,
                 removed=removed, skipped=skipped, ms=round(stats.seconds * 1000))  # fmt: skip
        return stats

    def _ingest_batch(self, entries: Sequence[paths.Entry], *, fresh: bool) -> int:
        """Read a batch outside the lock, store it in one transaction (each file whole).

        A file that changed between read and store is read again on its own.
        """
        snapshots = [(e, _read(self.root, e.rel, e.abs)) for e in entries]
        stored, again = 0, []
        with self._write_lock, self._transaction() as conn:
            for entry, snapshot in snapshots:
                if snapshot is not None and _still(entry.abs, snapshot):
                    _store(conn, snapshot, fresh=fresh)
                    stored += 1
                elif snapshot is not None or entry.abs.is_file():
                    again.append(entry)
        for entry in again:
            stored += self._ingest_one(entry.rel, entry.abs)
        return stored

    def _ingest_one(self, rel: str, target: Path) -> bool:
        for _ in range(_RETRIES):
            snapshot = _read(self.root, rel, target)
            if snapshot is None:
                return False
            with self._write_lock, self._transaction() as conn:
                if _still(target, snapshot):
                    _store(conn, snapshot)
                    return True
        return False

    def _remove_if_gone(self, rel: str) -> bool:
        target = self.root.joinpath(*rel.split("/"))
        with self._write_lock, self._transaction() as conn:
            if target.is_file():
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


def _read(root: Path, rel: str, target: Path) -> _Snapshot | None:
    """Stat and read one file; None when it is gone, unreadable or skipped (with a warning)."""
    try:
        stat = target.stat()
    except OSError:
        return None
    if not rel.lower().endswith(".md"):
        return _Snapshot(rel, stat.st_mtime_ns, stat.st_size, None)
    if stat.st_size > NOTE_LIMIT:
        log.warning("index_skipped", path=rel, reason="too_large", bytes=stat.st_size)
        return None
    try:
        data = target.read_bytes()
        note = parse(rel, data, stat.st_mtime_ns)
        _ = note.text
    except OSError:
        return None
    except VaultError as exc:
        log.warning("index_skipped", path=rel, reason=exc.code)
        return None
    if len(data) != stat.st_size:
        return _Snapshot(rel, -1, -1, note)  # changed between stat and read: retried
    return _Snapshot(rel, stat.st_mtime_ns, stat.st_size, note)


def _still(target: Path, snapshot: _Snapshot | None) -> bool:
    """True when the file on disk is (still) what the snapshot says, or still absent."""
    try:
        stat = target.stat()
    except OSError:
        return snapshot is None
    if snapshot is None:
        return False
    return (stat.st_mtime_ns, stat.st_size) == (snapshot.mtime_ns, snapshot.size)


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
    conn: sqlite3.Connection, snap: _Snapshot, *, fresh: bool = False
) -> list[tuple[int, str]]:
    """Spec §10.2 `ingest`: replace every row of the path; returns its link names.

    `fresh` (an empty index being filled) skips the deletes: there is nothing to replace.
    """
    if not fresh:
        _delete(conn, snap.rel)
    note = snap.note
    if note is None:
        conn.execute(
            "INSERT INTO notes (path, title, mtime, size, is_note) VALUES (?, ?, ?, ?, 0)",
            (snap.rel, snap.rel.rsplit("/", 1)[-1], snap.mtime_ns, snap.size),
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
        (cursor.lastrowid, snap.rel, note.title, note.body),
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
