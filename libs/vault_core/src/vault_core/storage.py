"""How bytes reach the disk: a trash copy before anything is destroyed, then an atomic replace.

A crash at any instant leaves every note either old or new, never torn
(docs/design.md#atomic-write); two trash copies of one note never collide
(docs/design.md#trash).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import secrets
import stat
import time
from collections.abc import Iterable
from pathlib import Path

import structlog

from vault_core.errors import InvalidPathError, StorageError
from vault_core.paths import TEMP_PREFIX, Resolved

log = structlog.get_logger("vault_core")

TRASH = "trash"
_NAME_MAX = 255
LEFTOVER_AGE = 600.0
"""Seconds after which a write's temporary file is a leftover: one a process killed
mid-write left beside its note (a write takes well under a second)."""


def write_atomic(
    resolved: Resolved, data: bytes, *, trash_from: bytes | None, state_dir: Path
) -> None:
    """Trash the old bytes (if any), then write a temp file beside the target and rename it."""
    _make_parents(resolved)
    if trash_from is not None:
        to_trash(state_dir, resolved.rel, trash_from)
    directory = resolved.abs.parent
    temp = directory / f"{TEMP_PREFIX}{secrets.token_hex(8)}"
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        temp.chmod(0o644)
        temp.replace(resolved.abs)
    except OSError as exc:
        temp.unlink(missing_ok=True)
        raise StorageError(resolved.rel, exc.strerror or "write failed") from exc
    _fsync_dir(directory)


def remove_leftovers(temps: Iterable[Path], now: float | None = None) -> int:
    """Remove the temporary files among `temps` that no write can still be making (older
    than `LEFTOVER_AGE`); how many were removed. Nothing reads them: they only take room."""
    now = time.time() if now is None else now
    removed = 0
    for temp in temps:
        try:
            found = temp.lstat()
            if stat.S_ISREG(found.st_mode) and now - found.st_mtime > LEFTOVER_AGE:
                temp.unlink()
                removed += 1
        except OSError:
            continue  # gone meanwhile, or not ours to remove: left as it is
    if removed:
        log.info("temp_files_removed", count=removed)
    return removed


def rename(
    source: Resolved, target: Resolved, *, trash_from: bytes | None, state_dir: Path
) -> None:
    """Move a file; bytes it displaces at the target are trashed first."""
    _make_parents(target)
    if trash_from is not None:
        to_trash(state_dir, target.rel, trash_from)
    try:
        source.abs.replace(target.abs)
    except OSError as exc:
        raise StorageError(source.rel, exc.strerror or "rename failed") from exc
    _fsync_dir(target.abs.parent)
    if source.abs.parent != target.abs.parent:
        _fsync_dir(source.abs.parent)


def remove_to_trash(resolved: Resolved, data: bytes, state_dir: Path) -> None:
    """Delete a file after its bytes are safely in the trash (docs/design.md#delete)."""
    to_trash(state_dir, resolved.rel, data)
    try:
        resolved.abs.unlink()
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StorageError(resolved.rel, exc.strerror or "delete failed") from exc
    _fsync_dir(resolved.abs.parent)


def to_trash(state_dir: Path, rel: str, data: bytes, now: dt.datetime | None = None) -> Path:
    """Copy bytes to `.secondbrain/trash/` under a name that never collides.

    `YYYYMMDD-HHMMSS.ffffff-<path with / as __>` in UTC; a second copy in the
    same microsecond gets `-2`, `-3`, … (created with O_EXCL, so never overwritten).
    """
    trash = state_dir / TRASH
    try:
        trash.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(".secondbrain/trash", exc.strerror or "cannot create") from exc
    stamp = (now or dt.datetime.now(dt.UTC)).strftime("%Y%m%d-%H%M%S.%f")
    flat = rel.replace("/", "__")
    for attempt in range(1, 1000):
        name = trash_name(stamp, flat, attempt)
        try:
            fd = os.open(trash / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            continue
        except OSError as exc:
            raise StorageError(".secondbrain/trash", exc.strerror or "cannot write") from exc
        try:
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        _fsync_dir(trash)
        return trash / name
    raise StorageError(".secondbrain/trash", "too many copies in the same microsecond")


def trash_name(stamp: str, flat: str, attempt: int) -> str:
    """A file name within NAME_MAX; long paths keep their tail and a hash of the whole."""
    unique = stamp if attempt == 1 else f"{stamp}-{attempt}"
    name = f"{unique}-{flat}"
    if len(name.encode()) <= _NAME_MAX:
        return name
    digest = hashlib.sha256(flat.encode()).hexdigest()[:12]
    budget = _NAME_MAX - len(unique.encode()) - len(digest) - 2
    tail = flat.encode()[-budget:].decode("utf-8", "ignore")
    return f"{unique}-{digest}-{tail}"


def _make_parents(resolved: Resolved) -> None:
    try:
        resolved.abs.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError) as exc:
        raise InvalidPathError(
            resolved.rel, "a parent of this path is a file, not a folder"
        ) from exc
    except OSError as exc:
        raise StorageError(resolved.rel, exc.strerror or "cannot create folder") from exc


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        log.warning("fsync_dir_failed")
    finally:
        os.close(fd)
