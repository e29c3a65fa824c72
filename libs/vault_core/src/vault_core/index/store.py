"""The per-vault SQLite index (docs/design.md#index): a cache of the notes, rebuilt when in doubt.

One writer connection behind a lock and a pool of reader connections (WAL), so
searches run beside each other and beside writes. An update for a path only
ever stores what the file holds at the moment of the write transaction, so a
slow watcher can never overwrite a newer state written by a tool. A file that
cannot be indexed is skipped and listed in `skips`, never a failure.
"""

from __future__ import annotations

import contextlib
import gc
import json
import queue
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import structlog

from vault_core import deadline, paths, scope, storage
from vault_core.index import linkstore, snapshot, tempschema, totals
from vault_core.index.rows import Rows
from vault_core.index.schema import CREATE_INDEXES, INDEXES, SCHEMA, SCHEMA_VERSION
from vault_core.index.snapshot import Snapshot
from vault_core.skips import Skipped, Skips
from vault_core.text import content_hash

log = structlog.get_logger("vault_core")

INDEX_FILE = "index.db"
READERS = 8  # kept open; more concurrent readers open and close their own
BATCH = 200  # files per reconcile transaction; each file is still stored whole
BULK = 1_000  # files an empty index takes in before it builds its secondary indexes
AUTOMERGE = 4  # FTS5's own default: segments of a level it merges into one
FILL_AUTOMERGE = 8
"""While an empty index is filled, FTS5 merges its segments eight at a time instead of
four: each entry is rewritten fewer times on its way up the levels. At 50,000 notes the
writer's CPU went from 9.27 / 9.09 s to 8.85 / 8.59 s (two runs each), and a word search
in the index it leaves took the same (p50 0.88–0.90 ms against 0.88–0.91); sixteen saved
more (8.0–8.5 s) but left a search 8 % slower. A fill that dies leaves eight set, which
costs a search nothing measurable."""
_AUTOMERGE = "INSERT INTO notes_fts (notes_fts, rank) VALUES ('automerge', ?)"
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
        self.version = 0
        """Write transactions committed so far: what was read before it moved may be stale."""
        self.filling = False
        """An empty index is being filled: its totals are counted at the end, not kept."""
        self._updated_while_filling = False
        """An update stored links meanwhile, resolved against a part of the vault."""

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

    @staticmethod
    def remove(root: Path) -> None:
        """Delete the index of the vault at `root` with its WAL, shared-memory and journal
        files, so the next `open` builds it from scratch. Only while nothing has it open."""
        _remove_db(root / ".secondbrain" / INDEX_FILE)

    def _connect(self, *, readonly: bool = False) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.db_path, timeout=5.0, check_same_thread=False, isolation_level=None
        )
        conn.execute("PRAGMA busy_timeout = 5000")
        for name, function in (scope.FUNCTIONS | linkstore.FUNCTIONS).items():
            conn.create_function(name, 1, function, deterministic=True)
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
        if totals.missing(conn):  # an index made before the totals, or a fill that died
            with self._transaction():
                totals.recount(conn)

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
        """A reader connection from the pool (created on demand, at most `readers` kept),
        seeing only what the running call's path rules let it see (`vault_core.scope`)."""
        try:
            conn = self._readers.get_nowait()
        except queue.Empty:
            conn = self._connect(readonly=True)
        try:
            self._scope(conn)
        except BaseException:
            conn.close()  # a connection whose views are in doubt is never used again
            raise
        try:
            yield conn
        finally:
            if self._readers.qsize() < self._reader_count:
                self._readers.put(conn)
            else:
                conn.close()

    def _scope(self, conn: sqlite3.Connection) -> None:
        """Shadow the tables with views of the visible rows, or remove the views: a pooled
        connection may have served a caller with other rules just before. What the
        connection holds is read from it, never remembered beside it."""
        wanted = scope.key()
        made = scope.views(wanted) if wanted is not None else []
        (held,) = conn.execute(
            "SELECT group_concat(sql, ';') FROM"
            " (SELECT sql FROM sqlite_temp_master WHERE type = 'view' ORDER BY rowid)"
        ).fetchone()
        if (held or "") != ";".join(m.replace(" TEMP VIEW ", " VIEW ", 1) for m in made):
            with tempschema.writable(conn):  # temp views live in the temp schema only
                for statement in (*scope.DROPS, *scope.TABLES, *made):
                    conn.execute(statement)
        if wanted is not None:
            linkstore.resolve_visible(conn, wanted)

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
        """Re-read one file (or drop it) and re-resolve links (docs/design.md#reconcile).

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
                self._updated_while_filling |= self.filling
                old = linkstore.names_of(conn, rel)
                linkstore.resolve_after_change(conn, rel, old, _store(conn, snap))
            self._note_skip(snap)
            return
        log.warning("index_update_gave_up", vault=self.vault, path=rel)

    def _drop(self, conn: sqlite3.Connection, rel: str, *, everything_under: bool = False) -> None:
        """Remove `rel` and what is gone under it (or everything under it) from the index."""
        self._updated_while_filling |= self.filling
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

    def current(self, rel: str) -> bool:
        """True when the index holds `rel` exactly as the disk does: the same stat and content
        hash, or absent from both (with nothing indexed under it). The watcher leaves such a
        path out: it is a write this index took in already."""
        if not paths.walkable(self.root, rel):
            return False
        target = self.root.joinpath(*rel.split("/"))
        if snapshot.stat_of(self.root, target) is not None:
            return self._unchanged(rel, target)
        if target.exists():
            return False  # a folder, a pipe: what update_path decides
        with self.reading() as conn:
            below = conn.execute(
                "SELECT 1 FROM notes WHERE path > ? AND path < ? LIMIT 1", (rel + "/", rel + "0")
            ).fetchone()
            return below is None and not _indexed(conn, rel)

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
        """Ingest new and changed files, drop vanished ones, re-resolve links
        (docs/design.md#reconcile).

        `progress(done, total)` is called as files to ingest are stored.
        """
        started = time.perf_counter()
        with self.reading() as conn:
            known = {p: (m, s) for p, m, s in conn.execute("SELECT path, mtime, size FROM notes")}
        seen, todo, skipped = self._walk(known)
        bulk = not known and len(todo) >= BULK
        with self._bulk(bulk):
            stored = self._store_all(
                todo, fresh=not known, all_paths=bulk, skipped=skipped, progress=progress
            )
            self.skips.replace(skipped.values())
            changed = len(stored)
            dropped = any(e.rel in known and e.rel not in stored for e in todo)
            removed = sum(self._remove_if_gone(rel) for rel in set(known) - seen)
            if changed or removed or dropped:
                with self._write_lock, self._transaction() as conn:
                    self._resolve_links(conn, todo if bulk else None)
        elapsed = time.perf_counter() - started
        stats = ReconcileStats(len(seen), changed, removed, len(skipped), elapsed)
        log.info(
            "index_reconciled",
            vault=self.vault,
            files=stats.files,
            changed=changed,
            removed=removed,
            skipped=stats.skipped,
            ms=round(elapsed * 1000),
        )
        return stats

    def _store_all(
        self,
        todo: Sequence[paths.Entry],
        *,
        fresh: bool,
        all_paths: bool,
        skipped: dict[str, Skipped],
        progress: Callable[[int, int], object] | None,
    ) -> set[str]:
        stored: set[str] = set()
        batch: list[tuple[paths.Entry, Snapshot | None]] = []
        read = snapshot.read_many(self.root, todo, all_paths=all_paths)
        for done, pair in enumerate(read, start=1):
            batch.append(pair)
            if len(batch) == BATCH or done == len(todo):
                stored |= self._store_batch(batch, fresh=fresh, skipped=skipped)
                batch = []
                if progress is not None:
                    progress(done, len(todo))
        return stored

    def _resolve_links(
        self, conn: sqlite3.Connection, filled: Sequence[paths.Entry] | None
    ) -> None:
        """The link pass after a reconcile. After a fill (`filled`: every file it read),
        whose workers resolved each link the vault's paths decide, only the links they
        left unresolved need it, provided the index holds exactly those paths and no
        update stored links meanwhile; otherwise every link is resolved again. At 50,000
        generated notes (300,000 links, 5 % left unresolved by the workers) the writer's
        pass took 0.35 s of CPU instead of 1.35, at the end of the fill where the other
        core has nothing to do; the workers paid 13 µs a note more (166 against 153)."""
        if filled is not None and not self._updated_while_filling:
            held = {p for (p,) in conn.execute("SELECT path FROM notes")}
            if held == {e.rel for e in filled}:
                linkstore.resolve_unresolved(conn)
                return
        linkstore.resolve_all(conn)

    @contextlib.contextmanager
    def _bulk(self, wanted: bool) -> Iterator[None]:
        """Fill an empty index without its secondary indexes and totals, then build them once.

        Inserting rows at random places of eleven B-trees larger than SQLite's page cache
        made a cold index of 100,000 notes 2.5 times slower per note than one of 10,000;
        building each index at the end sorts once, and counting the totals once costs less
        than their triggers on every row. Should the process die before, the next open
        creates the indexes and counts the totals (`IF NOT EXISTS`, `totals.missing`).
        """
        if not wanted:
            yield
            return
        with self._write_lock, self._transaction() as conn:
            for name, _table, _columns in INDEXES:
                conn.execute(f"DROP INDEX IF EXISTS {name}")
            for name, _body in totals.TRIGGERS:
                conn.execute(f"DROP TRIGGER IF EXISTS {name}")
            conn.execute("DELETE FROM totals")
            conn.execute(_AUTOMERGE, (FILL_AUTOMERGE,))
            self.filling = True
            self._updated_while_filling = False
        # No fsync while filling: a power cut then leaves a file the next open's check
        # rebuilds, which is what an interrupted fill costs anyway.
        with self._write_lock:
            self._writer.execute("PRAGMA synchronous = OFF")
        try:
            with _collector_paused():
                yield
        finally:
            with self._write_lock:
                self._writer.execute("PRAGMA synchronous = NORMAL")
                self._writer.executescript(CREATE_INDEXES)
                with self._transaction() as conn:
                    conn.execute(_AUTOMERGE, (AUTOMERGE,))
                    totals.recount(conn)
                    for name, body in totals.TRIGGERS:
                        conn.execute(f"CREATE TRIGGER IF NOT EXISTS {name} {body}")
                    self.filling = False

    def _walk(
        self, known: dict[str, tuple[int, int]]
    ) -> tuple[set[str], list[paths.Entry], dict[str, Skipped]]:
        """Every visible path, the files to read (new or changed), and what is skipped: what
        the walk passes over, and files skipped before for what they hold, unchanged since."""
        seen, todo = set(), []
        skipped: dict[str, Skipped] = {}
        temps: list[Path] = []
        earlier = {item.path: item for item in self.skips.listing() if item.size >= 0}
        for entry in paths.walk(
            self.root, skipped=lambda item: skipped.update({item.path: item}), temps=temps.append
        ):
            seen.add(entry.rel)
            stamp = (entry.mtime_ns, entry.size)
            before = earlier.get(entry.rel)
            if before is not None and (before.mtime_ns, before.size) == stamp:
                skipped[entry.rel] = before
            elif known.get(entry.rel) != stamp:
                todo.append(entry)
        storage.remove_leftovers(temps)  # a process killed mid-write left them
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
            gathered = Rows(conn)
            # `fresh` was judged before the lock: an update may have stored some since.
            held = _held(conn, [e.rel for e, _snap in snaps]) if fresh else None
            for entry, snap in snaps:
                if not snapshot.still(self.root, entry.abs, snap):
                    again.append(entry)
                elif snap is None:
                    _delete(conn, entry.rel)
                else:
                    if held is None or entry.rel in held:
                        _delete(conn, entry.rel)
                    gathered.add(snap)
                    done.append(snap)
            gathered.insert(conn)
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
            self.version += 1
            if self.on_change is not None:
                self.on_change()


class _CollectorPause:
    """Python's cycle collector off while an empty index is filled: back on when the last
    fill running ends, if it was on before the first began.

    A fill unpickles a hundred tuples a note that die within their batch; the collections
    they set off, and the full ones that scan every object the process holds, cost 0.12 s
    of 1.75 at 10,000 notes and 0.82 s of 9.8 at 50,000: more per note as the vault
    grows. Reference counting still frees all of it; only cycles made meanwhile, by any
    thread, wait for the next collection.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fills = 0
        self._was_on = True

    @contextlib.contextmanager
    def __call__(self) -> Iterator[None]:
        with self._lock:
            if self._fills == 0:
                self._was_on = gc.isenabled()
                gc.disable()
            self._fills += 1
        try:
            yield
        finally:
            with self._lock:
                self._fills -= 1
                if self._fills == 0 and self._was_on:
                    gc.enable()


_collector_paused = _CollectorPause()


def _indexed(conn: sqlite3.Connection, rel: str) -> bool:
    return conn.execute("SELECT 1 FROM notes WHERE path = ?", (rel,)).fetchone() is not None


def _held(conn: sqlite3.Connection, rels: list[str]) -> set[str]:
    """Which of `rels` the index holds, in one query."""
    rows = conn.execute(
        "SELECT path FROM notes WHERE path IN (SELECT value FROM json_each(?))", (json.dumps(rels),)
    )
    return {p for (p,) in rows}


def _delete(conn: sqlite3.Connection, rel: str) -> None:
    row = conn.execute("SELECT rowid FROM notes WHERE path = ?", (rel,)).fetchone()
    if row is not None:
        conn.execute("DELETE FROM notes_fts WHERE rowid = ?", (row[0],))
    for table, column in _PATH_TABLES:
        conn.execute(f"DELETE FROM {table} WHERE {column} = ?", (rel,))


_PATH_TABLES = (
    ("notes", "path"),
    ("tags", "path"),
    ("links", "src"),
    ("headings", "path"),
    ("aliases", "path"),
    ("tasks", "path"),
    ("embeddings", "path"),
    ("names", "path"),
    ("translations", "path"),
)


def _store(
    conn: sqlite3.Connection, snap: Snapshot, *, fresh: bool = False
) -> list[tuple[int, str]]:
    """Ingest (docs/design.md#reconcile): replace every row of the path; returns its link names.

    `fresh` (an empty index being filled) skips the deletes: there is nothing to replace.
    """
    if not fresh:
        _delete(conn, snap.rel)
    gathered = Rows(conn)
    names = gathered.add(snap)
    gathered.insert(conn)
    return names


def _remove_db(db_path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{db_path}{suffix}").unlink(missing_ok=True)
