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

from vault_core.errors import NOTE_LIMIT, VaultError
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
    skipped: str = ""  # why a note is not indexed (too large, not UTF-8); it must not stay


def stat_of(root: Path, target: Path) -> os.stat_result | None:
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


def read(root: Path, rel: str, target: Path) -> Snapshot | None:
    """Stat and read one file; None when it is gone or unreadable.

    A note over 4 MiB or not in UTF-8 gives a snapshot with `skipped` set.
    """
    found = stat_of(root, target)
    if found is None:
        return None
    if not rel.lower().endswith(".md"):
        return Snapshot(rel, found.st_mtime_ns, found.st_size, None)
    if found.st_size > NOTE_LIMIT:
        return Snapshot(rel, found.st_mtime_ns, found.st_size, None, skipped="too_large")
    try:
        data = target.read_bytes()
        note = parse(rel, data, found.st_mtime_ns)
    except OSError:
        return None
    except VaultError as exc:
        return Snapshot(rel, found.st_mtime_ns, found.st_size, None, skipped=exc.code)
    if len(data) != found.st_size:
        return Snapshot(rel, -1, -1, note)  # changed between stat and read: retried
    return Snapshot(rel, found.st_mtime_ns, found.st_size, note)


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
