"""Per-vault git history (dulwich) whose cost per commit does not grow with the vault.

A commit stages only the paths a write touched; pushing and packing run on background
threads and never fail or delay a write. A path that cannot be committed (a name that is
not UTF-8, a file that cannot be read, a path through a linked folder) is left out with a
warning; the others are committed.
"""

from __future__ import annotations

import bisect
import collections
import contextlib
import difflib
import functools
import hashlib
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
from typing import Any, TypeAlias

import structlog
from dulwich import errors as git_errors
from dulwich import index as git_index
from dulwich import porcelain
from dulwich.client import default_urllib3_manager
from dulwich.diff_tree import RenameDetector
from dulwich.file import FileLocked, GitFile
from dulwich.ignore import IgnoreFilterManager
from dulwich.objects import (
    S_ISGITLINK,
    Commit,
    ObjectID,
    SubmoduleEncountered,
    Tree,
    hex_to_sha,
)
from dulwich.refs import Ref
from dulwich.repo import Repo

from vault_core import errors, paths

__all__ = ["GITIGNORE_LINES", "GitStore", "Identity", "Revision"]

log = structlog.get_logger(__name__)

GITIGNORE_LINES = (".secondbrain/", ".obsidian/workspace*.json", ".DS_Store")
MESSAGE_LIMIT = 140
PACK_EVERY = 200  # commits between background packs; fewer loose objects are left alone
PACK_LIMIT = 20  # more packs than this are consolidated into one
LOCK_AGE = 5.0  # seconds a git lock file may be held by a live git before it is stale
CLOSE_WAIT = 10.0  # seconds close() waits for a running push or pack
PREVIOUS_SEARCH = 100  # commits note_diff looks back for one that still had a deleted note
PUSH_TIMEOUT = 60.0  # seconds an HTTP push may stall before it fails
_HEAD = Ref(b"HEAD")
_ZERO = ObjectID(b"0" * 40)
_HEX = re.compile(r"[0-9a-f]{4,40}")
_MISSING = (KeyError, git_errors.WrongObjectException, SubmoduleEncountered)
_DULWICH = (git_errors.ChecksumMismatch, git_errors.FileFormatException, FileLocked)
_GIT_ERRORS = (OSError, ValueError, zlib.error, struct.error, *_MISSING, *_DULWICH)

_RECORDED = struct.Struct(">LL20xL")  # an index entry from byte 8: mtime (s, ns), …, size

_Change: TypeAlias = tuple[bytes, int | None, ObjectID | None]
_Entries: TypeAlias = dict[bytes, tuple[int, ObjectID]]
_Entry: TypeAlias = tuple[int, ObjectID] | None


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
        self._index = _IndexFile(repo.index_path())
        self._trees = _Trees(repo.object_store)
        self._commits = 0
        self._closed = False
        self._pusher = _Worker(f"git-push-{vault}", self._push)
        self._packer = _Worker(f"git-pack-{vault}", self._pack)

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
        if it was moved since (as note_history follows it)."""
        key = _checked(path).encode()
        sha = ObjectID(self.resolve(revision).encode())
        with self._lock, _translated("contents"):
            tree = self._tree_of(sha)
            entry = self._lookup(tree, key)
            if entry is None and (then := self._path_then(path, sha)) is not None:
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

    def close(self) -> None:
        """Wait (at most 10 s) for a running push or pack, then release the repository."""
        deadline = time.monotonic() + CLOSE_WAIT
        for worker in (self._pusher, self._packer):
            worker.join(deadline - time.monotonic())
        with self._lock:
            if not self._closed:
                self._closed = True
                self._repo.close()

    def clear_stale_locks(self, age: float = LOCK_AGE) -> list[str]:
        """Remove the lock files a process killed mid-write left in .git (of the index, HEAD,
        a branch), each of which would refuse every later commit; their names in .git.

        Only for a repository no other process of ours writes (the node holds its data
        directory): a lock younger than `age` seconds gets that long to go away first, as a
        person's git at work would let it."""
        control = Path(self._open_repo().controldir())
        locks = [control / "index.lock", control / "HEAD.lock", control / "packed-refs.lock"]
        removed = []
        with self._lock, _translated("clearing stale locks"):
            for lock in [*locks, *sorted((control / "refs" / "heads").rglob("*.lock"))]:
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
            changed = _unmatched(self._index, self._root, files)
        return self.commit(message, changed) if changed else None

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
        changes = {c[0]: c for rel in wanted for c in self._stage(head_tree, rel, ignores)}
        tree = head_tree
        if changes:
            tree = self._trees.update(head_tree, [*changes.values()], top=True)
        if tree is None or tree == head_tree:
            self._index.flush()
            return None
        commit = _new_commit(tree, head, body, who, by)
        repo.object_store.add_object(commit)
        reflog = b"commit: " + body.split(b"\n", 1)[0]
        if not repo.refs.set_if_equals(_HEAD, head or _ZERO, commit.id, message=reflog):
            raise errors.StorageError(".git", "HEAD moved during the commit; retry the write")
        self._commits += 1
        if self._commits % PACK_EVERY == 0:
            self._packer.request()
        self._index.flush()
        return commit.id.decode()

    def _nameable(self, rel: str) -> bool:
        if paths.valid_name(rel):
            return True
        self._skip(rel, "bad_name")
        return False

    def _skip(self, rel: str, reason: str) -> None:
        log.warning("git_path_skipped", vault=self._vault, path=paths.shown(rel), reason=reason)

    def _stage(
        self, head_tree: ObjectID | None, rel: str, ignores: Callable[[], IgnoreFilterManager]
    ) -> list[_Change]:
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
        self._repo.object_store.add_object(blob)
        return [*self._displaced(head_tree, key, old), (key, mode, blob.id)]

    def _behind_link(self, full: Path, rel: str) -> bool:
        """True when a folder on the way to `rel` is a symbolic link (or cannot be resolved)."""
        try:
            folder = full.parent.resolve()
            root = self._root.resolve()
        except (OSError, RuntimeError):
            return True
        return folder != root.joinpath(*rel.split("/")[:-1])

    def _displaced(self, head_tree: ObjectID | None, key: bytes, old: _Entry) -> list[_Change]:
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

    def _lookup(self, tree: ObjectID | None, key: bytes) -> _Entry:
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
                    with self._lock:
                        for sha in loose[start : start + 256]:
                            store.delete_loose_object(sha)
                with self._lock:
                    if len(store.packs) > PACK_LIMIT:
                        store.repack()
            log.info("git_packed", vault=self._vault, objects=len(loose))
        except Exception as exc:  # noqa: BLE001 - see _push
            log.warning("git_pack_failed", vault=self._vault, error=_describe(exc))


@dataclass(frozen=True)
class _Listing:
    """One tree: its entries, and their serialized form in git's order, ready to join."""

    entries: dict[bytes, tuple[int, ObjectID]]
    keys: list[bytes]  # sort keys: a folder sorts as if its name ended in "/"
    chunks: list[bytes]  # b"<mode> <name>\0<20-byte sha>", in the order of `keys`

    @classmethod
    def of(cls, entries: dict[bytes, tuple[int, ObjectID]]) -> _Listing:
        ordered = sorted(entries.items(), key=lambda item: _sort_key(item[0], item[1][0]))
        return cls(
            dict(entries),
            [_sort_key(name, mode) for name, (mode, _sha) in ordered],
            [_chunk(name, mode, sha) for name, (mode, sha) in ordered],
        )

    def changed(self, name: bytes, entry: tuple[int, ObjectID] | None) -> _Listing:
        """A copy with `name` set to `entry` (None removes it)."""
        entries, keys, chunks = dict(self.entries), list(self.keys), list(self.chunks)
        old = entries.pop(name, None)
        if old is not None:
            at = bisect.bisect_left(keys, _sort_key(name, old[0]))
            del keys[at], chunks[at]
        if entry is not None:
            entries[name] = entry
            key = _sort_key(name, entry[0])
            at = bisect.bisect_left(keys, key)
            keys.insert(at, key)
            chunks.insert(at, _chunk(name, *entry))
        return _Listing(entries, keys, chunks)


def _sort_key(name: bytes, mode: int) -> bytes:
    return name + b"/" if stat.S_ISDIR(mode) else name


def _chunk(name: bytes, mode: int, sha: ObjectID) -> bytes:
    return b"%o %s\0%s" % (mode, name, hex_to_sha(sha))


class _RawTree:
    """A tree object known only by its bytes: what `add_object` needs, without a parse."""

    type_name = b"tree"

    def __init__(self, raw: bytes) -> None:
        self._object = b"tree %d\0" % len(raw) + raw
        self.id = ObjectID(hashlib.sha1(self._object, usedforsecurity=False).hexdigest().encode())

    def get_id(self, *_format: object) -> ObjectID:
        return self.id

    def as_legacy_object(self, compression_level: int = -1) -> bytes:
        return zlib.compress(self._object, compression_level)


class _Trees:
    """Trees kept in memory in serialized pieces; a changed tree is one join, one hash.

    A commit rewrites the tree of every folder on the note's path. For a folder of
    thousands of notes, reading that tree back (from a pack, through deltas) and
    letting dulwich parse, edit and serialize it entry by entry cost more than the
    rest of the commit put together.
    """

    def __init__(self, store: Any, size: int = 64) -> None:
        self._store = store
        self._listings: collections.OrderedDict[ObjectID, _Listing] = collections.OrderedDict()
        self._size = size

    def listing(self, sha: ObjectID) -> _Listing:
        found = self._listings.get(sha)
        if found is None:
            tree = self._store[sha]
            if not isinstance(tree, Tree):
                raise git_errors.NotTreeError(sha)
            found = _Listing.of({name: (mode, hexsha) for name, mode, hexsha in tree.iteritems()})
            self._keep(sha, found)
        else:
            self._listings.move_to_end(sha)
        return found

    def lookup(self, tree: ObjectID, key: bytes) -> tuple[int, ObjectID] | None:
        """Mode and sha of `key` (a/b/c) under `tree`, or None."""
        *folders, name = key.split(b"/")
        for folder in folders:
            entry = self.listing(tree).entries.get(folder)
            if entry is None or not stat.S_ISDIR(entry[0]):
                return None
            tree = entry[1]
        return self.listing(tree).entries.get(name)

    def update(
        self, tree: ObjectID | None, changes: Sequence[_Change], *, top: bool = False
    ) -> ObjectID | None:
        """The sha of `tree` with `changes` applied; an emptied folder gives None."""
        listing = self.listing(tree) if tree is not None else _Listing({}, [], [])
        nested: dict[bytes, list[_Change]] = collections.defaultdict(list)
        for path, mode, sha in changes:
            folder, sep, rest = path.partition(b"/")
            if sep:
                nested[folder].append((rest, mode, sha))
            else:
                entry = None if sha is None else (mode or stat.S_IFREG | 0o644, sha)
                listing = listing.changed(folder, entry)
        for folder, inner in nested.items():
            old = listing.entries.get(folder)
            sub = self.update(old[1] if old and stat.S_ISDIR(old[0]) else None, inner)
            listing = listing.changed(folder, None if sub is None else (stat.S_IFDIR, sub))
        return self._write(listing) if listing.entries or top else None

    def _write(self, listing: _Listing) -> ObjectID:
        tree = _RawTree(b"".join(listing.chunks))
        self._store.add_object(tree)  # duck-typed: add_object asks only for the id and the bytes
        self._keep(tree.id, listing)
        return tree.id

    def _keep(self, sha: ObjectID, listing: _Listing) -> None:
        self._listings[sha] = listing
        self._listings.move_to_end(sha)
        while len(self._listings) > self._size:
            self._listings.popitem(last=False)


class _IndexFile:
    """git's index, held in memory as encoded entries in git's order: writing it for git's
    own tools is one join, not an encoding of every entry."""

    def __init__(self, path: str) -> None:
        self._path = Path(path)
        self._load()

    def _load(self) -> None:
        entries = dict(git_index.Index(self._path).items())
        # Conflict stages come only from a merge made with git; then git owns the index.
        self._ours = all(isinstance(e, git_index.IndexEntry) for e in entries.values())
        self._names = sorted(entries) if self._ours else []
        self._chunks = [_encode_entry(n, entries[n]) for n in self._names]
        extended = any(getattr(entry, "extended_flags", 0) for entry in entries.values())
        self._header = b"DIRC" + struct.pack(">L", 3 if extended else 2)
        self._stamp, self._dirty = _stamp(self._path), False

    def refresh(self) -> None:
        """Reload when another program (git itself) rewrote the index."""
        if _stamp(self._path) != self._stamp:
            self._load()

    def set(self, name: bytes, entry: git_index.IndexEntry) -> None:
        self.remove_tree(name)
        at = bisect.bisect_left(self._names, name)
        self._names.insert(at, name)
        self._chunks.insert(at, _encode_entry(name, entry))
        self._dirty = True

    def remove_tree(self, name: bytes) -> None:
        """Remove `name` and, if it was a directory, everything below it."""
        low = bisect.bisect_left(self._names, name + b"/")
        high = bisect.bisect_left(self._names, name + b"0")  # b"0" sorts right after b"/"
        del self._names[low:high], self._chunks[low:high]
        self._dirty = self._dirty or high > low
        self.remove(name)

    def remove(self, name: bytes) -> None:
        at = bisect.bisect_left(self._names, name)
        if at < len(self._names) and self._names[at] == name:
            del self._names[at], self._chunks[at]
            self._dirty = True

    def recorded(self) -> Iterator[tuple[bytes, int, int]]:
        """Name, size and mtime (ns) of every entry, read from its encoded form."""
        for name, chunk in zip(self._names, self._chunks, strict=True):
            seconds, nanoseconds, size = _RECORDED.unpack_from(chunk, 8)
            yield name, size, seconds * 1_000_000_000 + nanoseconds

    def written(self) -> int:
        """When the index file was last written (mtime, ns); 0 when there is none."""
        return self._stamp[0] if self._stamp is not None else 0

    def flush(self) -> None:
        if not (self._dirty and self._ours):
            return
        header = self._header + struct.pack(">L", len(self._names))
        body = b"".join(self._chunks)
        digest = hashlib.sha1(header, usedforsecurity=False)
        digest.update(body)
        try:
            # Not fsynced, like git's own index: it is a cache git can rebuild.
            with GitFile(self._path, "wb", fsync=False) as out:
                for part in (header, body, digest.digest()):  # no 5 MB copy for 50,000 notes
                    out.write(part)
        except FileLocked:
            log.warning("git_index_locked")  # git is busy; the next commit writes it again
            return
        self._stamp, self._dirty = _stamp(self._path), False


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
    def lines(data: bytes) -> list[str]:
        parts = data.decode("utf-8", "replace").split("\n")  # not splitlines: only \n ends one
        return [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])

    diff = difflib.unified_diff(
        lines(old), lines(new), f"a/{path}@{old_label}", f"b/{path}@{new_label}"
    )
    end = "\n\\ No newline at end of file\n"
    return "".join(line if line.endswith("\n") else line + end for line in diff)


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


def _loose_ids(objects: Path) -> Iterator[ObjectID]:
    for folder in objects.iterdir():
        if re.fullmatch(r"[0-9a-f]{2}", folder.name) and folder.is_dir():
            for file in folder.iterdir():
                if re.fullmatch(r"[0-9a-f]{38}", file.name):
                    yield ObjectID((folder.name + file.name).encode())


def _unmatched(index: _IndexFile, root: Path, files: Iterable[tuple[str, int, int]]) -> list[str]:
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


def _stale(lock: Path, age: float) -> bool:
    try:
        wait = lock.lstat().st_mtime + age - time.time()
    except OSError:
        return False
    if wait > 0:
        time.sleep(wait)
        return lock.exists()  # a live git removes its lock when it is done
    return True


def _gone(path: Path) -> bool:
    try:
        path.lstat()
    except (FileNotFoundError, NotADirectoryError):
        return True
    except OSError:
        return False
    return False
