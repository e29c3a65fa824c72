"""The per-vault SQLite index (spec §10): a cache of the notes, rebuilt whenever in doubt.

One writer connection behind a lock and a pool of reader connections (WAL), so
searches run beside each other and beside writes. An update for a path only
ever stores what the file holds at the moment of the write transaction, so a
slow watcher can never overwrite a newer state written by a tool.
"""

from __future__ import annotations

import contextlib
import os
import queue
import sqlite3
import stat
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
from vault_core.text import content_hash

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
    skipped: bool = False  # too large or not UTF-8: the path must not stay in the index


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
        """Spec §10.2 `UpdatePath`: re-read one file (or drop it) and re-resolve links.

        A path that is gone takes along what the index holds under it: a folder
        moved out of the vault is reported as that one path.
        """
        target = self.root.joinpath(*rel.split("/"))
        for _ in range(_RETRIES):
            snapshot = _read(self.root, rel, target)
            with self._write_lock, self._transaction() as conn:
                if not _still(self.root, target, snapshot):
                    continue  # the file changed while we read it: read it again
                if snapshot is None:
                    for gone in [rel, *self._gone_under(conn, rel)]:
                        old = linkstore.names_of(conn, gone)
                        _delete(conn, gone)
                        linkstore.resolve_after_change(conn, gone, old, [])
                    return
                old = linkstore.names_of(conn, rel)
                linkstore.resolve_after_change(conn, rel, old, _store(conn, snapshot))
                return
        log.warning("index_update_gave_up", vault=self.vault, path=rel)

    def _gone_under(self, conn: sqlite3.Connection, rel: str) -> list[str]:
        """Indexed paths below folder `rel` whose files are gone ('0' is the byte after '/')."""
        rows = conn.execute(
            "SELECT path FROM notes WHERE path > ? AND path < ?", (rel + "/", rel + "0")
        ).fetchall()
        return [p for (p,) in rows if _stat(self.root, self.root.joinpath(*p.split("/"))) is None]

    def reconcile(self) -> ReconcileStats:
        """Spec §10.2: ingest new and changed files, drop vanished ones, re-resolve links."""
        started = time.perf_counter()
        with self.reading() as conn:
            known = {p: (m, s) for p, m, s in conn.execute("SELECT path, mtime, size FROM notes")}
        seen, todo = set(), []
        for entry in paths.walk(self.root):
            seen.add(entry.rel)
            if known.get(entry.rel) != (entry.mtime_ns, entry.size):
                todo.append(entry)
        stored: set[str] = set()
        for start in range(0, len(todo), BATCH):
            stored |= self._ingest_batch(todo[start : start + BATCH], fresh=not known)
        changed, skipped = len(stored), len(todo) - len(stored)
        dropped = any(e.rel in known and e.rel not in stored for e in todo)
        removed = sum(self._remove_if_gone(rel) for rel in set(known) - seen)
        if changed or removed or dropped:
            with self._write_lock, self._transaction() as conn:
                linkstore.resolve_all(conn)
        stats = ReconcileStats(len(seen), changed, removed, skipped, time.perf_counter() - started)
        log.info("index_reconciled", vault=self.vault, files=stats.files, changed=changed,
                 removed=removed, skipped=skipped, ms=round(stats.seconds * 1000))  # fmt: skip
        return stats

    def _ingest_batch(self, entries: Sequence[paths.Entry], *, fresh: bool) -> set[str]:
        """Read a batch outside the lock, store it in one transaction (each file whole).

        Returns the paths now indexed. A file that changed between read and store
        is read again on its own; one that vanished since the walk is dropped.
        """
        snapshots = [(e, _read(self.root, e.rel, e.abs)) for e in entries]
        stored, again = set(), []
        with self._write_lock, self._transaction() as conn:
            for entry, snapshot in snapshots:
                if not _still(self.root, entry.abs, snapshot):
                    again.append(entry)
                elif snapshot is None:
                    _delete(conn, entry.rel)
                else:
                    # `fresh` was judged before the lock: an update may have stored it since.
                    _store(conn, snapshot, fresh=fresh and not _indexed(conn, entry.rel))
                    if not snapshot.skipped:
                        stored.add(entry.rel)
        stored.update(e.rel for e in again if self._ingest_one(e.rel, e.abs))
        return stored

    def _ingest_one(self, rel: str, target: Path) -> bool:
        for _ in range(_RETRIES):
            snapshot = _read(self.root, rel, target)
            with self._write_lock, self._transaction() as conn:
                if not _still(self.root, target, snapshot):
                    continue
                if snapshot is None:
                    _delete(conn, rel)
                    return False
                _store(conn, snapshot)
                return not snapshot.skipped
        return False

    def _remove_if_gone(self, rel: str) -> bool:
        target = self.root.joinpath(*rel.split("/"))
        with self._write_lock, self._transaction() as conn:
            if _stat(self.root, target) is not None:
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


def _stat(root: Path, target: Path) -> os.stat_result | None:
    """The stat of a regular file the walk would visit: a symlink must stay in the vault."""
    try:
        found = target.lstat()
        if stat.S_ISLNK(found.st_mode):
            real = target.resolve()
            if root.resolve() not in real.parents:
                return None
            found = real.stat()
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop on 3.11/3.12
        return None
    return found if stat.S_ISREG(found.st_mode) else None


def _read(root: Path, rel: str, target: Path) -> _Snapshot | None:
    """Stat and read one file; None when it is gone or unreadable.

    A note over 4 MiB or not in UTF-8 gives a `skipped` snapshot (with a warning).
    """
    found = _stat(root, target)
    if found is None:
        return None
    if not rel.lower().endswith(".md"):
        return _Snapshot(rel, found.st_mtime_ns, found.st_size, None)
    if found.st_size > NOTE_LIMIT:
        log.warning("index_skipped", path=rel, reason="too_large", bytes=found.st_size)
        return _Snapshot(rel, found.st_mtime_ns, found.st_size, None, skipped=True)
    try:
        data = target.read_bytes()
        note = parse(rel, data, found.st_mtime_ns)
        _ = note.text
    except OSError:
        return None
    except VaultError as exc:
        log.warning("index_skipped", path=rel, reason=exc.code)
        return _Snapshot(rel, found.st_mtime_ns, found.st_size, None, skipped=True)
    if len(data) != found.st_size:
        return _Snapshot(rel, -1, -1, note)  # changed between stat and read: retried
    return _Snapshot(rel, found.st_mtime_ns, found.st_size, note)


def _still(root: Path, target: Path, snapshot: _Snapshot | None) -> bool:
    """True when the file on disk is (still) what the snapshot says, or still absent."""
    found = _stat(root, target)
    if found is None or snapshot is None:
        return found is None and snapshot is None
    if (found.st_mtime_ns, found.st_size) != (snapshot.mtime_ns, snapshot.size):
        return False
    if snapshot.note is None:
        return True
    # Two same-size writes within the file system's timestamp granularity share an
    # mtime: only the bytes tell whether the snapshot is still what the file holds.
    try:
        return content_hash(target.read_bytes()) == snapshot.note.content_hash
    except OSError:
        return False


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
    conn: sqlite3.Connection, snap: _Snapshot, *, fresh: bool = False
) -> list[tuple[int, str]]:
    """Spec §10.2 `ingest`: replace every row of the path; returns its link names.

    `fresh` (an empty index being filled) skips the deletes: there is nothing to replace.
    """
    if not fresh:
        _delete(conn, snap.rel)
    if snap.skipped:
        return []
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
