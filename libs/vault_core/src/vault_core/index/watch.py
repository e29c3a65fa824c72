"""Keep the index true while people edit the vault in Obsidian, `git pull` or `rsync`.

Changes are gathered for 400 ms after the first one (docs/design.md#watcher); dot paths and
our own temp files are ignored; a new folder stands for the files in it, and more than
50 paths the index does not already hold as they are mean a full reconcile (our own writes
never count). A watcher that dies is logged and the vault keeps working.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

import structlog
import watchfiles
from watchfiles._rust_notify import WatchfilesRustInternalError

from vault_core import paths
from vault_core.errors import VaultError

log = structlog.get_logger("vault_core")

DEBOUNCE_MS = 400
MAX_PATHS = 50


def relevant(root: Path, raw: str) -> str | None:
    """The vault-relative path of an event, or None for dot paths and temp files."""
    try:
        rel = Path(raw).relative_to(root).as_posix()
    except ValueError:
        return None
    if rel in ("", ".") or any(part.startswith(".") for part in rel.split("/")):
        return None
    return rel


def plan(
    root: Path,
    changes: Iterable[tuple[watchfiles.Change, str]],
    current: Callable[[str], bool] | None = None,
) -> list[str] | None:
    """The paths to update, or None when the batch calls for a full reconcile.

    A new folder counts as the files in it (it may have arrived full: a clone, an unpacked
    archive), so a note created in a new folder updates that note, never the whole vault.
    A path `current` says the index already holds as it is (a tool's own write, taken in
    by the write itself) is dropped before counting: a burst of tool writes is no bulk change.
    """
    held = current or (lambda _rel: False)
    rels: set[str] = set()
    try:
        for change, raw in changes:
            rel = relevant(root, raw)
            if rel is None:
                continue
            if change == watchfiles.Change.added and Path(raw).is_dir():
                found: Iterable[str] = (e.rel for e in paths.walk(root, rel))
            else:
                found = [rel]
            for path in found:
                if not held(path):
                    rels.add(path)
                if len(rels) > MAX_PATHS:
                    return None
    except VaultError:
        return None  # a new folder that cannot be walked by its name: the reconcile finds it
    return sorted(rels)


class Watcher:
    """A background thread that feeds file changes to `update` or `reconcile`; `current(rel)`
    says whether the index already holds a path as it is on disk (then it is left out)."""

    def __init__(
        self,
        root: Path,
        vault: str,
        update: Callable[[list[str]], object],
        reconcile: Callable[[], object],
        current: Callable[[str], bool] | None = None,
    ) -> None:
        self.root = root
        self.vault = vault
        self._update = update
        self._reconcile = reconcile
        self._current = current
        self._stop = threading.Event()
        self._ready = threading.Event()
        self.failed: str | None = None
        self._thread = threading.Thread(target=self._run, name=f"watch-{vault}", daemon=True)

    def start(self, timeout: float = 5.0) -> Watcher:
        """Start watching; returns once the watch is registered (or failed)."""
        self._thread.start()
        self._ready.wait(timeout)
        return self

    @property
    def alive(self) -> bool:
        return self._thread.is_alive() and self.failed is None

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _run(self) -> None:
        try:
            while self._watch():
                # A name that is not UTF-8 ends watchfiles' watch with the batch it was in:
                # watch again, and reconcile for the changes that batch held (the reconcile
                # skips and reports the name, as a start does).
                log.warning("watch_restarted", vault=self.vault)
                self._guarded(self._reconcile)
        except Exception as exc:  # noqa: BLE001 — a watcher is a boundary: log, keep serving
            self.failed = f"{type(exc).__name__}: {exc}"
            log.error("watcher_failed", vault=self.vault, error=type(exc).__name__)  # noqa: TRY400
        finally:
            self._ready.set()

    def _watch(self) -> bool:
        """Watch until stopped (False), or until a batch could not be read after the watch
        had begun (True: watch again). Any other failure, or one at the start, is raised."""
        begun = False
        try:
            for changes in watchfiles.watch(
                self.root,
                debounce=DEBOUNCE_MS,
                step=DEBOUNCE_MS,
                stop_event=self._stop,
                yield_on_timeout=True,
                rust_timeout=200,
                raise_interrupt=False,
            ):
                begun = True
                self._ready.set()
                if changes:
                    self._apply(changes)
        except WatchfilesRustInternalError:
            if not begun or self._stop.is_set():
                raise
            return True
        return False

    def _apply(self, changes: set[tuple[watchfiles.Change, str]]) -> None:
        todo = plan(self.root, changes, self._current)
        if todo is None:
            self._guarded(self._reconcile)
        elif todo:
            self._guarded(self._update, todo)

    def _guarded(self, work: Callable[..., object], *args: object) -> None:
        try:
            work(*args)
        except (OSError, ValueError, RuntimeError, sqlite3.Error, VaultError) as exc:
            # One bad batch must not end the watch: log it, keep watching. (ValueError: a
            # name that is not UTF-8; RuntimeError: a symlink loop on 3.11/3.12.)
            log.warning("watch_batch_failed", vault=self.vault, error=type(exc).__name__)
