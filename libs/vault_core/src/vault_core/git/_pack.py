"""Packs written in one pass: a large commit's objects, and small packs merged off the lock.

A commit of thousands of files (the first import of an existing vault) writes its objects
straight into packs of about `PACK_BYTES` instead of one loose file each, so no pack of
tens of thousands of objects has to run later beside the writes. Merging packs reads and
writes only the small ones, and takes the repository lock just to delete what it merged.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from dulwich.objects import ObjectID, hex_to_sha
from dulwich.pack import Pack, UnpackedObject, full_unpacked_object

PACK_BYTES = 32 * 1024 * 1024  # raw bytes a large commit puts in one pack
SMALL_PACK = 8 * 1024 * 1024  # packs under this size on disk are merged; larger ones stay
_SUFFIXES = (".pack", ".idx", ".rev", ".bitmap")


class PackWriter:
    """Stands in for the object store during one large commit: objects are held until about
    `limit` bytes, then written as one pack; reads go to the store. `flush` before the
    commit is referenced, so nothing points at an object not yet written."""

    def __init__(self, store: Any, limit: int | None = None) -> None:
        self._store = store
        self._limit = PACK_BYTES if limit is None else limit
        self._held: list[UnpackedObject] = []
        self._bytes = 0
        self._ids: set[ObjectID] = set()
        self.packs = 0

    def __getitem__(self, sha: ObjectID) -> Any:
        return self._store[sha]

    def add_object(self, obj: Any) -> None:
        sha = ObjectID(obj.id)
        if sha in self._ids:
            return
        self._ids.add(sha)
        raw = obj.as_raw_string()
        self._held.append(UnpackedObject(obj.type_num, decomp_chunks=[raw], sha=hex_to_sha(sha)))
        self._bytes += len(raw)
        if self._bytes >= self._limit:
            self.flush()

    def flush(self) -> None:
        if not self._held:
            return
        held, self._held, self._bytes = self._held, [], 0
        self._store.add_pack_data(len(held), iter(held))
        self.packs += 1


def small_packs(pack_dir: Path, limit: int | None = None) -> list[str]:
    """Base paths of the complete packs (a .pack with its .idx) smaller than `limit`."""
    limit = SMALL_PACK if limit is None else limit
    found = []
    for data in sorted(pack_dir.glob("*.pack")):
        with contextlib.suppress(OSError):
            if data.with_suffix(".idx").exists() and data.stat().st_size < limit:
                found.append(str(data.with_suffix("")))
    return found


def merge(store: Any, bases: list[str], lock: AbstractContextManager[object]) -> int:
    """Write the objects of the packs at `bases` as one pack, then, holding `lock`, delete
    them. Objects stream through one at a time; only their ids are held. Returns how many
    objects the new pack holds."""
    packs = [Pack(base, object_format=store.object_format) for base in bases]
    try:
        ids = {sha for pack in packs for sha in pack}
        merged = store.add_pack_data(len(ids), _records(packs))
    finally:
        for pack in packs:
            pack.close()
    # A pack is named for the objects it holds: merging what one pack already held gives
    # that pack's name, and deleting it would delete the merge.
    kept = f"pack-{merged.name().decode('ascii')}" if merged is not None else None
    with lock:
        for base in bases:
            if Path(base).name != kept:
                for suffix in _SUFFIXES:
                    Path(base + suffix).unlink(missing_ok=True)
    return len(ids)


def _records(packs: list[Pack]) -> Iterator[UnpackedObject]:
    seen: set[bytes] = set()
    for pack in packs:
        for obj in pack.iterobjects():
            if obj.id not in seen:
                seen.add(obj.id)
                yield full_unpacked_object(obj)
