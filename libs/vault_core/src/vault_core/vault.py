"""A vault: a named directory of notes, its write lock, and what runs after a write.

Reads go straight to disk; every mutation goes through `edit.apply` (spec §11),
which calls the registered hooks (index, git) after the file is safely written.
"""

from __future__ import annotations

import datetime as dt
import os
import stat
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Protocol

import structlog

from vault_core import note as note_mod
from vault_core import paths
from vault_core.errors import (
    NOTE_LIMIT,
    InvalidPathError,
    NotAFileError,
    NoteNotFoundError,
    StorageError,
    TooLargeError,
)
from vault_core.note import Note

log = structlog.get_logger("vault_core")

STATE_DIR = ".secondbrain"
ATTACHMENT_TYPES = (
    ".png", ".jpg", ".jpeg", ".gif", ".webp", ".svg", ".pdf", ".txt", ".csv", ".json",
    ".yaml", ".yml", ".mp3", ".m4a", ".wav",
)  # fmt: skip


@dataclass(frozen=True)
class Actor:
    """Who asked for a change: the token's principal and, if any, the grant it used."""

    principal: str
    grant_id: str | None = None


class WriteHook(Protocol):
    """Something that follows writes: the index updates paths, git commits them."""

    def changed(self, vault: Vault, paths: Sequence[str]) -> None: ...

    def commit(
        self, vault: Vault, message: str, paths: Sequence[str], actor: Actor | None
    ) -> None: ...


def rfc3339(moment: dt.datetime) -> str:
    """Seconds precision, `Z` for UTC: `2026-11-30T05:00:00Z`; naive times count as UTC."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    text = moment.isoformat(timespec="seconds")
    return text[:-6] + "Z" if text.endswith("+00:00") else text


class Vault:
    """One vault directory. Thread-safe: writes serialise on `lock` (re-entrant)."""

    def __init__(
        self,
        root: Path,
        name: str | None = None,
        *,
        clock: Callable[[], dt.datetime] | None = None,
        hooks: Sequence[WriteHook] = (),
    ) -> None:
        self.root = root
        self.name = paths.check_vault_name(name if name is not None else root.name)
        self.lock = threading.RLock()
        self.hooks: list[WriteHook] = list(hooks)
        self._clock = clock or (lambda: dt.datetime.now(dt.UTC).astimezone())

    def __repr__(self) -> str:
        return f"Vault({self.name!r})"

    def now(self) -> dt.datetime:
        return self._clock()

    @property
    def state_dir(self) -> Path:
        return self.root / STATE_DIR

    def resolve(self, raw: str) -> paths.Resolved:
        return paths.resolve(self.root, raw)

    def resolve_note(self, raw: str) -> paths.Resolved:
        return paths.resolve_note(self.root, raw)

    def walk(self, prefix: str = "") -> Iterator[paths.Entry]:
        return paths.walk(self.root, prefix)

    def notes(self, prefix: str = "") -> Iterator[paths.Entry]:
        """Every visible `.md` file (case-insensitive extension)."""
        return (e for e in self.walk(prefix) if e.rel.lower().endswith(".md"))

    def read_note(self, raw: str) -> Note:
        """Read and parse one note; errors for missing, directory, too large, not UTF-8."""
        resolved = self.resolve_note(raw)
        data, mtime_ns = read_limited(resolved, NOTE_LIMIT)
        return note_mod.parse(resolved.rel, data, mtime_ns)

    def exists(self, raw: str) -> bool:
        return self.resolve_note(raw).abs.is_file()

    def commit(self, message: str, paths_: Sequence[str], actor: Actor | None = None) -> None:
        """A summary commit for a vault-wide operation (note_move, tag_rename, vault_replace)."""
        for hook in self.hooks:
            run_hook("commit", self, partial(hook.commit, self, message, paths_, actor))

    def changed(self, paths_: Sequence[str]) -> None:
        for hook in self.hooks:
            run_hook("changed", self, partial(hook.changed, self, paths_))


def read_limited(resolved: paths.Resolved, limit: int) -> tuple[bytes, int]:
    """The bytes of a regular file at most `limit` long, with its mtime in nanoseconds.

    Opened without blocking and checked on the open file: a pipe never holds the reader.
    """
    try:
        fd = os.open(resolved.abs, os.O_RDONLY | os.O_NONBLOCK)
    except (FileNotFoundError, NotADirectoryError) as exc:
        raise NoteNotFoundError(resolved.rel) from exc
    except OSError as exc:
        raise StorageError(resolved.rel, exc.strerror or "cannot open") from exc
    try:
        found = os.fstat(fd)
        _check_regular(resolved.rel, found, limit)
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise StorageError(resolved.rel, exc.strerror or "cannot read") from exc
    finally:
        os.close(fd)
    if len(data) > limit:  # grew between stat and read
        raise TooLargeError(resolved.rel, len(data), limit)
    return data, found.st_mtime_ns


def _check_regular(rel: str, found: os.stat_result, limit: int) -> None:
    if stat.S_ISDIR(found.st_mode):
        raise NotAFileError(rel)
    if not stat.S_ISREG(found.st_mode):
        raise InvalidPathError(
            rel, "not a regular file (a pipe, socket or device); it cannot be read as a note"
        )
    if found.st_size > limit:
        raise TooLargeError(rel, found.st_size, limit)


def run_hook(kind: str, vault: Vault, call: Callable[[], None]) -> None:
    """Hooks never fail a write that already reached the disk: they warn (spec §11.1)."""
    try:
        call()
    except Exception as exc:  # noqa: BLE001 — a hook is a boundary: warn, never fail the write
        log.warning("write_hook_failed", vault=vault.name, hook=kind, error=type(exc).__name__)
