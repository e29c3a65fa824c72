"""A vault: a named directory of notes, its write lock, and what follows its writes.

Reads go straight to disk; every mutation goes through `vault_core.edit`
(docs/design.md#write-path), which updates the vault's index and commits to its history
after the file is safely written.
"""

from __future__ import annotations

import datetime as dt
import os
import stat
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from vault_core import note as note_mod
from vault_core import paths, scope
from vault_core.errors import (
    NOTE_LIMIT,
    InvalidPathError,
    NotAFileError,
    NoteNotFoundError,
    PathNotFoundError,
    StorageError,
    TooLargeError,
    VaultError,
)
from vault_core.note import Note
from vault_core.verbs import Verbs

if TYPE_CHECKING:
    from vault_core.git.store import GitStore
    from vault_core.index.store import Index

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
        verbs: Verbs | None = None,
    ) -> None:
        self.root = root
        self.name = paths.check_vault_name(name if name is not None else root.name)
        self.lock = threading.RLock()
        self.index: Index | None = None
        """Kept current by every write (`edit`); set when the vault is opened with one."""
        self.git: GitStore | None = None
        """Where writes are committed; None while versioning is off."""
        self.verbs = verbs or Verbs()
        """The verbs the commits vault_core makes for this vault begin with."""
        self._clock = clock or (lambda: dt.datetime.now(dt.UTC).astimezone())

    def __repr__(self) -> str:
        return f"Vault({self.name!r})"

    def now(self) -> dt.datetime:
        return self._clock()

    @property
    def state_dir(self) -> Path:
        return self.root / STATE_DIR

    def resolve(self, raw: str) -> paths.Resolved:
        """A path to read; one outside the call's path rules is not there (`scope`), nor is
        one that leads outside them through a symbolic link: the rules judge the path asked
        for and where it leads, both (`paths.Resolved.leads`)."""
        return self._stored(paths.resolve(self.root, raw), PathNotFoundError)

    def resolve_note(self, raw: str) -> paths.Resolved:
        return self._stored(paths.resolve_note(self.root, raw), NoteNotFoundError)

    def _stored(
        self, resolved: paths.Resolved, missing: Callable[[str], VaultError]
    ) -> paths.Resolved:
        """`resolved` as the vault spells it (`paths.stored`), once the rules let the caller
        see the path as asked: they compare names in NFC, so both spellings get one
        verdict, and a hidden name's stored spelling is never told. Where the stored
        spelling's links lead is judged again."""
        seen = _visible(resolved, missing)
        if seen is not resolved:  # it leads where the caller may not look
            return seen
        spelled = paths.stored(self.root, resolved)
        return resolved if spelled is resolved else _visible(spelled, missing)

    def resolve_folder(self, raw: str) -> str:
        """A folder to look under, checked like any path and spelled as stored when the
        caller may see it; the call's rules then decide what it shows (a folder outside
        them shows what an empty one does)."""
        resolved = paths.resolve(self.root, raw)
        if scope.visible(resolved.rel):
            resolved = paths.stored(self.root, resolved)
        return resolved.rel.rstrip("/")

    def resolve_for_write(self, raw: str, *, note: bool = True) -> paths.Resolved:
        """A path to change: refused outside the call's write rules before anything at it
        is looked at, so the refusal is the same whether or not something is there. A path
        through a symbolic link is judged where it leads too, and names the file there: a
        write changes what the link leads to, never the link, so no link is replaced by a
        copy of what it showed."""
        resolved = (paths.resolve_note if note else paths.resolve)(self.root, raw)
        scope.check_write(resolved.rel, resolved.leads)
        spelled = paths.stored(self.root, resolved)
        if spelled is not resolved:  # one verdict for both spellings; links judged again
            resolved = spelled
            scope.check_write(resolved.rel, resolved.leads)
        if not resolved.linked:
            return resolved
        return paths.Resolved(resolved.leads, self.root.joinpath(*resolved.leads.split("/")))

    def walk(self, prefix: str = "") -> Iterator[paths.Entry]:
        """Every visible file under `prefix` (all of them when the call has no path rules)."""
        if scope.current() is None:
            return paths.walk(self.root, prefix)
        return (entry for entry in paths.walk(self.root, prefix) if scope.visible(entry.rel))

    def notes(self, prefix: str = "") -> Iterator[paths.Entry]:
        """Every visible `.md` file (case-insensitive extension)."""
        return (e for e in self.walk(prefix) if e.rel.lower().endswith(".md"))

    def read_note(self, raw: str) -> Note:
        """Read and parse one note; errors for missing, directory, too large, not UTF-8."""
        resolved = self.resolve_note(raw)
        data, mtime_ns = read_limited(resolved, NOTE_LIMIT)
        return note_mod.parse(resolved.rel, data, mtime_ns)

    def exists(self, raw: str) -> bool:
        """Is there a note the call may see at `raw`?"""
        resolved = paths.resolve_note(self.root, raw)
        if not scope.visible(resolved.rel, resolved.leads):
            return False
        resolved = paths.stored(self.root, resolved)
        return scope.visible(resolved.rel, resolved.leads) and resolved.abs.is_file()


def _visible(resolved: paths.Resolved, missing: Callable[[str], VaultError]) -> paths.Resolved:
    if not scope.visible(resolved.rel):
        raise missing(resolved.rel)
    if resolved.linked and not scope.visible(resolved.leads):
        # Spelled where the caller may look but leading where it may not: what is there
        # reads as nothing, exactly as at a free path of that folder (no file, no folder).
        return paths.Resolved(resolved.rel, NOWHERE.joinpath(*resolved.rel.split("/")))
    return resolved


NOWHERE = Path(os.devnull)
"""A path below it never exists: the device is no folder (opening below it fails with
ENOTDIR, which reads as "not found")."""


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
