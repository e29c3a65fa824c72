"""Merging packs: only the small ones, the lock held only to delete them, git still whole."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

import pytest
from dulwich.objects import Blob
from dulwich.repo import Repo

from vault_core.git._pack import PackWriter, merge, small_packs


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Repo]:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    with Repo.init(str(tmp_path / "r"), mkdir=True) as opened:
        yield opened


def raw(repo: Repo, blobs: list[Blob]) -> list[bytes]:
    """What a fresh look at the repository reads for `blobs`."""
    with Repo(repo.path) as fresh:
        return [fresh.object_store[b.id].as_raw_string() for b in blobs]


def packed(repo: Repo, texts: list[str]) -> list[Blob]:
    blobs = [Blob.from_string(text.encode()) for text in texts]
    writer = PackWriter(repo.object_store)
    for blob in blobs:
        writer.add_object(blob)
    writer.flush()
    return blobs


class Watching:
    """A real lock that notes which pack files exist each time it is taken."""

    def __init__(self, pack_dir: Path) -> None:
        self._lock = threading.RLock()
        self._dir = pack_dir
        self.seen: list[set[str]] = []

    def __enter__(self) -> None:
        self._lock.acquire()
        self.seen.append({p.name for p in self._dir.glob("*.pack")})

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._lock.release()


def test_merge_leaves_large_packs_alone_and_takes_the_lock_only_to_delete(repo: Repo) -> None:
    pack_dir = Path(repo.object_store.pack_dir)
    large = packed(repo, [f"large {i} " * 400 for i in range(50)])
    (large_pack,) = {p.name for p in pack_dir.glob("*.pack")}
    small = [packed(repo, [f"small {n}", "shared"]) for n in range(4)]
    bases = small_packs(pack_dir, limit=(pack_dir / large_pack).stat().st_size)
    assert len(bases) == 4
    lock = Watching(pack_dir)
    assert merge(repo.object_store, bases, lock) == 5
    after = {p.name for p in pack_dir.glob("*.pack")}
    assert large_pack in after
    assert len(after) == 2
    assert len(lock.seen) == 1
    assert lock.seen[0] > after  # the merged pack was written before the lock was taken
    every = [*large, *(b for pair in small for b in pair)]
    assert raw(repo, every) == [b.as_raw_string() for b in every]
    subprocess.run(["git", "fsck", "--strict"], cwd=repo.path, check=True, capture_output=True)


def test_merging_what_one_pack_already_holds_keeps_that_pack(repo: Repo) -> None:
    pack_dir = Path(repo.object_store.pack_dir)
    blobs = packed(repo, ["one", "two"])
    packed(repo, ["two"])
    merge(repo.object_store, small_packs(pack_dir), threading.Lock())
    assert len(list(pack_dir.glob("*.pack"))) == 1
    assert raw(repo, blobs) == [b"one", b"two"]
