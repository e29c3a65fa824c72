"""Commits moved between two copies of a vault as git packs, and a working tree kept at HEAD.

The primary packs what a replica lacks; the replica takes a pack only as a fast-forward
of the head it holds, moves its ref, then writes the changed files and their index
entries. A marker written before the ref moves and removed after the files are written
lets a replica killed in between finish the job when it opens
(docs/design.md#replication-between-nodes).
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

from dulwich import errors as git_errors
from dulwich import index as git_index
from dulwich.diff_tree import tree_changes
from dulwich.object_store import MissingObjectFinder, tree_lookup_path
from dulwich.objects import Blob, Commit, ObjectID
from dulwich.pack import write_pack_from_container
from dulwich.refs import Ref
from dulwich.repo import Repo

from vault_core.errors import ReplicationRefusedError
from vault_core.git._index import IndexFile

HEAD = Ref(b"HEAD")
MARKER = "replication-applying"
"""In `.secondbrain/`: `old new` while a pack's files are being written."""
_HIDDEN = (b".git", b".secondbrain")
_BAD_PACK = (
    git_errors.ChecksumMismatch,
    git_errors.ApplyDeltaError,
    git_errors.ObjectFormatException,
    AssertionError,
    ValueError,
    KeyError,
    IndexError,
    zlib.error,
    struct.error,
    EOFError,
)


@dataclass(frozen=True)
class Applied:
    """What a received pack changed: the new head and the vault-relative paths written
    or removed (for the search index)."""

    head: str
    paths: list[str]
    recovery: str | None = None
    """The branch that now holds commits only this copy had, if the pack replaced them."""


def head_of(repo: Repo) -> str | None:
    sha = repo.refs.follow(HEAD)[1]
    return sha.decode() if sha is not None else None


def pack_since(repo: Repo, have: str | None) -> tuple[str | None, bytes]:
    """The head and a pack of every object it reaches that `have` (a commit the other copy
    holds, None for nothing) does not. An unknown `have` sends everything."""
    head = repo.refs.follow(HEAD)[1]
    if head is None:
        return None, b""
    store = repo.object_store
    haves = [ObjectID(have.encode())] if have and _object(repo, have) is not None else []
    wanted = list(MissingObjectFinder(store, haves=haves, wants=[head]))
    out = io.BytesIO()
    write_pack_from_container(out.write, store, wanted, store.object_format)
    return head.decode(), out.getvalue()


def receive(
    repo: Repo,
    index: IndexFile,
    root: Path,
    *,
    old: str | None,
    new: str,
    data: bytes,
    recovery: str | None = None,
) -> Applied:
    """Take `data` (a pack) moving HEAD from `old` to `new`, as a fast-forward only —
    unless `recovery` names a branch: then a head `new` does not descend from is kept
    on that branch first (commits only this copy holds are never dropped).

    ReplicationRefusedError: `old` is not this copy's head (its head is in the error), the
    pack is not a pack or lacks `new`, `new` does not descend from `old` (and no recovery
    branch is given), or a path in it leads outside the vault's notes."""
    current = head_of(repo)
    if current != old:
        raise ReplicationRefusedError("head_mismatch", "send what this copy lacks", current)
    if new == current:
        return Applied(new, [])
    _add_pack(repo, data)
    target = _object(repo, new) if _is_sha(new) else None
    if not isinstance(target, Commit):
        raise ReplicationRefusedError("bad_pack", "the new head is not a commit in the pack")
    kept = None
    if old is not None and not _descends(repo, target, ObjectID(old.encode())):
        if recovery is None:
            raise ReplicationRefusedError("not_fast_forward", "the new head does not follow ours")
        kept = Ref(f"refs/heads/{recovery}".encode())
    old_tree = _tree(repo, old)
    changed = _changes(repo, old_tree, ObjectID(target.tree))
    marker = root / ".secondbrain" / MARKER
    marker.parent.mkdir(exist_ok=True)
    marker.write_text(f"{old or '-'} {new}\n", encoding="ascii")
    if kept is not None and old is not None:
        kept = _keep(repo, kept, ObjectID(old.encode()))
    repo.refs.set_if_equals(
        _branch(repo), ObjectID(old.encode()) if old else None, ObjectID(new.encode())
    )
    _write_tree(repo, index, root, changed)
    marker.unlink()
    paths = [path.decode("utf-8", "surrogateescape") for path, _ in changed]
    return Applied(new, paths, kept.decode().removeprefix("refs/heads/") if kept else None)


def _keep(repo: Repo, branch: Ref, head: ObjectID) -> Ref:
    """Point a new branch at `head`: `branch`, or `branch-2`, `-3` … when it exists."""
    name = branch
    for suffix in range(2, 100):
        if repo.refs.set_if_equals(name, None, head):
            return name
        name = Ref(branch + f"-{suffix}".encode())
    raise ReplicationRefusedError("bad_path", "no free name for a recovery branch")


def finish(repo: Repo, index: IndexFile, root: Path) -> list[str]:
    """Complete a receive interrupted after its ref moved: write the files it changed. The
    paths written; [] when no receive was interrupted."""
    marker = root / ".secondbrain" / MARKER
    try:
        old, _new = marker.read_text(encoding="ascii").split()
    except (OSError, ValueError):
        return []
    head = head_of(repo)
    if head is None:
        marker.unlink()
        return []
    old_tree, new_tree = _tree(repo, None if old == "-" else old), _tree(repo, head)
    assert new_tree is not None
    changed = _changes(repo, old_tree, new_tree)
    _write_tree(repo, index, root, changed)
    marker.unlink()
    return [path.decode("utf-8", "surrogateescape") for path, _ in changed]


def restore(repo: Repo, index: IndexFile, root: Path, paths: list[str]) -> list[str]:
    """Write back those of `paths` whose file differs from HEAD's; a path HEAD does not
    hold is left alone (a replica never deletes what it cannot restore). The paths written."""
    head = repo.refs.follow(HEAD)[1]
    if head is None:
        return []
    tree = _tree(repo, head.decode())
    assert tree is not None
    changed: Changes = []
    for rel in paths:
        key = rel.encode("utf-8", "surrogateescape")
        try:
            mode, sha = tree_lookup_path(repo.object_store.__getitem__, tree, key)
        except (KeyError, NotADirectoryError):
            continue
        if not _same(root / rel, mode, sha):
            changed.append((key, (mode, ObjectID(sha))))
    _write_tree(repo, index, root, changed)
    return [path.decode("utf-8", "surrogateescape") for path, _ in changed]


def _same(full: Path, mode: int, sha: bytes) -> bool:
    try:
        st = full.lstat()
        blob = git_index.blob_from_path_and_stat(os.fsencode(full), st)
    except OSError:
        return False
    return blob.id == sha and git_index.cleanup_mode(st.st_mode) == mode


def _add_pack(repo: Repo, data: bytes) -> None:
    if not data:
        return
    store = repo.object_store
    stream = io.BytesIO(data)
    try:
        store.add_thin_pack(stream.read, stream.read)
    except _BAD_PACK as exc:
        raise ReplicationRefusedError("bad_pack", "the body is not a valid git pack") from exc
    finally:
        for left in Path(store.path).glob("tmp_pack_*"):
            with contextlib.suppress(OSError):
                left.unlink()


def count_from(repo: Repo, head: str, known: tuple[str, int] | None) -> int:
    """The commits on `head`'s first-parent line (a vault's history is linear: one writer,
    fast-forwards only), counting on from `known` (a commit on that line and its count)
    when the walk reaches it, from the root otherwise."""
    steps, sha = 0, head
    while True:
        if known is not None and sha == known[0]:
            return steps + known[1]
        found = commit_of(repo, sha)
        if found is None:
            break
        steps += 1
        if not found.parents:
            break
        sha = found.parents[0].decode()
    return steps


def commit_of(repo: Repo, sha: str) -> Commit | None:
    found = _object(repo, sha) if _is_sha(sha) else None
    return found if isinstance(found, Commit) else None


def _object(repo: Repo, sha: str) -> object:
    try:
        return repo.object_store[ObjectID(sha.encode())]
    except KeyError:
        return None


def _is_sha(text: str) -> bool:
    return len(text) == 40 and all(c in "0123456789abcdef" for c in text)


def _descends(repo: Repo, commit: Commit, ancestor: ObjectID) -> bool:
    seen: set[bytes] = set()
    todo = [commit]
    while todo:
        current = todo.pop()
        for parent in current.parents:
            if parent == ancestor:
                return True
            if parent not in seen:
                seen.add(parent)
                found = _object(repo, parent.decode())
                if isinstance(found, Commit):
                    todo.append(found)
    return False


def _tree(repo: Repo, sha: str | None) -> ObjectID | None:
    if sha is None:
        return None
    commit = repo.object_store[ObjectID(sha.encode())]
    assert isinstance(commit, Commit)
    return ObjectID(commit.tree)


def _branch(repo: Repo) -> Ref:
    return repo.refs.follow(HEAD)[0][-1]


def _changes(repo: Repo, old_tree: ObjectID | None, new_tree: ObjectID) -> Changes:
    """Every path whose file differs, with its new (mode, blob) or None when it goes."""
    out: dict[bytes, tuple[int, ObjectID] | None] = {}
    for change in tree_changes(repo.object_store, old_tree, new_tree):
        if change.old is not None and change.old.path is not None:
            out.setdefault(change.old.path, None)
        if change.new is not None and change.new.path is not None:
            assert change.new.mode is not None
            assert change.new.sha is not None
            out[change.new.path] = (change.new.mode, change.new.sha)
    for path in out:
        parts = path.split(b"/")
        if not git_index.validate_path(path) or any(p.lower() in _HIDDEN for p in parts):
            raise ReplicationRefusedError("bad_path", "a path in the pack leaves the notes")
    return sorted(out.items())


Changes = list[tuple[bytes, tuple[int, ObjectID] | None]]


def _write_tree(repo: Repo, index: IndexFile, root: Path, changed: Changes) -> None:
    for path, entry in changed:
        full = root / os.fsdecode(path)
        if entry is None:
            with contextlib.suppress(FileNotFoundError, IsADirectoryError):
                full.unlink()
            index.remove(path)
            _prune(full.parent, root)
            continue
        mode, sha = entry
        blob = repo.object_store[sha]
        assert isinstance(blob, Blob)
        _place(full, root, mode, blob.as_raw_string())
        st = full.lstat()
        index.set(path, git_index.index_entry_from_stat(st, sha, mode))
    index.flush()


def _place(full: Path, root: Path, mode: int, data: bytes) -> None:
    """Write one file atomically; a file in the way of its folder goes, as git does."""
    for parent in reversed(full.relative_to(root).parents[:-1]):
        folder = root / parent
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            folder.unlink()
    full.parent.mkdir(parents=True, exist_ok=True)
    temp = full.with_name(f".{full.name}.replica-tmp")
    with contextlib.suppress(FileNotFoundError):
        temp.unlink()
    if stat.S_ISLNK(mode):
        temp.symlink_to(os.fsdecode(data))
    else:
        with temp.open("wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        if mode & 0o111:
            temp.chmod(0o755)
    if full.is_dir() and not full.is_symlink():
        raise ReplicationRefusedError("bad_path", "a folder is in the way of a file")
    temp.replace(full)


def _prune(folder: Path, root: Path) -> None:
    while folder != root:
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent
