"""Keep the index true while people edit the vault in Obsidian, `git pull` or `rsync`.

Changes are gathered for 400 ms after the first one (spec §10.3); dot paths and
our own temp files are ignored; a new folder or more than 50 paths means a full
reconcile. A watcher that dies is logged and the vault keeps working.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

import structlog
import watchfiles

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


def plan(root: Path, changes: Iterable[tuple[watchfiles.Change, str]]) -> list[str] | None:
    """The paths to update, or None when the batch calls for a full reconcile."""
    rels: set[str] = set()
    for change, raw in changes:
        rel = relevant(root, raw)
        if rel is None:
            continue
        if change == watchfiles.Change.added and Path(raw).is_dir():
            return None  # a folder that arrived full (a clone, an unpacked archive)
        rels.add(rel)
    if len(rels) > MAX_PATHS:
        return None
    return sorted(rels)


class Watcher:
    """A background thread that feeds file changes to `update` or `reconcile`."""

    def __init__(
        self,
        root: Path,
        vault: str,
        update: Callable[[list[str]], object],
        reconcile: Callable[[], object],
    ) -> None:
        self.root = root
        self.vault = vault
        self._update = update
        self._reconcile = reconcile
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
            for changes in watchfiles.watch(
                self.root,
                debounce=DEBOUNCE_MS,
                step=DEBOUNCE_MS,
                stop_event=self._stop,
                yield_on_timeout=True,
                rust_timeout=200,
                raise_interrupt=False,
            ):
                self._ready.set()
                if changes:
                    self._apply(changes)
        except Exception as exc:  # noqa: BLE001 — a watcher is a boundary: log, keep serving
            self.failed = f"{type(exc).__name__}: {exc}"
            log.error("watcher_failed", vault=self.vault, error=type(exc).__name__)  # noqa: TRY400
        finally:
            self._ready.set()

    def _apply(self, changes: set[tuple[watchfiles.Change, str]]) -> None:
        todo = plan(self.root, changes)
        try:
            if todo is None:
                self._reconcile()
            elif todo:
                self._update(todo)
        except (OSError, ValueError, RuntimeError, sqlite3.Error, VaultError) as exc:
            # One bad batch must not end the watch: log it, keep watching. (ValueError: a
            # name that is not UTF-8; RuntimeError: a symlink loop on 3.11/3.12.)
            log.warning("watch_batch_failed", vault=self.vault, error=type(exc).__name__)
