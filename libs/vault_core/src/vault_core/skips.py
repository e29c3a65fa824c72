"""Files a vault holds that the node leaves alone, with the reason for each.

A name that is not UTF-8, a file that cannot be read, a symbolic link that loops or
leads out of the vault or into one of its dot folders: each is skipped, never fatal.
The index keeps the current list for `vault_stats` and `vault_review`, and logs an
entry once, when it first appears (vault-relative, escaped, never an absolute path).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass

import structlog

from vault_core import scope

log = structlog.get_logger("vault_core")

REASONS = {
    "bad_name": "the name is not valid UTF-8; rename it",
    "unreadable": "the node may not read it (permissions) or the read failed; fix or remove it",
    "not_a_file": "not a regular file or folder (a pipe, socket or device); remove it",
    "not_utf8": "the note is not valid UTF-8 text; convert or remove it",
    "too_large": "the note is larger than 4 MiB; split it",
    "parse_failed": "the note could not be parsed; check it in an editor",
    "symlink_loop": "a symbolic link that leads back into itself; remove it",
    "symlink_broken": "a symbolic link to nothing; remove it",
    "symlink_outside": "a symbolic link that leads outside the vault; remove it",
    "symlink_hidden": "a symbolic link into a hidden folder (.git, .secondbrain, …); remove it",
}
LOGGED = 100  # skips logged one by one per reconcile; more are counted in one line


@dataclass(frozen=True)
class Skipped:
    """One skipped path: vault-relative and escaped (`paths.shown`), with a REASONS key.

    `mtime_ns` and `size` are set for a file skipped for what it holds, so an unchanged
    file is not read again; a path skipped for what it is (a name, a link) has -1.
    """

    path: str
    reason: str
    mtime_ns: int = -1
    size: int = -1

    def row(self) -> dict[str, str]:
        return {"path": self.path, "reason": self.reason}


class Skips:
    """The skipped paths of one vault. Thread-safe."""

    def __init__(self, vault: str) -> None:
        self.vault = vault
        self._lock = threading.Lock()
        self._found: dict[str, Skipped] = {}

    def get(self, path: str) -> Skipped | None:
        with self._lock:
            return self._found.get(path)

    def add(self, item: Skipped) -> None:
        with self._lock:
            new = _new(self._found, item)
            self._found[item.path] = item
        if new:
            self._log([item])

    def discard(self, path: str) -> None:
        with self._lock:
            self._found.pop(path, None)

    def replace(self, items: Iterable[Skipped]) -> None:
        """The complete list after a walk of the whole vault; logs what is new in it."""
        found = {item.path: item for item in items}
        with self._lock:
            old, self._found = self._found, found
        self._log([item for item in found.values() if _new(old, item)])

    def listing(self, limit: int | None = None) -> list[Skipped]:
        """The skipped paths the running call may see (`vault_core.scope`), by path. A
        caller with path rules is told of no symbolic link: whether one leads nowhere or to
        a note the rules hide must not show."""
        with self._lock:
            items = sorted(self._found.values(), key=lambda item: item.path)
        if scope.current() is not None:
            items = [
                item
                for item in items
                if scope.visible(item.path) and not item.reason.startswith("symlink_")
            ]
        return items if limit is None else items[:limit]

    def __len__(self) -> int:
        if scope.current() is not None:
            return len(self.listing())
        with self._lock:
            return len(self._found)

    def _log(self, items: list[Skipped]) -> None:
        for item in items[:LOGGED]:
            log.warning("file_skipped", vault=self.vault, path=item.path, reason=item.reason)
        if len(items) > LOGGED:
            log.warning("files_skipped", vault=self.vault, more=len(items) - LOGGED)


def _new(known: dict[str, Skipped], item: Skipped) -> bool:
    earlier = known.get(item.path)
    return earlier is None or earlier.reason != item.reason
