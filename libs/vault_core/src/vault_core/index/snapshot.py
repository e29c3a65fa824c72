"""Reading a file for the index: what it held, so the store can check it still holds it.

Parsing is most of the cost of a cold index, so a large batch is read by a pool
of processes (one per core) while the index writes what is already parsed.
Workers never log: a skipped file carries its reason back to the caller.
"""

from __future__ import annotations

import multiprocessing
import os
import stat
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path

from vault_core import paths, pdftext
from vault_core.errors import NOTE_LIMIT, EncodingError, UnreadableAttachmentError
from vault_core.index.linkstore import Names, PathNames
from vault_core.index.rows import FileRows, file_rows
from vault_core.note import Note, parse
from vault_core.paths import Entry
from vault_core.text import content_hash

PARALLEL_MIN = 400  # below this, starting worker processes costs more than it saves
SETTLED_NS = 60 * 1_000_000_000  # a file this much older than its read is not read again
_CHUNK = 32


@dataclass(frozen=True)
class Snapshot:
    """What a file held when it was read: its stat and, for a note, its parse."""

    rel: str
    mtime_ns: int
    size: int
    note: Note | None  # None for an attachment
    skipped: str = ""  # why the file is not indexed (a `skips.REASONS` key); it must not stay
    text: str = ""  # an attachment's searchable text: a PDF's pages, form feeds between them
    read_ns: int = 0  # the wall clock when the read began
    digest: str = ""  # a note's content hash (empty for an attachment or a skipped file)
    rows: FileRows | None = None
    """What the file gives the index's tables, made by a worker process, which sends these
    instead of `note` (None then): they are what the writer needs, at a fifth of the bytes."""


def stat_of(root: Path, target: Path) -> os.stat_result | None:
    """The stat of a regular file the walk would visit: a symlink must stay in the vault,
    out of its dot folders."""
    try:
        found = target.lstat()
        if stat.S_ISLNK(found.st_mode):
            real = target.resolve()
            if paths.off_limits(root.resolve(), real):
                return None
            found = real.stat()
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop on 3.11/3.12
        return None
    return found if stat.S_ISREG(found.st_mode) else None


def present(root: Path, rel: str) -> os.stat_result | None:
    """`stat_of` for a path from anywhere (the watcher, a write): None unless `walk` could
    yield it, so a path through a linked folder never counts as there."""
    if not paths.walkable(root, rel):
        return None
    return stat_of(root, root.joinpath(*rel.split("/")))


def read(root: Path, rel: str, target: Path) -> Snapshot | None:
    """Stat and read one file; None when it is gone.

    A file that cannot be read, a note over 4 MiB, not in UTF-8 or that fails to parse
    gives a snapshot with `skipped` set: one bad file never stops the others.
    """
    began = time.time_ns()
    found = stat_of(root, target)
    if found is None:
        return None
    mtime, size = found.st_mtime_ns, found.st_size
    if not rel.lower().endswith(".md"):
        if not _readable(target):
            return Snapshot(rel, mtime, size, None, skipped="unreadable")
        return Snapshot(rel, mtime, size, None, text=_attachment_text(rel, target, size))
    if size > NOTE_LIMIT:
        return Snapshot(rel, mtime, size, None, skipped="too_large")
    try:
        data = _read_bytes(target, size)
        note = parse(rel, data, mtime)
    except FileNotFoundError:
        return None
    except OSError:
        return Snapshot(rel, mtime, size, None, skipped="unreadable")
    except EncodingError:
        return Snapshot(rel, mtime, size, None, skipped="not_utf8")
    except Exception:  # noqa: BLE001 — a parser bug on one file must not stop an index
        return Snapshot(rel, mtime, size, None, skipped="parse_failed")
    if len(data) != size:
        return Snapshot(rel, -1, -1, note)  # changed between stat and read: retried
    return Snapshot(rel, mtime, size, note, read_ns=began, digest=note.content_hash)


def _read_bytes(target: Path, size: int) -> bytes:
    """At most one byte more than the stat's `size`: enough to tell a file that grew since.
    Asking for NOTE_LIMIT + 1 bytes made each read allocate and give back 4 MiB (25 against
    8 µs a generated note, a tenth of a worker's parse)."""
    # O_NONBLOCK: a pipe put in the file's place after the stat cannot hold the reader.
    fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        return handle.read(min(size, NOTE_LIMIT) + 1)


def _attachment_text(rel: str, target: Path, size: int) -> str:
    """A PDF's text for the search index; none for other types and for a PDF that cannot be
    read (it is still indexed as an attachment, and attachment_read says why)."""
    if not rel.lower().endswith(".pdf") or size > pdftext.MAX_BYTES:
        return ""
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(pdftext.MAX_BYTES + 1)
        return "\f".join(pdftext.extract(data, rel, call_deadline=False).pages)
    except (OSError, UnreadableAttachmentError):
        return ""


def _readable(target: Path) -> bool:
    try:
        os.close(os.open(target, os.O_RDONLY | os.O_NONBLOCK))
    except FileNotFoundError:
        return True  # gone: the store sees that for itself
    except OSError:
        return False
    return True


def still(root: Path, target: Path, snapshot: Snapshot | None) -> bool:
    """True when the file on disk is (still) what the snapshot says, or still absent."""
    found = stat_of(root, target)
    if found is None or snapshot is None:
        return found is None and snapshot is None
    if (found.st_mtime_ns, found.st_size) != (snapshot.mtime_ns, snapshot.size):
        return False
    if not snapshot.digest or snapshot.mtime_ns < snapshot.read_ns - SETTLED_NS:
        return True
    # Two same-size writes within the file system's timestamp granularity share an
    # mtime: only the bytes tell whether the snapshot is still what the file holds. A
    # write after the read of a file last written a minute before it gives a new mtime.
    try:
        return content_hash(target.read_bytes()) == snapshot.digest
    except OSError:
        return False


def read_many(
    root: Path, entries: Sequence[Entry], *, all_paths: bool = False
) -> Iterator[tuple[Entry, Snapshot | None]]:
    """Read files in order; in parallel processes when there are many and cores to use.

    `all_paths`: the entries are every file the index will hold (a cold index), so the
    workers resolve each link their paths decide (`links.resolve_by_path`), and the
    writer's link pass is left with the others.
    """
    workers = min(os.cpu_count() or 1, 4)
    if len(entries) < PARALLEL_MIN or workers < 2:
        yield from ((e, read(root, e.rel, e.abs)) for e in entries)
        return
    # forkserver: the caller may run threads (watchers, git pushes), fork would copy their locks.
    context = multiprocessing.get_context("forkserver")
    # The server imports this module once, so each pool's workers fork with it loaded:
    # a pool's first result 0.04 s after it starts instead of 0.3 s (both workers
    # importing the vault core). Only before the server starts does this take effect.
    context.set_forkserver_preload(["__main__", __name__])
    jobs = [(root, e.rel, e.abs) for e in entries]
    done = 0
    try:
        rels = [e.rel for e in entries] if all_paths else None
        with ProcessPoolExecutor(
            max_workers=workers, mp_context=context, initializer=_start, initargs=(rels,)
        ) as pool:
            results = pool.map(_read_parsed, jobs, chunksize=_CHUNK)
            for entry, result in zip(entries, results, strict=True):
                yield entry, _unpacked(result)
                done += 1
    except (BrokenProcessPool, OSError):
        # No worker processes here (a restricted host, an odd __main__): read in order.
        yield from ((e, read(root, e.rel, e.abs)) for e in entries[done:])


_Packed = tuple[str, int, int, str, int, str, dict[str, list[tuple[object, ...]]], Names]
"""A worker's snapshot of a file it could index, as plain data: rel, mtime_ns, size, text,
read_ns, digest, and its rows (tables and names). Tuples, lists and strings unpickle in a
quarter of the time the same data takes inside the dataclasses (8.6 against 31.9 µs a
note), and the unpickling is the writing process's, where a cold index's bound is."""


_worker: dict[str, PathNames] = {}
"""A worker's state: the vault's paths ("paths") when its pool reads every file of a vault."""


def _start(rels: list[str] | None) -> None:
    if rels is not None:
        _worker["paths"] = PathNames(rels)


def _read_parsed(job: tuple[Path, str, Path]) -> Snapshot | _Packed | None:
    """A worker's read: the file's rows for the index in place of its parse."""
    found = read(*job)
    if found is None or found.skipped:
        return found
    rows = file_rows(found, _worker.get("paths"))
    return (
        found.rel, found.mtime_ns, found.size, found.text, found.read_ns, found.digest,
        rows.tables, rows.names,
    )  # fmt: skip


def _unpacked(result: Snapshot | _Packed | None) -> Snapshot | None:
    if not isinstance(result, tuple):
        return result
    rel, mtime_ns, size, text, read_ns, digest, tables, names = result
    return Snapshot(
        rel, mtime_ns, size, None, text=text, read_ns=read_ns, digest=digest,
        rows=FileRows(tables, names),
    )  # fmt: skip
