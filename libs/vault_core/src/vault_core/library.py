"""The vaults of a data directory, each opened with its index, git history and watcher.

This is what a node holds: every folder of `data_dir` with a valid vault name,
or a fresh `default` vault when there is none (docs/design.md#vault-layout). A vault whose git
repository cannot be opened still works, with versioning off (docs/design.md#git).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import structlog

from vault_core import copies, deadline, edit, layouts, paths
from vault_core.edit import WriteOp, WriteResult
from vault_core.errors import NotFoundError, VaultError, VersioningOffError
from vault_core.git.store import GitStore, Identity
from vault_core.index.store import Index
from vault_core.index.watch import Watcher
from vault_core.search import embedding
from vault_core.search.embedding import Embedder
from vault_core.search.vectors import VectorStore
from vault_core.text import decode
from vault_core.vault import Actor, Vault
from vault_core.verbs import Verbs

log = structlog.get_logger("vault_core")

DEFAULT_COMMITTER = Identity("secondbrain", "secondbrain@localhost")
OPEN_WAIT = 0.25
"""Seconds a call waits for a vault being opened before it is told to retry: a vault of a
few hundred notes is ready within it."""
RECOVERED = (
    "changes on disk that history lacked (a crash before their commit, or an edit while no "
    "node watched)"
)
"""The subject of the commit that recovers them, after the vault's `recover` verb."""


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
    verbs: Verbs = field(default_factory=Verbs)
    """What the commits vault_core makes begin with (vault_core.verbs)."""


class OpenVault:
    """A vault with everything that follows its writes."""

    def __init__(self, vault: Vault, index: Index, git: GitStore | None, git_error: str) -> None:
        self.vault = vault
        self.index = index
        self.git = git
        vault.index, vault.git = index, git  # what `edit` updates after each write
        self.git_error = git_error
        self.watcher: Watcher | None = None
        self.embedding: VectorStore | None = None  # the configured model's vectors
        self.stand_in: VectorStore | None = None  # the bundled model's, until those are made
        self._reconciled = time.monotonic()

    @classmethod
    def open(
        cls,
        root: Path,
        name: str,
        settings: Settings,
        *,
        first_commit: str | None = None,
        actor: Actor | None = None,
    ) -> OpenVault:
        """Open index, git and watcher; a new repository first commits what is already there."""
        vault = Vault(root, name, verbs=settings.verbs)
        index = Index.open(root, name)
        git, error = _open_git(root, name, settings)
        opened = cls(vault, index, git, error)
        if git is not None:
            if copies.is_replica(root):
                _match_head(vault, git)
            elif git.empty:
                _import(vault, first_commit, actor)
            else:
                _recover(vault, git)
        index.reconcile()
        if settings.embedder is not None:
            opened.embedding, opened.stand_in = _stores(index, settings.embedder)
            index.on_change = opened.poke_vectors
        if settings.watch:
            opened.watcher = Watcher(
                root, name, index.update_paths, index.reconcile, index.current
            ).start()
        return opened

    @property
    def name(self) -> str:
        return self.vault.name

    @property
    def vectors(self) -> VectorStore | None:
        """The vectors searches rank by meaning with: the configured model's once every
        note has them; while they are being made, the bundled model's stand-in once that
        one is ready; else the configured model's (a search then ranks by words and says
        how far the embedding has come)."""
        main, stand_in = self.embedding, self.stand_in
        if main is None or stand_in is None or main.ready() or not stand_in.ready():
            return main
        return stand_in

    def poke_vectors(self) -> None:
        """After a write: each model's worker embeds what changed."""
        for store in (self.embedding, self.stand_in):
            if store is not None:
                store.poke()

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
        as the restored text has it (docs/design.md#bookkeeping-writes).
        """
        git = self.history()
        resolved = self.vault.resolve_note(path)
        full = git.resolve(revision)
        old = decode(git.contents(resolved.rel, full), resolved.rel).text
        op = WriteOp(
            resolved.rel,
            lambda _cur, _exists: old,
            dry_run=dry_run,
            skip_touch=True,
            reason=f"{self.vault.verbs.restore}: {resolved.rel} to {full[:12]}",
        )
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
        for store in (self.embedding, self.stand_in):
            if store is not None:
                store.stop()
        if self.git is not None:
            self.git.close()
        self.index.close()


def _stores(index: Index, embedder: Embedder) -> tuple[VectorStore, VectorStore | None]:
    """The configured model's vectors and, when that is not the bundled model and has notes
    left to embed, the bundled model's beside them: a transformer takes minutes to hours
    over a vault the bundled model embeds in under a minute, and searches meanwhile rank by
    meaning with the bundled one rather than by words alone. The stand-in's vectors go once
    the configured model has every note (docs/vault-core.md, "An operator's own model")."""
    if embedder.name == embedding.BUNDLED_MODEL:
        return VectorStore(index, embedder).start(), None
    probe = VectorStore(index, embedder).progress()
    if probe.embedded >= probe.total:
        return VectorStore(index, embedder).start(), None
    bundled = embedding.shared(embedding.BUNDLED)
    assert bundled is not None
    main = VectorStore(index, embedder, keep=[bundled.name])
    stand_in = VectorStore(index, bundled, keep=[embedder.name], until=main.ready)
    return main.start(), stand_in.start()


def _import(vault: Vault, message: str | None, actor: Actor | None) -> None:
    # Once, when versioning starts: without it, history and restore would know
    # nothing of the notes that were there before the node.
    files = [entry.rel for entry in vault.walk()]
    if files:
        edit.commit(
            vault,
            message or f"{vault.verbs.import_}: {len(files)} files already in the folder",
            files,
            actor,
        )


def _recover(vault: Vault, git: GitStore) -> None:
    # A write reaches the disk before its commit: a crash in between (or an edit made
    # while no node ran) would stay out of history for good without this.
    files = ((entry.rel, entry.size, entry.mtime_ns) for entry in vault.walk())
    try:
        git.clear_stale_locks()  # a kill during a commit's ref update leaves one behind
        sha = git.commit_uncommitted(files, f"{vault.verbs.recover}: {RECOVERED}")
    except VaultError as exc:
        log.warning("git_recover_failed", vault=vault.name, error=exc.code)
        return
    if sha is not None:
        log.info("git_recovered", vault=vault.name, commit=sha[:12])


def _match_head(vault: Vault, git: GitStore) -> None:
    # A replica holds exactly its primary's commits: what differs on its disk (a receive
    # a crash interrupted, a hand edit) is written back from HEAD, never committed.
    files = ((entry.rel, entry.size, entry.mtime_ns) for entry in vault.walk())
    try:
        git.clear_stale_locks()
        written = git.match_head(files)
    except VaultError as exc:
        log.warning("replica_match_failed", vault=vault.name, error=exc.code)
        return
    if written:
        log.info("replica_matched_head", vault=vault.name, files=len(written))


def _open_git(root: Path, name: str, settings: Settings) -> tuple[GitStore | None, str]:
    if not settings.git:
        return None, "git is disabled in the configuration"
    try:
        store = GitStore.open(
            root,
            name,
            committer=settings.committer,
            remote=settings.git_remote,
            token=settings.git_token,
        )
    except VaultError as exc:
        log.warning("git_unavailable", vault=name, error=exc.code)
        return None, exc.message
    return store, ""


class VaultOpeningError(VaultError):
    """A vault is still being opened (its first index, its history import) past the wait."""

    code = "timeout"

    def __init__(self, name: str) -> None:
        super().__init__(
            f"vault {name} is still being opened: its first index and history import run "
            "once, for minutes in a vault of 100,000 notes; the other vaults answer "
            "meanwhile; retry this call in a minute"
        )
        self.name = name


class _Opening:
    """A vault being opened on its own thread, and how that ended."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.error: BaseException | None = None
        self.thread: threading.Thread | None = None


def _unknown(name: str) -> NotFoundError:
    return NotFoundError(f"unknown vault: {name}; call vault_list for the vaults you can use")


class Library:
    """Every vault of a data directory. Thread-safe.

    A vault is opened on a thread of its own, never under the library's lock: a large
    vault's first open (minutes at 100,000 notes) holds up no call to another vault, and
    a call to it waits at most `OPEN_WAIT` seconds (less under a deadline) before it is
    answered with `VaultOpeningError`.
    """

    def __init__(
        self, data_dir: Path, settings: Settings | None = None, default_vault: str = "default"
    ) -> None:
        self.data_dir = data_dir
        self.settings = settings or Settings()
        self.default_vault = paths.check_vault_name(default_vault)
        self._vaults: dict[str, OpenVault] = {}
        self._opening: dict[str, _Opening] = {}
        self._started: list[tuple[str, _Opening]] = []  # what open_all began, for settle
        self._lock = threading.Lock()

    def open_all(self, *, background: bool = False) -> Library:
        """Open every vault folder; create the default vault when there is none.

        `background`: return at once; each vault opens on a thread of its own (a small one
        is ready in moments beside a large one's first index), all are listed by `names`
        meanwhile, and `get` waits for one as it waits for a new folder.
        """
        self.data_dir.mkdir(parents=True, exist_ok=True)
        names = sorted(
            p.name
            for p in self.data_dir.iterdir()
            if p.is_dir() and paths.VAULT_NAME.fullmatch(p.name)
        )
        if not names:
            self.create(self.default_vault, "wiki-raw")
            return self
        with self._lock:
            pending = [(name, self._opening.setdefault(name, _Opening())) for name in names]
            self._started = pending
        if not background:
            for name, opening in pending:
                self._open(name, opening)
            for _name, opening in pending:
                if opening.error is not None:
                    raise opening.error
            return self
        for name, opening in pending:
            opening.thread = threading.Thread(
                target=self._open, args=(name, opening), name=f"open-{name}", daemon=True
            )
            opening.thread.start()
        return self

    def settle(self, seconds: float) -> list[str]:
        """Wait up to `seconds` for the vaults being opened; the names still opening then.

        A vault `open_all` began that failed raises its error here, as `open_all` does in
        the foreground: a node starting on a broken vault says so instead of serving it."""
        until = time.monotonic() + seconds
        with self._lock:
            pending = [*self._started, *self._opening.items()]
        for _name, opening in pending:
            opening.done.wait(max(0.0, until - time.monotonic()))
        for _name, opening in pending:
            if opening.error is not None:
                raise opening.error
        return sorted({name for name, opening in pending if not opening.done.is_set()})

    def ready(self, name: str) -> OpenVault | None:
        """The open vault of that name, or None (unknown, or still being opened): for
        listings that must not wait for a vault, nor start opening one."""
        with self._lock:
            return self._vaults.get(name)

    def opening(self) -> list[str]:
        """The vaults being opened now."""
        with self._lock:
            return sorted(self._opening)

    def names(self) -> list[str]:
        """The open vaults and those being opened."""
        with self._lock:
            return sorted({*self._vaults, *self._opening})

    def open_new(self) -> list[str]:
        """Begin opening, each on a thread of its own, every vault folder that appeared in
        the data directory since it was last looked at; the names begun. `names` lists
        them at once, `opening` until they are open."""
        found = sorted(p.name for p in self.data_dir.iterdir() if self._is_vault_folder(p.name))
        with self._lock:
            known = self._vaults.keys() | self._opening.keys()
            fresh = [name for name in found if name not in known]
            for name in fresh:
                self._begin(name)
        return fresh

    def _is_vault_folder(self, name: str) -> bool:
        root = self.data_dir / name
        return bool(paths.VAULT_NAME.fullmatch(name)) and root.is_dir() and not root.is_symlink()

    def _begin(self, name: str) -> _Opening:
        """Start opening `name` on its own thread (the caller holds the lock)."""
        opening = self._opening[name] = _Opening()
        opening.thread = threading.Thread(
            target=self._open, args=(name, opening), name=f"open-{name}", daemon=True
        )
        opening.thread.start()
        return opening

    def get(self, name: str) -> OpenVault:
        """An open vault; a folder that appeared since start is opened on first use.

        A vault being opened is waited for at most `OPEN_WAIT` seconds (and never past the
        running call's deadline), then `VaultOpeningError`; a failed open raises its error
        to the callers waiting for it, and the next call tries again."""
        with self._lock:
            opened = self._vaults.get(name)
            if opened is not None:
                return opened
            opening = self._opening.get(name)
            if opening is None:
                if not self._is_vault_folder(name):
                    raise _unknown(name)
                opening = self._begin(name)
        wait, limit = OPEN_WAIT, deadline.current()
        if limit is not None:
            wait = min(wait, max(0.0, limit.at - time.monotonic()))
        if not opening.done.wait(wait):
            raise VaultOpeningError(name)
        if opening.error is not None:
            raise opening.error
        with self._lock:
            opened = self._vaults.get(name)
        if opened is None:  # closed meanwhile
            raise _unknown(name)
        return opened

    def _open(self, name: str, opening: _Opening) -> None:
        started = time.monotonic()
        try:
            opened = OpenVault.open(self.data_dir / name, name, self.settings)
        except Exception as exc:  # noqa: BLE001 — handed to the callers waiting for it
            opening.error = exc
            log.warning("vault_open_failed", vault=name, error=type(exc).__name__)
        else:
            with self._lock:
                self._vaults[name] = opened
            log.info("vault_opened", vault=name, ms=round((time.monotonic() - started) * 1000))
        finally:
            with self._lock:
                self._opening.pop(name, None)
            opening.done.set()

    def create(self, name: str, layout: str = "wiki-raw", actor: Actor | None = None) -> OpenVault:
        """Create a vault with its layout, open it, index it and commit `<create verb>: <name>`."""
        with self._lock:
            created = layouts.create(self.data_dir, name, layout)
            opened = OpenVault.open(
                created.root,
                name,
                self.settings,
                first_commit=f"{self.settings.verbs.create}: {name}",
                actor=actor,
            )
            self._vaults[name] = opened
        return opened

    def close(self) -> None:
        """Close every vault, after the opens still running have ended."""
        while True:
            with self._lock:
                threads = {o.thread for o in self._opening.values() if o.thread is not None}
            if not threads:
                break
            for thread in threads:
                thread.join()
        with self._lock:
            vaults, self._vaults = list(self._vaults.values()), {}
        for opened in vaults:
            opened.close()
