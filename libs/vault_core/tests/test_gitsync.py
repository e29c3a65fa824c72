"""Commits moved between two real repositories as packs: what a replica takes and refuses."""

from __future__ import annotations

import io
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dulwich.objects import Blob, Commit, Tree

from vault_core import copies
from vault_core.errors import ReplicationRefusedError
from vault_core.git import store as gitstore
from vault_core.git.store import GitStore, Identity
from vault_core.library import OpenVault, Settings

NODE = Identity("node", "node@example.org")


@pytest.fixture(autouse=True)
def _isolated_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


def _open(tmp_path: Path, name: str) -> GitStore:
    root = tmp_path / name
    root.mkdir()
    return GitStore.open(root, name, committer=NODE)


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[GitStore, GitStore]]:
    primary, replica = _open(tmp_path, "primary"), _open(tmp_path, "replica")
    yield primary, replica
    primary.close()
    replica.close()


def _write(store: GitStore, rel: str, text: str) -> str:
    path = store._root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    sha = store.commit(f"write {rel}", [rel])
    assert sha is not None
    return sha


def _ship(primary: GitStore, replica: GitStore) -> list[str]:
    old = replica.head()
    new, pack = primary.pack_since(old)
    assert new is not None
    return replica.receive(old, new, pack).paths


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout


def _same_copy(primary: GitStore, replica: GitStore) -> None:
    assert replica.head() == primary.head()
    for store in (primary, replica):
        _git(store._root, "fsck", "--strict")
        assert _git(store._root, "status", "--porcelain") == ""
    files = {p: (primary._root / p).read_bytes() for p in _git(primary._root, "ls-files").split()}
    assert files == {p: (replica._root / p).read_bytes() for p in files}


def test_a_pack_brings_the_replica_to_the_primarys_head_files_and_index(
    pair: tuple[GitStore, GitStore],
) -> None:
    primary, replica = pair
    _write(primary, "a.md", "one\n")
    assert sorted(_ship(primary, replica)) == [".gitignore", "a.md"]
    _write(primary, "dir/b.md", "two\n")
    (primary._root / "a.md").unlink()
    primary.commit("delete a", ["a.md"])
    assert sorted(_ship(primary, replica)) == ["a.md", "dir/b.md"]
    assert not (replica._root / "a.md").exists()
    _same_copy(primary, replica)


def test_an_old_head_that_is_not_the_replicas_is_refused_with_its_head(
    pair: tuple[GitStore, GitStore],
) -> None:
    primary, replica = pair
    first = _write(primary, "a.md", "one\n")
    _ship(primary, replica)
    second = _write(primary, "a.md", "two\n")
    _pack_head, pack = primary.pack_since(None)
    with pytest.raises(ReplicationRefusedError) as refused:
        replica.receive(None, second, pack)
    assert (refused.value.reason, refused.value.head) == ("head_mismatch", first)
    assert replica.head() == first


def test_a_head_that_does_not_follow_the_replicas_is_refused(
    pair: tuple[GitStore, GitStore], tmp_path: Path
) -> None:
    primary, replica = pair
    _write(primary, "a.md", "one\n")
    _ship(primary, replica)
    other = _open(tmp_path, "other")
    try:
        forked = _write(other, "b.md", "elsewhere\n")
        _head, pack = other.pack_since(None)
        with pytest.raises(ReplicationRefusedError) as refused:
            replica.receive(replica.head(), forked, pack)
        assert refused.value.reason == "not_fast_forward"
    finally:
        other.close()
    _same_copy(primary, replica)


@pytest.mark.parametrize(
    "body", [b"garbage", b"PACK\x00\x00\x00\x02\x00\x00\x00\x05xx", b"\x00" * 4096]
)
def test_a_body_that_is_no_pack_is_refused_and_leaves_nothing(
    pair: tuple[GitStore, GitStore], body: bytes
) -> None:
    primary, replica = pair
    new = _write(primary, "a.md", "one\n")
    with pytest.raises(ReplicationRefusedError) as refused:
        replica.receive(None, new, body)
    assert refused.value.reason == "bad_pack"
    assert replica.head() is None
    assert not list((replica._root / ".git" / "objects").glob("tmp_pack_*"))


def test_a_pack_whose_tree_leads_into_git_is_refused(
    pair: tuple[GitStore, GitStore],
) -> None:
    primary, replica = pair
    _write(primary, "a.md", "one\n")
    _ship(primary, replica)
    repo = primary._repo
    blob = Blob.from_string(b"[core]\n\tfsmonitor = evil\n")
    inner = Tree()
    inner.add(b"config", 0o100644, blob.id)
    top = Tree()
    top.add(b".git", 0o040000, inner.id)
    commit = Commit()
    commit.tree, commit.parents, commit.message = top.id, [primary.head().encode()], b"x\n"  # type: ignore[union-attr]
    commit.author = commit.committer = b"x <x@x>"
    commit.author_time = commit.commit_time = 0
    commit.author_timezone = commit.commit_timezone = 0
    for obj in (blob, inner, top, commit):
        repo.object_store.add_object(obj)
    repo.refs[b"refs/heads/main"] = commit.id
    old = replica.head()
    _new, pack = primary.pack_since(old)
    with pytest.raises(ReplicationRefusedError) as refused:
        replica.receive(old, commit.id.decode(), pack)
    assert refused.value.reason == "bad_path"
    assert replica.head() == old
    assert "fsmonitor" not in (replica._root / ".git" / "config").read_text()


def test_a_replica_killed_after_its_ref_moved_writes_the_files_when_it_opens(
    pair: tuple[GitStore, GitStore], tmp_path: Path
) -> None:
    primary, replica = pair
    _write(primary, "a.md", "one\n")
    _ship(primary, replica)
    copies.save(replica._root, copies.CopyState("replica", 1, "n1"))
    old = replica.head()
    new = _write(primary, "a.md", "two\n")
    _head, pack = primary.pack_since(old)
    # What a kill between the ref update and the files leaves: the marker, the ref moved.
    (replica._root / ".secondbrain").mkdir(exist_ok=True)
    (replica._root / ".secondbrain" / "replication-applying").write_text(f"{old} {new}\n")
    replica._repo.object_store.add_thin_pack(io.BytesIO(pack).read, None)
    replica._repo.refs[b"refs/heads/main"] = new.encode()
    (replica._root / "b.md").write_text("a hand edit on the replica\n")
    replica.close()
    opened = OpenVault.open(replica._root, "replica", Settings(watch=False, committer=NODE))
    try:
        assert opened.git is not None
        assert opened.git.head() == new
        assert (replica._root / "a.md").read_text() == "two\n"
        assert not (replica._root / ".secondbrain" / "replication-applying").exists()
        assert [r.message for r in opened.git.history("a.md")] == ["write a.md", "write a.md"]
    finally:
        opened.close()
    _git(replica._root, "fsck", "--strict")
    assert _git(replica._root, "status", "--porcelain") == "?? b.md\n"


def test_a_replica_never_commits_a_hand_edit_and_puts_heads_text_back(
    pair: tuple[GitStore, GitStore],
) -> None:
    primary, replica = pair
    _write(primary, "a.md", "one\n")
    _ship(primary, replica)
    copies.save(replica._root, copies.CopyState("replica", 1, "n1"))
    head = replica.head()
    (replica._root / "a.md").write_text("edited by hand\n")
    replica.close()
    opened = OpenVault.open(replica._root, "replica", Settings(watch=False, committer=NODE))
    try:
        assert opened.git is not None
        assert opened.git.head() == head
    finally:
        opened.close()
    assert (replica._root / "a.md").read_text() == "one\n"


def test_with_a_recovery_branch_a_head_the_pack_does_not_follow_is_kept_not_dropped(
    pair: tuple[GitStore, GitStore], tmp_path: Path
) -> None:
    primary, replica = pair
    _write(primary, "a.md", "one\n")
    _ship(primary, replica)
    ours = _write(replica, "only-here.md", "written under the old epoch\n")
    new = _write(primary, "a.md", "two\n")
    _head, pack = primary.pack_since(None)
    applied = replica.receive(ours, new, pack, "recovery/1-x")
    assert applied.recovery == "recovery/1-x"
    assert replica.head() == new
    assert _git(replica._root, "rev-parse", "recovery/1-x").strip() == ours
    assert not (replica._root / "only-here.md").exists()
    _same_copy(primary, replica)
    again = _write(primary, "a.md", "three\n")
    other = replica.receive(new, again, primary.pack_since(new)[1], "recovery/1-x")
    assert other.recovery is None  # a fast-forward keeps nothing


def test_a_replica_merges_the_packs_its_receives_leave(
    pair: tuple[GitStore, GitStore],
) -> None:
    primary, replica = pair
    for i in range(gitstore.PACK_LIMIT * 2 + 1):
        _write(primary, "a.md", f"{i}\n")
        _ship(primary, replica)
    replica.close()  # waits for the merge a receive started
    packs = list((replica._root / ".git" / "objects" / "pack").glob("*.pack"))
    assert len(packs) <= gitstore.PACK_LIMIT + 1
    _git(replica._root, "fsck", "--strict")


def _rev_count(store: GitStore) -> int:
    return int(_git(store._root, "rev-list", "--count", "HEAD").strip())


def test_each_copy_counts_the_commits_of_its_head_as_git_does(
    pair: tuple[GitStore, GitStore],
) -> None:
    """The count a copy reports (its lag is the primary's count less its own) is git's
    own, counted on after each write, after a push and after a head replaced by one the
    old did not lead to."""
    primary, replica = pair
    assert primary.counted() == (None, 0)
    for n in range(3):
        _write(primary, "a.md", f"{n}\n")
    assert primary.counted() == (primary.head(), 3)
    _ship(primary, replica)
    assert replica.counted() == (primary.head(), 3)
    _write(primary, "b.md", "b\n")
    assert primary.counted()[1] == 4 == _rev_count(primary)
    assert replica.counted()[1] == 3, "the replica lags one commit"
    ours = _write(replica, "only-here.md", "under the old epoch\n")
    assert replica.counted()[1] == 4
    new = _write(primary, "b.md", "c\n")
    replica.receive(ours, new, primary.pack_since(None)[1], "recovery/1-x")
    assert replica.counted() == primary.counted() == (new, 5)
    assert _rev_count(replica) == 5


def test_a_push_right_after_a_merge_of_packs_finds_no_pack_it_deleted(
    pair: tuple[GitStore, GitStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The merge deletes the small packs; a receive that came between that and the store
    # forgetting them listed a pack that was gone (PackFileDisappeared, a 500 to the
    # primary, and the replica out of sync).
    primary, replica = pair
    monkeypatch.setattr(replica._merger, "request", lambda: None)
    for i in range(gitstore.PACK_LIMIT * 2 + 1):
        _write(primary, "a.md", f"{i}\n")
        _ship(primary, replica)
    gone: list[list[str]] = []
    real = gitstore.merge

    def merge_then_look(*args: Any) -> int:
        merged = real(*args)
        with replica._lock:  # what a receive waiting for the lock would find
            store = replica._repo.object_store
            cached = list(store._pack_cache)
            gone.append(
                [name for name in cached if not Path(store.pack_dir, f"{name}.pack").exists()]
            )
        return merged

    monkeypatch.setattr(gitstore, "merge", merge_then_look)
    replica._merge_received()
    assert gone == [[]]
    _write(primary, "a.md", "after the merge\n")
    assert _ship(primary, replica) == ["a.md"]
