"""The vaults of a data directory, each opened with its index, git history and watcher.

This is what a node holds: every folder of `data_dir` with a valid vault name,
or a fresh `default` vault when there is none (spec §8.1). A vault whose git
repository cannot be opened still works, with versioning off (spec §11.6).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import structlog

from vault_core import edit, layouts, paths
from vault_core.edit import WriteOp, WriteResult
from vault_core.embedding import Embedder
from vault_core.errors import NotFoundError, VaultError, VersioningOffError
from vault_core.gitstore import GitStore, Identity
from vault_core.index import Index
from vault_core.text import decode
from vault_core.vault import Actor, Vault
from vault_core.vectors import VectorStore
from vault_core.watch import Watcher

log = structlog.get_logger("vault_core")

DEFAULT_COMMITTER = Identity("secondbrain", "secondbrain@localhost")
RECOVERED = (
    "vault_recover: changes on disk that history lacked "
    "(a crash before their commit, or an edit while no node watched)"
)


@dataclass(frozen=True)
class Settings:
    """How vaults are opened: versioning, remote push, watching."""

    git: bool = True
    committer: Identity = DEFAULT_COMMITTER
    git_remote: str | None = None
    git_token: str | None = field(default=None, repr=False)  # never in a repr or a log
    watch: bool = True
    embedder: Embedder | None = field(default=None, compare=False)
    """Makes the vectors search ranks by meaning with, in the background (None: keywords only)."""


class IndexHook:
    """After a write, bring the written paths up to date in the index."""

    def __init__(self, index: Index) -> None:
        self.index = index

    def changed(self, vault: Vault, paths_: Sequence[str]) -> None:
        self.index.update_paths(paths_)

    def commit(
        self, vault: Vault, message: str, paths_: Sequence[str], actor: Actor | None
    ) -> None:
        return None


class GitHook:
    """After a write with a reason, commit exactly the touched paths, attributed."""

    def __init__(self, git: GitStore) -> None:
        self.git = git

    def changed(self, vault: Vault, paths_: Sequence[str]) -> None:
        return None

    def commit(
        self, vault: Vault, message: str, paths_: Sequence[str], actor: Actor | None
    ) -> None:
        author = author_of(actor) if actor else None
        self.git.commit(message, paths_, author=author, grant_id=actor.grant_id if actor else None)


def author_of(actor: Actor) -> Identity:
    """The git author for a principal: its id as name, a non-routable address as e-mail."""
    return Identity(actor.principal, f"{actor.principal}@secondbrain.invalid")


class OpenVault:
    """A vault with everything that follows its writes."""

    def __init__(self, vault: Vault, index: Index, git: GitStore | None, git_error: str) -> None:
        self.vault = vault
        self.index = index
        self.git = git
        self.git_error = git_error
        self.watcher: Watcher | None = None
        self.vectors: VectorStore | None = None
        self._reconciled = time.monotonic()

    @classmethod
    def open(
        cls, root: Path, name: str, settings: Settings, *, first_commit: str | None = None,
        actor: Actor | None = None,
    ) -> OpenVault:  # fmt: skip
        """Open index, git and watcher; a new repository first commits what is already there."""
        vault = Vault(root, name)
        index = Index.open(root, name)
        git, error = _open_git(root, name, settings)
        opened = cls(vault, index, git, error)
        vault.hooks.append(IndexHook(index))
        if git is not None:
            vault.hooks.append(GitHook(git))
            if git.empty:
                _import(vault, first_commit, actor)
            else:
                _recover(vault, git)
        index.reconcile()
        if settings.embedder is not None:
            opened.vectors = VectorStore(index, settings.embedder).start()
            index.on_change = opened.vectors.poke
        if settings.watch:
            opened.watcher = Watcher(root, name, index.update_paths, index.reconcile).start()
        return opened

    @property
    def name(self) -> str:
        return self.vault.name

    def history(self) -> GitStore:
        """The git store, or the `versioning is off` error the history tools report."""
        if self.git is None:
            raise VersioningOffError(self.name, self.git_error or "git is disabled")
        return self.git

    def restore(
        self, path: str, revision: str, *, dry_run: bool = False, actor: Actor | None = None
    ) -> WriteResult:
        """Write a note back as it was at `revision`, through the normal write path.

        The current text goes to the trash and stays in history; `updated` is left
        as the restored text has it (spec §11.5, §13.8).
        """
        git = self.history()
        resolved = self.vault.resolve_note(path)
        full = git.resolve(revision)
        old = decode(git.contents(resolved.rel, full), resolved.rel).text
        op = WriteOp(resolved.rel, lambda _cur, _exists: old, dry_run=dry_run, skip_touch=True,
                     reason=f"note_restore: {resolved.rel} to {full[:12]}")  # fmt: skip
        result = edit.apply(self.vault, op, actor)
        result.extra["restored_from"] = full[:12]
        return result

    def fresh(self, max_age: float = 2.0) -> None:
        """Reconcile when no watcher keeps the index current (failed or disabled).

        At most once per `max_age` seconds: a burst of calls costs one walk.
        """
        if self.watcher is not None and self.watcher.alive:
            return
        now = time.monotonic()
        if now - self._reconciled < max_age:
            return
        self.index.reconcile()
        self._reconciled = time.monotonic()

    def close(self) -> None:
        if self.watcher is not None:
            self.watcher.stop()
        if self.vectors is not None:
            self.vectors.stop()
        if self.git is not None:
            self.git.close()
        self.index.close()


def _import(vault: Vault, message: str | None, actor: Actor | None) -> None:
    # Once, when versioning starts: without it, history and restore would know
    # nothing of the notes that were there before the node.
    files = [entry.rel for entry in vault.walk()]
    if files:
        vault.commit(message or f"vault_import: {len(files)} files already in the folder", files,
                     actor)  # fmt: skip


def _recover(vault: Vault, git: GitStore) -> None:
    # A write reaches the disk before its commit: a crash in between (or an edit made
    # while no node ran) would stay out of history for good without this.
    files = ((entry.rel, entry.size, entry.mtime_ns) for entry in vault.walk())
    try:
        git.clear_stale_locks()  # a kill during a commit's ref update leaves one behind
        sha = git.commit_uncommitted(files, RECOVERED)
    except VaultError as exc:
        log.warning("git_recover_failed", vault=vault.name, error=exc.code)
        return
    if sha is not None:
        log.info("git_recovered", vault=vault.name, commit=sha[:12])


def _open_git(root: Path, name: str, settings: Settings) -> tuple[GitStore | None, str]:
    if not settings.git:
        return None, "git is disabled in the configuration"
    try:
        store = GitStore.open(
            root, name, committer=settings.committer, remote=settings.git_remote,
            token=settings.git_token,
        )  # fmt: skip
    except VaultError as exc:
        log.warning("git_unavailable", vault=name, error=exc.code)
        return None, exc.message
    return store, ""


class Library:
    """Every vault of a data directory. Thread-safe."""

    def __init__(self, data_dir: Path, settings: Settings | None = None,
                 default_vault: str = "default") -> None:  # fmt: skip
        self.data_dir = data_dir
        self.settings = settings or Settings()
        self.default_vault = paths.check_vault_name(default_vault)
        self._vaults: dict[str, OpenVault] = {}
        self._lock = threading.Lock()

    def open_all(self) -> Library:
        """Open every vault folder; create the default vault when there is none."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        names = sorted(
            p.name
            for p in self.data_dir.iterdir()
            if p.is_dir() and paths.VAULT_NAME.fullmatch(p.name)
        )
        if not names:
            self.create(self.default_vault, "wiki-raw")
            return self
        for name in names:
            with self._lock:
                self._vaults[name] = OpenVault.open(self.data_dir / name, name, self.settings)
        return self

    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._vaults)

    def get(self, name: str) -> OpenVault:
        """An open vault; a folder that appeared since start is opened on first use."""
        with self._lock:
            opened = self._vaults.get(name)
            if opened is None and paths.VAULT_NAME.fullmatch(name):
                root = self.data_dir / name
                if root.is_dir() and not root.is_symlink():
                    opened = OpenVault.open(root, name, self.settings)
                    self._vaults[name] = opened
        if opened is None:
            raise NotFoundError(
                f"unknown vault: {name}; call vault_list for the vaults you can use"
            )
        return opened

    def create(self, name: str, layout: str = "wiki-raw", actor: Actor | None = None) -> OpenVault:
        """Create a vault with its layout, open it, index it and commit `vault_create: <name>`."""
        with self._lock:
            created = layouts.create(self.data_dir, name, layout)
            opened = OpenVault.open(
                created.root, name, self.settings, first_commit=f"vault_create: {name}", actor=actor
            )
            self._vaults[name] = opened
        return opened

    def close(self) -> None:
        with self._lock:
            vaults, self._vaults = list(self._vaults.values()), {}
        for opened in vaults:
            opened.close()
