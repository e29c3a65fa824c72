"""Reading a file for the index: what it held, so the store can check it still holds it.

Parsing is most of the cost of a cold index, so a large batch is read by a pool
of processes (one per core) while the index writes what is already parsed.
Workers never log: a skipped file carries its reason back to the caller.
"""

from __future__ import annotations

import multiprocessing
import os
import stat
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path

from vault_core import paths, pdftext
from vault_core.errors import NOTE_LIMIT, EncodingError, UnreadableAttachmentError
from vault_core.note import Note, parse
from vault_core.paths import Entry
from vault_core.text import content_hash

PARALLEL_MIN = 400  # below this, starting worker processes costs more than it saves
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
        data = _read_bytes(target)
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
    return Snapshot(rel, mtime, size, note)


def _read_bytes(target: Path) -> bytes:
    # O_NONBLOCK: a pipe put in the file's place after the stat cannot hold the reader.
    fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        return handle.read(NOTE_LIMIT + 1)


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
    if snapshot.note is None:
        return True
    # Two same-size writes within the file system's timestamp granularity share an
    # mtime: only the bytes tell whether the snapshot is still what the file holds.
    try:
        return content_hash(target.read_bytes()) == snapshot.note.content_hash
    except OSError:
        return False


def read_many(root: Path, entries: Sequence[Entry]) -> Iterator[tuple[Entry, Snapshot | None]]:
    """Read files in order; in parallel processes when there are many and cores to use."""
    workers = min(os.cpu_count() or 1, 4)
    if len(entries) < PARALLEL_MIN or workers < 2:
        yield from ((e, read(root, e.rel, e.abs)) for e in entries)
        return
    # forkserver: the caller may run threads (watchers, git pushes), fork would copy their locks.
    context = multiprocessing.get_context("forkserver")
    jobs = [(root, e.rel, e.abs) for e in entries]
    done = 0
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            for pair in zip(entries, pool.map(_read_parsed, jobs, chunksize=_CHUNK), strict=True):
                yield pair
                done += 1
    except (BrokenProcessPool, OSError):
        # No worker processes here (a restricted host, an odd __main__): read in order.
        yield from ((e, read(root, e.rel, e.abs)) for e in entries[done:])


def _read_parsed(job: tuple[Path, str, Path]) -> Snapshot | None:
    """A worker's read: every lazy part of the note computed before it travels back."""
    found = read(*job)
    if found is not None and found.note is not None:
        note = found.note
        _ = (note.frontmatter, note.structure, note.title, note.tags, note.aliases)
    return found
