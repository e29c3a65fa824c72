"""Per-vault git history (dulwich) whose cost per commit does not grow with the vault.

A commit stages only the paths a write touched; pushing, packing and writing a large git
index file run on background threads and never fail or delay a write. A path that cannot
be committed (a name that is not UTF-8, a file that cannot be read, a path through a
linked folder) is left out with a warning; the others are committed.
"""

from __future__ import annotations

import contextlib
import functools
import io
import re
import stat
import struct
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import structlog
from dulwich import errors as git_errors
from dulwich import index as git_index
from dulwich import porcelain
from dulwich.client import default_urllib3_manager
from dulwich.diff_tree import RenameDetector
from dulwich.file import FileLocked
from dulwich.ignore import IgnoreFilterManager
from dulwich.objects import S_ISGITLINK, Commit, ObjectID, SubmoduleEncountered
from dulwich.refs import Ref
from dulwich.repo import Repo

from vault_core import diff, errors, paths, scope
from vault_core.git import _sync
from vault_core.git._index import IndexFile, unmatched
from vault_core.git._pack import PackWriter, merge, small_packs
from vault_core.git._tree import Change, Entry, Trees

__all__ = ["GITIGNORE_LINES", "GitStore", "Identity", "Revision"]

log = structlog.get_logger(__name__)

GITIGNORE_LINES = (".secondbrain/", ".obsidian/workspace*.json", ".DS_Store")
MESSAGE_LIMIT = 140
PACK_EVERY = 200  # commits between background packs; fewer loose objects are left alone
PACK_LIMIT = 20  # more packs than this: the small ones are merged into one
PACK_DIRECT = 500  # files in one commit from which its objects go straight into packs
LOCK_AGE = 5.0  # seconds a git lock file may be held by a live git before it is stale
CLOSE_WAIT = 10.0  # seconds close() waits for a running push or pack
PREVIOUS_SEARCH = 100  # commits note_diff looks back for one that still had a deleted note
PUSH_TIMEOUT = 60.0  # seconds an HTTP push may stall before it fails
INDEX_INLINE = 2_000  # entries up to which a commit writes git's index file itself (< 1 ms)
INDEX_QUIET = 1.0  # seconds without a commit before a larger index file is written
INDEX_LAG = 5.0  # and at the latest this long after the first commit it lacks
INDEX_RETRIES = 10  # writes in a row tried again, a quiet second apart, while git holds its lock
_HEAD = Ref(b"HEAD")
_ZERO = ObjectID(b"0" * 40)
_HEX = re.compile(r"[0-9a-f]{4,40}")
_MISSING = (KeyError, git_errors.WrongObjectException, SubmoduleEncountered)
_DULWICH = (git_errors.ChecksumMismatch, git_errors.FileFormatException, FileLocked)
_GIT_ERRORS = (OSError, ValueError, zlib.error, struct.error, *_MISSING, *_DULWICH)


@dataclass(frozen=True)
class Identity:
    """A person or node as git records it: `name <email>`."""

    name: str
    email: str


@dataclass(frozen=True)
class Revision:
    """One commit that touched a path, as note_history reports it."""

    commit: str
    when: str
    author: str
    message: str
    path: str = ""
    """Where the note was in this commit: differs from the path asked for before a move."""


class GitStore:
    """The git repository of one vault; every method may be called from any thread."""

    def __init__(self, repo: Repo, root: Path, vault: str, committer: Identity) -> None:
        self._repo, self._root, self._vault, self._committer = repo, root, vault, committer
        self._remote: str | None = None
        self._token: str | None = None
        self._lock = threading.RLock()
        # Held by a push from its start to its end: the packer deletes loose objects and
        # merged packs only between pushes, since a push reads them without `_lock` (it
        # opens the repository on its own, for up to PUSH_TIMEOUT) and an object deleted
        # under it failed the push.
        self._pushing = threading.Lock()
        self._index = IndexFile(repo.index_path())
        self._trees = Trees(repo.object_store)
        self._commits = 0
        self._counted: tuple[str, int] | None = None  # the last `counted()` answer
        self._closed = False
        self._pusher = _Worker(f"git-push-{vault}", self._push)
        self._packer = _Worker(f"git-pack-{vault}", self._pack)
        self._merger = _Worker(f"git-merge-{vault}", self._merge_received)
        self._received = 0
        self._syncer = _Quiet(f"git-index-{vault}", self._write_index, INDEX_QUIET, INDEX_LAG)
        self._index_tries = 0  # index writes in a row that found git's lock held

    @classmethod
    def open(
        cls,
        root: Path,
        vault: str,
        *,
        committer: Identity,
        remote: str | None = None,
        token: str | None = None,
    ) -> GitStore:
        """Open `<root>/.git`, or create it with a .gitignore for the node's own files.

        An existing .gitignore keeps its lines; missing ones are appended. Raises
        VersioningOffError when the repository cannot be opened or created.
        """
        reason = ".git is not a usable git repository"
        try:
            repo = _open_or_init(root, vault)
            reason = "the git index is unreadable; run `git reset` in the vault to rebuild it"
            with _closing_on_error(repo):
                store = cls(repo, root, vault, committer)
        except (*_GIT_ERRORS, git_errors.NotGitRepository, AssertionError) as exc:
            if isinstance(exc, OSError):
                reason = f"cannot open or create .git: {_describe(exc)}"
            raise errors.VersioningOffError(vault, reason) from exc
        store._remote, store._token = remote, token
        store._packer.request()  # packs only if an earlier run left many loose objects
        return store

    @property
    def empty(self) -> bool:
        """True while the repository has no commit yet."""
        with self._lock:
            try:
                self._repo.head()
            except KeyError:
                return True
            return False

    def commit(
        self,
        message: str,
        paths: Sequence[str],
        *,
        author: Identity | None = None,
        grant_id: str | None = None,
    ) -> str | None:
        """Stage exactly `paths` (vault-relative, '/') and commit them; the full sha, or None
        when the tree did not change.

        A path gone from disk is removed; an untracked ignored path and an unchanged one are
        skipped; the first commit of a repository also takes .gitignore. The message becomes
        one line of at most 140 characters, plus a `Secondbrain-Grant` trailer if given.
        """
        body = _message(message, grant_id)
        who, by = _person(author or self._committer), _person(self._committer)
        wanted = [_checked(path) for path in dict.fromkeys(paths) if self._nameable(path)]
        with self._lock, _translated("commit"):
            sha = self._commit_locked(body, wanted, who, by)
        if sha is not None and self._remote:
            self._pusher.request()
        return sha

    def history(self, path: str, limit: int = 20) -> list[Revision]:
        """Commits that added, changed, moved or deleted `path`, newest first, at most
        `limit`, following moves back (as `git log --follow`): each names the note's path
        in that commit. NotFoundError when the repository has no commits at all."""
        with self._lock, _translated("history"):
            return [_revision(commit, at) for commit, at in self._followed(path, limit)]

    def resolve(self, revision: str) -> str:
        """The full sha of the commit named by a full or abbreviated (4+ hex) id."""
        rev = revision.strip().lower()
        if not _HEX.fullmatch(rev):
            raise errors.UnknownRevisionError(revision, "use 4 to 40 hex characters")
        with self._lock, _translated("resolve"):
            store, kind = self._open_repo().object_store, Commit.type_num
            found = [s for s in store.iter_prefix(rev.encode()) if store.get_raw(s)[0] == kind]
        if len(found) > 1:
            detail = f"ambiguous: {len(found)} commits start with it; pass more characters"
            raise errors.UnknownRevisionError(revision, detail)
        if not found:
            raise errors.UnknownRevisionError(revision)
        return found[0].decode()

    def contents(self, path: str, revision: str) -> bytes:
        """The bytes of `path` as committed in `revision`, under the name the note had then
        if it was moved since (as note_history follows it) — unless the running call's path
        rules hide that name: a note moved out of a folder the caller may not see has no
        past before the move for it, and its text from then is "not found" like a missing
        one."""
        key = _checked(path).encode()
        sha = ObjectID(self.resolve(revision).encode())
        with self._lock, _translated("contents"):
            tree = self._tree_of(sha)
            entry = self._lookup(tree, key)
            then = self._path_then(path, sha) if entry is None else None
            if then is not None and scope.visible(then.decode()):
                entry = self._lookup(tree, then)
            data = None
            if entry is not None and not (stat.S_ISDIR(entry[0]) or S_ISGITLINK(entry[0])):
                data = self._repo.object_store[entry[1]]
        if data is None:
            hint = "call note_history"
            raise errors.NotFoundError(f"{path} does not exist in revision {revision}; {hint}")
        return data.as_raw_string()

    def previous_revision(self, path: str) -> str | None:
        """The full sha of the newest commit before the last change of `path` that still
        had it (a delete undone by a restore is stepped over), else the newest commit
        touching it, None if none does: the default `from` of note_diff."""
        key = _checked(path).encode()
        with self._lock, _translated("history"):
            commits = self._touching(path, PREVIOUS_SEARCH)
            held = (c for c in commits[1:] if self._lookup(ObjectID(c.tree), key) is not None)
            found = next(held, commits[0] if commits else None)
        return found.id.decode() if found is not None else None

    def diff(
        self, path: str, from_rev: str, to_rev: str | None, working_copy: bytes | None = None
    ) -> str:
        """Unified diff of `path` from `from_rev` to `to_rev`, or to `working_copy` (None: the
        file is gone) when `to_rev` is None; "(no difference)" when both sides are equal."""
        old, old_label = self.contents(path, from_rev), self.resolve(from_rev)[:12]
        if to_rev is None:
            new, new_label = working_copy or b"", "working copy"
        else:
            new, new_label = self.contents(path, to_rev), self.resolve(to_rev)[:12]
        if old == new:
            return "(no difference)"
        return _unified(path, old, new, old_label, new_label) or "(no difference)"

    def sync(self) -> None:
        """Write git's index file now if it lacks commits made since it was last written.

        A commit writes a small index file itself; a large one (more than 2,000 entries,
        whose writing hashes megabytes) is written once commits pause for a second, at the
        latest 5 s into a burst, and on close: until then `git status` in the vault lists
        the notes committed since as changed."""
        self._syncer.cancel(CLOSE_WAIT)
        with self._lock, _translated("writing the git index"):
            self._index.flush()

    def close(self) -> None:
        """Write git's index file, wait (at most 10 s) for a running push or pack, then
        release the repository."""
        deadline = time.monotonic() + CLOSE_WAIT
        with contextlib.suppress(errors.StorageError):  # logged; git rebuilds its index
            self.sync()
        for worker in (self._pusher, self._packer, self._merger):
            worker.join(deadline - time.monotonic())
        with self._lock:
            if not self._closed:
                self._closed = True
                self._repo.close()

    def clear_stale_locks(self, age: float = LOCK_AGE) -> list[str]:
        """Remove the lock files a process killed mid-write left in .git (of the index, HEAD,
        a branch, a loose object), each of which would refuse every later commit (of that
        object's content); their names in .git.

        Only for a repository no other process of ours writes (the node holds its data
        directory): a lock younger than `age` seconds gets that long to go away first, as a
        person's git at work would let it."""
        control = Path(self._open_repo().controldir())
        locks = [control / "index.lock", control / "HEAD.lock", control / "packed-refs.lock"]
        removed = []
        with self._lock, _translated("clearing stale locks"):
            # A loose object's lock is its write in progress: left behind, it refuses every
            # later write of that very content (the same object) for good.
            branches = sorted((control / "refs" / "heads").rglob("*.lock"))
            objects = sorted((control / "objects").glob("??/*.lock"))
            for lock in [*locks, *branches, *objects]:
                if _stale(lock, age):
                    with contextlib.suppress(FileNotFoundError):
                        lock.unlink()
                    removed.append(lock.relative_to(control).as_posix())
                    log.warning("git_stale_lock_removed", vault=self._vault, lock=removed[-1])
        return removed

    def commit_uncommitted(self, files: Iterable[tuple[str, int, int]], message: str) -> str | None:
        """Commit what the working tree holds that HEAD does not — a crash between a file's
        write and its commit, an edit while nothing watched — with the node as author.

        `files` is every visible file as (path, size, mtime_ns). As git does, a file whose
        size and mtime match its index entry is unchanged without being read, unless the
        entry is as new as the index file ("racily clean"); only the others are hashed. A
        tracked path without a dot segment that is gone from disk is committed as deleted.
        The sha, or None when the tree held nothing new.
        """
        with self._lock, _translated("recover"):
            self._open_repo()
            self._index.refresh()
            changed = unmatched(self._index, self._root, files)
        return self.commit(message, changed) if changed else None

    def head(self) -> str | None:
        """The full sha HEAD names, None before the first commit."""
        with self._lock, _translated("reading HEAD"):
            return _sync.head_of(self._open_repo())

    def counted(self) -> tuple[str | None, int]:
        """HEAD and the number of commits in its history ((None, 0) before the first):
        what a copy reports to the center, where the primary's count less a replica's is
        the replica's lag. Counted on from the last answer, so it costs the new commits."""
        with self._lock, _translated("counting commits"):
            repo = self._open_repo()
            head = _sync.head_of(repo)
            if head is None:
                return None, 0
            count = _sync.count_from(repo, head, self._counted)
            self._counted = (head, count)
            return head, count

    def parents(self, sha: str) -> list[str]:
        """The parents of commit `sha` (full shas); [] for a root or an unknown commit."""
        with self._lock, _translated("reading a commit"):
            found = _sync.commit_of(self._open_repo(), sha)
            return [parent.decode() for parent in found.parents] if found is not None else []

    def pack_since(self, have: str | None) -> tuple[str | None, bytes]:
        """The head and a git pack of what a copy holding `have` lacks to reach it
        (docs/design.md#replication-between-nodes)."""
        with self._lock, _translated("packing for a replica"):
            return _sync.pack_since(self._open_repo(), have)

    def receive(
        self, old: str | None, new: str, data: bytes, recovery: str | None = None
    ) -> _sync.Applied:
        """Fast-forward from `old` to `new` with the pack `data`: objects, ref, files and
        index; with `recovery`, a head that `new` does not follow is kept on that branch
        instead of refused. ReplicationRefusedError names why a pack is refused (and this
        copy's head)."""
        with self._lock, _translated("receiving from the primary"):
            self._index.refresh()
            applied = _sync.receive(
                self._open_repo(),
                self._index,
                self._root,
                old=old,
                new=new,
                data=data,
                recovery=recovery,
            )
            self._received += 1
        if self._received % PACK_LIMIT == 0:
            self._merger.request()  # each receive adds a pack: merge the small ones
        return applied

    def match_head(self, files: Iterable[tuple[str, int, int]]) -> list[str]:
        """Bring the working tree back to HEAD, as a replica must hold it: finish a receive
        a crash interrupted, then write back every tracked file that differs from HEAD
        (`files` as for `commit_uncommitted`). Never commits; the paths written."""
        with self._lock, _translated("matching HEAD"):
            repo = self._open_repo()
            self._index.refresh()
            written = _sync.finish(repo, self._index, self._root)
            changed = unmatched(self._index, self._root, files)
            written += _sync.restore(repo, self._index, self._root, changed)
        return written

    def _open_repo(self) -> Repo:
        if self._closed:
            raise errors.VersioningOffError(self._vault, "the repository was closed")
        return self._repo

    def _commit_locked(self, body: bytes, wanted: list[str], who: bytes, by: bytes) -> str | None:
        repo = self._open_repo()
        self._index.refresh()
        head = repo.refs.follow(_HEAD)[1]
        head_tree = self._tree_of(head) if head is not None else None
        if head is None and ".gitignore" not in wanted:
            wanted.append(".gitignore")
        ignores = functools.cache(lambda: IgnoreFilterManager.from_repo(repo))
        # A commit of many files (a vault's first import) writes packs, not a loose file each.
        into = PackWriter(repo.object_store) if len(wanted) >= PACK_DIRECT else repo.object_store
        staged = (c for rel in wanted for c in self._stage(head_tree, rel, ignores, into))
        changes = {c[0]: c for c in staged}
        tree = head_tree
        if changes:
            tree = self._trees.update(head_tree, [*changes.values()], top=True, into=into)
        if tree is None or tree == head_tree:
            self._index_changed()
            return None
        commit = _new_commit(tree, head, body, who, by)
        into.add_object(commit)
        if isinstance(into, PackWriter):
            into.flush()
        reflog = b"commit: " + body.split(b"\n", 1)[0]
        if not repo.refs.set_if_equals(_HEAD, head or _ZERO, commit.id, message=reflog):
            raise errors.StorageError(".git", "HEAD moved during the commit; retry the write")
        self._commits += 1
        if self._commits % PACK_EVERY == 0:
            self._packer.request()
        self._index_changed()
        return commit.id.decode()

    def _index_changed(self) -> None:
        self._index_tries = 0
        if len(self._index) <= INDEX_INLINE and self._index.flush():
            return
        if self._index.dirty:
            # Writing 100,000 entries hashes 10 MB: off the write path, once commits pause;
            # a small one there too when git held its lock (a `git status` in the vault).
            self._syncer.request()

    def _write_index(self) -> None:
        try:
            written = self._index.flush()
        except OSError as exc:
            log.warning("git_index_write_failed", vault=self._vault, error=_describe(exc))
            return
        # git held its lock (it takes it to refresh the file on `git status`): tried again a
        # quiet second later, else `git status` would list every note committed since as
        # changed until the next commit.
        self._index_tries = 0 if written else self._index_tries + 1
        if not written and self._index_tries < INDEX_RETRIES:
            self._syncer.request()

    def _nameable(self, rel: str) -> bool:
        if paths.valid_name(rel):
            return True
        self._skip(rel, "bad_name")
        return False

    def _skip(self, rel: str, reason: str) -> None:
        log.warning("git_path_skipped", vault=self._vault, path=paths.shown(rel), reason=reason)

    def _stage(
        self,
        head_tree: ObjectID | None,
        rel: str,
        ignores: Callable[[], IgnoreFilterManager],
        into: Any,
    ) -> list[Change]:
        key, full = rel.encode(), self._root / rel
        old = self._lookup(head_tree, key)
        if "/" in rel and self._behind_link(full, rel):
            self._skip(rel, "symlink_parent")  # git refuses a path beyond a symbolic link too
            return []
        try:
            st = full.lstat()
        except (FileNotFoundError, NotADirectoryError):
            self._index.remove_tree(key)
            return [(key, None, None)] if old is not None else []
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
            return []
        if old is None and ignores().is_ignored(rel):
            return []
        try:
            blob = git_index.blob_from_path_and_stat(bytes(full), st)
        except OSError:
            self._skip(rel, "unreadable")
            return []
        mode = git_index.cleanup_mode(st.st_mode)
        self._index.set(key, git_index.index_entry_from_stat(st, blob.id, mode))
        if old == (mode, blob.id):
            return []
        into.add_object(blob)
        return [*self._displaced(head_tree, key, old), (key, mode, blob.id)]

    def _behind_link(self, full: Path, rel: str) -> bool:
        """True when a folder on the way to `rel` is a symbolic link (or cannot be resolved)."""
        try:
            folder = full.parent.resolve()
            root = self._root.resolve()
        except (OSError, RuntimeError):
            return True
        return folder != root.joinpath(*rel.split("/")[:-1])

    def _displaced(self, head_tree: ObjectID | None, key: bytes, old: Entry) -> list[Change]:
        """A tracked file in the way of a new path's directory is removed, as git does."""
        if old is not None:
            return []
        parts = key.split(b"/")
        for depth in range(1, len(parts)):
            prefix = b"/".join(parts[:depth])
            entry = self._lookup(head_tree, prefix)
            if entry is None:
                break
            if not stat.S_ISDIR(entry[0]):
                self._index.remove(prefix)
                return [(prefix, None, None)]
        return []

    def _lookup(self, tree: ObjectID | None, key: bytes) -> Entry:
        if tree is None:
            return None
        with contextlib.suppress(*_MISSING):
            return self._trees.lookup(tree, key)
        return None

    def _tree_of(self, sha: ObjectID) -> ObjectID:
        commit = self._repo.object_store[sha]
        if not isinstance(commit, Commit):
            raise git_errors.NotCommitError(sha)
        return ObjectID(commit.tree)

    def _touching(self, path: str, limit: int) -> list[Commit]:
        key = _checked(path).encode()
        walker = self._repo.get_walker(
            include=[self._head(path)], paths=[key], max_entries=limit, simplify_history=True
        )
        return [entry.commit for entry in walker]

    def _followed(self, path: str, limit: int) -> list[tuple[Commit, str]]:
        """The commits touching `path` and, past a move, the path it had before, each with
        the note's path in that commit."""
        current = _checked(path).encode()
        walker = self._repo.get_walker(
            include=[self._head(path)],
            paths=[current],
            max_entries=limit,
            follow=True,
            rename_detector=RenameDetector(self._repo.object_store),
        )
        found = []
        for entry in walker:
            found.append((entry.commit, current.decode("utf-8", "replace")))
            for change in _flat(entry.changes()):
                if change.type == "rename" and change.new.path == current and change.old.path:
                    current = change.old.path
        return found

    def _path_then(self, path: str, sha: ObjectID) -> bytes | None:
        """The path the note now at `path` had in commit `sha`: that of `sha` if it touched
        the note, else of the newest followed commit no newer than it; None if unchanged."""
        target = self._repo.object_store[sha]
        if not isinstance(target, Commit):
            return None
        followed = self._followed(path, PREVIOUS_SEARCH)
        exact = [at for commit, at in followed if commit.id == sha]
        older = [at for commit, at in followed if commit.commit_time <= target.commit_time]
        then = next(iter(exact or older), None)
        return then.encode() if then is not None and then != _checked(path) else None

    def _head(self, path: str) -> ObjectID:
        head = self._open_repo().refs.follow(_HEAD)[1]
        if head is None:
            raise errors.NotFoundError(
                f"no history yet for {path}; nothing has been committed in this vault yet"
            )
        return head

    def _push(self) -> None:
        with self._pushing:
            self._push_now()

    @contextlib.contextmanager
    def _deleting(self) -> Iterator[None]:
        """What deleting objects takes: no push running, and the repository lock."""
        with self._pushing, self._lock:
            yield

    @contextlib.contextmanager
    def _dropping_packs(self) -> Iterator[None]:
        """What deleting packs takes (`_deleting`); this store forgets them before the lock
        is let go, so no receive or read in between lists a pack that is gone."""
        with self._deleting():
            yield
            self._repo.object_store.packs  # noqa: B018 — forgets the deleted packs, opens the new

    def _push_now(self) -> None:
        assert self._remote is not None
        try:
            pool = None
            if self._remote.startswith(("http://", "https://")):
                pool = default_urllib3_manager(None, base_url=self._remote, timeout=PUSH_TIMEOUT)
            with Repo(str(self._root)) as repo:
                branch = repo.refs.follow(_HEAD)[0][-1]
            result = porcelain.push(
                str(self._root),
                self._remote,
                [branch],
                outstream=io.BytesIO(),
                errstream=io.BytesIO(),
                username="secondbrain" if self._token else None,
                password=self._token or None,
                pool_manager=pool,
            )
            refused = [ref.decode() for ref, why in (result.ref_status or {}).items() if why]
            if refused:
                log.warning("git_push_failed", vault=self._vault, error=f"refused: {refused}")
        # A background job has nobody to raise to: the failure is logged, and the next
        # commit pushes again.
        except Exception as exc:  # noqa: BLE001
            log.warning("git_push_failed", vault=self._vault, error=_describe(exc))

    def _pack(self) -> None:
        try:
            with Repo(str(self._root)) as repo:
                store = repo.object_store
                loose = list(_loose_ids(Path(store.path)))
                if len(loose) < PACK_EVERY:
                    return
                # The pack is written without the lock; deleting the loose copies, which a
                # reader may be about to open, takes it, in batches so commits go on.
                store.add_objects([(store[sha], None) for sha in loose])
                for start in range(0, len(loose), 256):
                    with self._deleting():
                        for sha in loose[start : start + 256]:
                            store.delete_loose_object(sha)
                self._merge_small(store)
            log.info("git_packed", vault=self._vault, objects=len(loose))
        except Exception as exc:  # noqa: BLE001 - see _push
            log.warning("git_pack_failed", vault=self._vault, error=_describe(exc))

    def _merge_received(self) -> None:
        try:
            with Repo(str(self._root)) as repo:
                self._merge_small(repo.object_store)
        except Exception as exc:  # noqa: BLE001 - see _push
            log.warning("git_pack_failed", vault=self._vault, error=_describe(exc))

    def _merge_small(self, store: Any) -> None:
        """Past `PACK_LIMIT` packs, merge the small ones: written without the lock, which
        is held only to delete them, so the work and the wait stay bounded (large packs,
        such as an import's, are never rewritten)."""
        if len(store.packs) <= PACK_LIMIT:
            return
        bases = small_packs(Path(store.pack_dir))
        if len(bases) < 2:
            return
        merged = merge(store, bases, self._dropping_packs())
        log.info("git_packs_merged", vault=self._vault, packs=len(bases), objects=merged)


class _Worker:
    """Runs `job` on a daemon thread; requests made while it runs fold into one more run."""

    def __init__(self, name: str, job: Callable[[], None]) -> None:
        self._name, self._job = name, job
        self._lock = threading.Lock()
        self._wanted = False
        self._thread: threading.Thread | None = None

    def request(self) -> None:
        with self._lock:
            self._wanted = True
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()

    def join(self, timeout: float) -> None:
        thread = self._thread
        if thread is not None:
            thread.join(max(timeout, 0.0))

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._wanted:
                    self._thread = None
                    return
                self._wanted = False
            self._job()


class _Quiet:
    """Runs `job` on a daemon thread once requests pause for `quiet` seconds, and at the
    latest `lag` seconds after the first request it has not yet served."""

    def __init__(self, name: str, job: Callable[[], None], quiet: float, lag: float) -> None:
        self._name, self._job, self._quiet, self._lag = name, job, quiet, lag
        self._cond = threading.Condition()
        self._first: float | None = None
        self._last = 0.0
        self._thread: threading.Thread | None = None

    def request(self) -> None:
        with self._cond:
            self._last = time.monotonic()
            if self._first is None:
                self._first = self._last
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()

    def cancel(self, timeout: float) -> None:
        """Drop what is requested and wait for a running job (the caller does it instead)."""
        with self._cond:
            self._first = None
            self._cond.notify()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _run(self) -> None:
        while True:
            with self._cond:
                if self._first is None:
                    self._thread = None
                    return
                wait = min(self._last + self._quiet, self._first + self._lag) - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                self._first = None
            self._job()


def _open_or_init(root: Path, vault: str) -> Repo:
    fresh = not (root / ".git").exists() and not (root / ".git").is_symlink()
    repo = Repo.init(str(root), default_branch=b"main") if fresh else Repo(str(root))
    with _closing_on_error(repo):
        if not repo.get_config().has_section((b"core",)) or _unset(repo, b"looseCompression"):
            # git's own default for loose objects: fast zlib; packing compresses them well later.
            repo.object_store.loose_compression_level = 1
        if fresh:
            _ensure_gitignore(root / ".gitignore")
        head = repo.refs.follow(_HEAD)[1]
        valid = head is None or re.fullmatch(rb"[0-9a-f]{40}", head)
        if not valid or (head is not None and head not in repo.object_store):
            raise errors.VersioningOffError(vault, "HEAD does not name a commit")
    return repo


def _unset(repo: Repo, name: bytes) -> bool:
    try:
        repo.get_config().get((b"core",), name)
    except KeyError:
        return True
    return False


@contextlib.contextmanager
def _closing_on_error(repo: Repo) -> Iterator[None]:
    try:
        yield
    except BaseException:
        repo.close()
        raise


def _ensure_gitignore(path: Path) -> None:
    existing = path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
    present = {line.strip() for line in existing.splitlines()}
    missing = [line for line in GITIGNORE_LINES if line not in present]
    if missing:
        lead = "\n" if existing and not existing.endswith("\n") else ""
        with path.open("a", encoding="utf-8") as out:
            out.write(lead + "\n".join(missing) + "\n")


def _describe(exc: BaseException) -> str:
    """A reason without host paths: OS errors by their strerror, others by their type."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return type(exc).__name__


@contextlib.contextmanager
def _translated(what: str) -> Iterator[None]:
    try:
        yield
    except _GIT_ERRORS as exc:
        raise errors.StorageError(".git", f"{what} failed ({_describe(exc)})") from exc


def _checked(path: str) -> str:
    parts = path.split("/")
    if not path or "\0" in path or any(part in ("", ".", "..") for part in parts):
        raise errors.InvalidPathError(path, "use a vault-relative path with '/' separators")
    if any(part.lower() == ".git" for part in parts):
        raise errors.InvalidPathError(path, "the .git directory is not part of the vault")
    return path


def _message(message: str, grant_id: str | None) -> bytes:
    text = re.sub(r"[\r\n]+", " ", message).strip()[:MESSAGE_LIMIT] + "\n"
    if grant_id:
        text += "\nSecondbrain-Grant: " + re.sub(r"\s+", " ", grant_id).strip() + "\n"
    return text.encode("utf-8")


def _person(who: Identity) -> bytes:
    name, email = (re.sub(r"[<>\r\n]", "", part).strip() for part in (who.name, who.email))
    return f"{name} <{email}>".encode()


def _new_commit(
    tree: ObjectID, head: ObjectID | None, body: bytes, who: bytes, by: bytes
) -> Commit:
    commit = Commit()
    commit.tree, commit.parents, commit.message = tree, [head] if head else [], body
    commit.author, commit.committer = who, by
    commit.author_time = commit.commit_time = int(time.time())
    commit.author_timezone = commit.commit_timezone = 0
    return commit


def _revision(commit: Commit, path: str = "") -> Revision:
    when = datetime.fromtimestamp(commit.author_time, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    author = commit.author.decode("utf-8", "replace").partition("<")[0].strip()
    message = commit.message.decode("utf-8", "replace").split("\n", 1)[0]
    return Revision(commit.id.decode()[:12], when, author, message, path)


def _flat(changes: Any) -> list[Any]:
    """A walk entry's changes: a list of TreeChange, or (for a merge) a list of lists."""
    out: list[Any] = []
    for change in changes:
        out.extend(change if isinstance(change, list) else [change])
    return out


def _unified(path: str, old: bytes, new: bytes, old_label: str, new_label: str) -> str:
    before, after = (data.decode("utf-8", "replace") for data in (old, new))
    return diff.between(before, after, f"a/{path}@{old_label}", f"b/{path}@{new_label}")


def _loose_ids(objects: Path) -> Iterator[ObjectID]:
    for folder in objects.iterdir():
        if re.fullmatch(r"[0-9a-f]{2}", folder.name) and folder.is_dir():
            for file in folder.iterdir():
                if re.fullmatch(r"[0-9a-f]{38}", file.name):
                    yield ObjectID((folder.name + file.name).encode())


def _stale(lock: Path, age: float) -> bool:
    try:
        wait = lock.lstat().st_mtime + age - time.time()
    except OSError:
        return False
    if wait > 0:
        time.sleep(wait)
        return lock.exists()  # a live git removes its lock when it is done
    return True
