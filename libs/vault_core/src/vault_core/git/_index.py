"""git's index file, kept in memory as encoded entries so writing it back is one join.

Writing it still hashes the whole file (about 10 MB at 100,000 notes), so `git.store` writes
a large one off the write path, once commits pause. It also answers which working-tree
files may differ from it by their size and mtime, as git's own status does, without
reading a file that is clean.
"""

from __future__ import annotations

import bisect
import hashlib
import io
import struct
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

import structlog
from dulwich import index as git_index
from dulwich.file import FileLocked, GitFile

log = structlog.get_logger("vault_core.git.store")

_RECORDED = struct.Struct(">LL20xL")  # an index entry from byte 8: mtime (s, ns), …, size


class IndexFile:
    """git's index, held in memory as encoded entries in git's order: writing it for git's
    own tools is one join, not an encoding of every entry.

    Changed under the repository's lock; `flush` may run on another thread beside them.
    """

    def __init__(self, path: str) -> None:
        self._path = Path(path)
        self._mutex = threading.Lock()  # the entries, against a flush copying them
        self._writing = threading.Lock()  # one flush at a time
        self._flushing = False
        self._pending: dict[bytes, bytes | None] = {}  # changes the file does not hold yet
        self._load()

    def __len__(self) -> int:
        return len(self._names)

    def _load(self) -> None:
        stamp = _stamp(self._path)
        try:
            data = self._path.read_bytes()
        except FileNotFoundError:
            data = b""
        raw = _raw_entries(data) if data else ([], [], True, False)
        if raw is None:  # a version-4 index (git's path compression): dulwich reads it
            self._load_parsed()
        else:
            names, chunks, self._ours, extended = raw
            self._names, self._chunks = (names, chunks) if self._ours else ([], [])
            self._header = b"DIRC" + struct.pack(">L", 3 if extended else 2)
        self._stamp, self._dirty = stamp, False

    def _load_parsed(self) -> None:
        entries = dict(git_index.Index(self._path).items())
        # Conflict stages come only from a merge made with git; then git owns the index.
        self._ours = all(isinstance(e, git_index.IndexEntry) for e in entries.values())
        self._names = sorted(entries) if self._ours else []
        self._chunks = [_encode_entry(n, entries[n]) for n in self._names]
        extended = any(getattr(entry, "extended_flags", 0) for entry in entries.values())
        self._header = b"DIRC" + struct.pack(">L", 3 if extended else 2)

    @property
    def dirty(self) -> bool:
        """The file lacks changes made in memory."""
        return self._dirty

    def refresh(self) -> None:
        """Reload when another program (git itself) rewrote the index; changes of ours the
        file does not hold yet are applied again on top."""
        with self._mutex:
            if self._flushing or _stamp(self._path) == self._stamp:
                return  # a flush of ours in flight replaces the file: not a rewrite
            pending = self._pending
            self._load()
            for name, chunk in pending.items():
                self._put(name, chunk)

    def set(self, name: bytes, entry: git_index.IndexEntry) -> None:
        with self._mutex:
            self._remove_below(name)
            self._put(name, _encode_entry(name, entry))

    def remove_tree(self, name: bytes) -> None:
        """Remove `name` and, if it was a directory, everything below it."""
        with self._mutex:
            self._remove_below(name)
            self._put(name, None)

    def remove(self, name: bytes) -> None:
        with self._mutex:
            self._put(name, None)

    def _remove_below(self, name: bytes) -> None:
        low = bisect.bisect_left(self._names, name + b"/")
        high = bisect.bisect_left(self._names, name + b"0")  # b"0" sorts right after b"/"
        for below in self._names[low:high]:
            self._pending[below] = None
        del self._names[low:high], self._chunks[low:high]
        self._dirty = self._dirty or high > low

    def _put(self, name: bytes, chunk: bytes | None) -> None:
        """Set (or, with None, remove) one entry by its encoded form."""
        at = bisect.bisect_left(self._names, name)
        there = at < len(self._names) and self._names[at] == name
        if chunk is None and not there:
            return
        if chunk is None:
            del self._names[at], self._chunks[at]
        elif there:
            self._chunks[at] = chunk
        else:
            self._names.insert(at, name)
            self._chunks.insert(at, chunk)
        self._pending[name] = chunk
        self._dirty = True

    def recorded(self) -> Iterator[tuple[bytes, int, int]]:
        """Name, size and mtime (ns) of every entry, read from its encoded form."""
        for name, chunk in zip(self._names, self._chunks, strict=True):
            seconds, nanoseconds, size = _RECORDED.unpack_from(chunk, 8)
            yield name, size, seconds * 1_000_000_000 + nanoseconds

    def written(self) -> int:
        """When the index file was last written (mtime, ns); 0 when there is none."""
        return self._stamp[0] if self._stamp is not None else 0

    def flush(self) -> bool:
        """Write the file if it lacks changes; False when git holds its lock (try later).

        The entries are copied under the lock; joining, hashing and writing them run
        without it, so commits go on meanwhile (what they change stays dirty)."""
        with self._writing:
            with self._mutex:
                if not (self._dirty and self._ours):
                    return True
                header = self._header + struct.pack(">L", len(self._names))
                chunks, pending = list(self._chunks), self._pending
                self._dirty, self._pending, self._flushing = False, {}, True
            try:
                written = _write(self._path, header, chunks)
            finally:
                with self._mutex:
                    self._flushing = False
                    if written:
                        self._stamp = _stamp(self._path)
                    else:
                        self._dirty, self._pending = True, pending | self._pending
            return written


def _write(path: Path, header: bytes, chunks: list[bytes]) -> bool:
    body = b"".join(chunks)
    digest = hashlib.sha1(header, usedforsecurity=False)
    digest.update(body)
    try:
        # Not fsynced, like git's own index: it is a cache git can rebuild.
        with GitFile(path, "wb", fsync=False) as out:
            for part in (header, body, digest.digest()):  # no 10 MB copy for 100,000 notes
                out.write(part)
    except FileLocked:
        log.warning("git_index_locked")  # git is busy; it is written again later
        return False
    return True


def _raw_entries(data: bytes) -> tuple[list[bytes], list[bytes], bool, bool] | None:
    """The names and encoded entries of a version 2 or 3 index file, sliced from its bytes
    as they are (they are what writing them again would give), whether we may rewrite it
    (no conflict stages, no split index), and whether an entry has extended flags. None
    for another version.

    Parsing 100,000 entries into dulwich's objects first left about 70 MB of freed
    memory in the node's heap for good; the slices are all that stays.
    """
    if data[:4] != b"DIRC" or len(data) < 12:
        raise ValueError("not a git index file")
    version, count = struct.unpack_from(">LL", data, 4)
    if version not in (2, 3):
        return None
    names, chunks = [], []
    ours, extended, pos = True, False, 12
    for _ in range(count):
        (flags,) = _FLAGS.unpack_from(data, pos + 60)
        start = pos + (64 if flags & _EXTENDED else 62)
        length = flags & _NAME_MASK
        end = data.index(b"\0", start) if length == _NAME_MASK else start + length
        size = ((end - pos) // 8 + 1) * 8  # 1 to 8 NULs end the name on an 8-byte boundary
        if end > len(data) - 20 or pos + size > len(data) - 20:
            raise ValueError("git index file cut short")
        names.append(data[start:end])
        chunks.append(data[pos : pos + size])
        ours = ours and not flags & _STAGE
        extended = extended or bool(flags & _EXTENDED)
        pos += size
    while pos + 8 <= len(data) - 20:  # extensions: a split index's entries live elsewhere
        signature, length = data[pos : pos + 4], struct.unpack_from(">L", data, pos + 4)[0]
        ours = ours and signature not in (b"link", b"sdir")
        pos += 8 + length
    return names, chunks, ours, extended


_FLAGS = struct.Struct(">H")
_EXTENDED, _STAGE, _NAME_MASK = 0x4000, 0x3000, 0x0FFF


def _encode_entry(name: bytes, entry: object) -> bytes:
    assert isinstance(entry, git_index.IndexEntry)
    buffer = io.BytesIO()
    git_index.write_cache_entry(buffer, entry.serialize(name, git_index.Stage.NORMAL), version=3)
    return buffer.getvalue()


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino


def unmatched(index: IndexFile, root: Path, files: Iterable[tuple[str, int, int]]) -> list[str]:
    """The paths whose stat data disagree with the git index, and the tracked visible ones
    that are gone: what may differ from HEAD, found without reading a clean file."""
    known = {name: (size, mtime_ns) for name, size, mtime_ns in index.recorded()}
    written = index.written()
    changed = []
    for rel, size, mtime_ns in files:
        entry = known.pop(rel.encode("utf-8", "surrogateescape"), None)
        # An entry as new as the index cannot tell a change in the same instant from none:
        # git calls it racily clean and reads the file; so do we.
        if entry is None or entry != (size & 0xFFFFFFFF, mtime_ns) or mtime_ns >= written:
            changed.append(rel)
    for name in known:  # tracked but not walked: gone, or a file the walk leaves alone
        rel = name.decode("utf-8", "surrogateescape")
        if not any(part.startswith(".") for part in rel.split("/")) and _gone(root / rel):
            changed.append(rel)
    return changed


def _gone(path: Path) -> bool:
    try:
        path.lstat()
    except (FileNotFoundError, NotADirectoryError):
        return True
    except OSError:
        return False
    return False
