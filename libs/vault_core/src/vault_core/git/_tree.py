"""The tree plumbing of `git.store`: trees read, changed and written as their git bytes,
so the cost of a commit's new trees does not grow with the folders' sizes (see `Trees`).
"""

from __future__ import annotations

import bisect
import collections
import hashlib
import stat
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from dulwich import errors as git_errors
from dulwich.objects import ObjectID, Tree, hex_to_sha

Change: TypeAlias = tuple[bytes, int | None, ObjectID | None]
"""A path (a/b/c) with its new mode and blob sha; a None sha removes the path."""
Entry: TypeAlias = tuple[int, ObjectID] | None


@dataclass(frozen=True)
class Listing:
    """One tree: its entries, and their serialized form in git's order, ready to join."""

    entries: dict[bytes, tuple[int, ObjectID]]
    keys: list[bytes]  # sort keys: a folder sorts as if its name ended in "/"
    chunks: list[bytes]  # b"<mode> <name>\0<20-byte sha>", in the order of `keys`

    @classmethod
    def of(cls, entries: dict[bytes, tuple[int, ObjectID]]) -> Listing:
        ordered = sorted(entries.items(), key=lambda item: _sort_key(item[0], item[1][0]))
        return cls(
            dict(entries),
            [_sort_key(name, mode) for name, (mode, _sha) in ordered],
            [_chunk(name, mode, sha) for name, (mode, sha) in ordered],
        )

    def changed(self, name: bytes, entry: tuple[int, ObjectID] | None) -> Listing:
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
        return Listing(entries, keys, chunks)


def _sort_key(name: bytes, mode: int) -> bytes:
    return name + b"/" if stat.S_ISDIR(mode) else name


def _chunk(name: bytes, mode: int, sha: ObjectID) -> bytes:
    return b"%o %s\0%s" % (mode, name, hex_to_sha(sha))


class RawTree:
    """A tree object known only by its bytes: what `add_object` needs, without a parse."""

    type_name = b"tree"
    type_num = 2

    def __init__(self, raw: bytes) -> None:
        self._raw = raw
        self._object = b"tree %d\0" % len(raw) + raw
        self.id = ObjectID(hashlib.sha1(self._object, usedforsecurity=False).hexdigest().encode())

    def get_id(self, *_format: object) -> ObjectID:
        return self.id

    def as_raw_string(self) -> bytes:
        return self._raw

    def as_legacy_object(self, compression_level: int = -1) -> bytes:
        return zlib.compress(self._object, compression_level)


class Trees:
    """Trees kept in memory in serialized pieces; a changed tree is one join, one hash.

    A commit rewrites the tree of every folder on the note's path. For a folder of
    thousands of notes, reading that tree back (from a pack, through deltas) and
    letting dulwich parse, edit and serialize it entry by entry cost more than the
    rest of the commit put together.
    """

    def __init__(self, store: Any, size: int = 64) -> None:
        self._store = store
        self._listings: collections.OrderedDict[ObjectID, Listing] = collections.OrderedDict()
        self._size = size

    def listing(self, sha: ObjectID) -> Listing:
        found = self._listings.get(sha)
        if found is None:
            tree = self._store[sha]
            if not isinstance(tree, Tree):
                raise git_errors.NotTreeError(sha)
            found = Listing.of({name: (mode, hexsha) for name, mode, hexsha in tree.iteritems()})
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
        self,
        tree: ObjectID | None,
        changes: Sequence[Change],
        *,
        top: bool = False,
        into: Any = None,
    ) -> ObjectID | None:
        """The sha of `tree` with `changes` applied; an emptied folder gives None. New trees
        go to `into` (anything with `add_object`), by default the store."""
        listing = self.listing(tree) if tree is not None else Listing({}, [], [])
        nested: dict[bytes, list[Change]] = collections.defaultdict(list)
        for path, mode, sha in changes:
            folder, sep, rest = path.partition(b"/")
            if sep:
                nested[folder].append((rest, mode, sha))
            else:
                entry = None if sha is None else (mode or stat.S_IFREG | 0o644, sha)
                listing = listing.changed(folder, entry)
        for folder, inner in nested.items():
            old = listing.entries.get(folder)
            sub = self.update(old[1] if old and stat.S_ISDIR(old[0]) else None, inner, into=into)
            listing = listing.changed(folder, None if sub is None else (stat.S_IFDIR, sub))
        return self._write(listing, into) if listing.entries or top else None

    def _write(self, listing: Listing, into: Any) -> ObjectID:
        tree = RawTree(b"".join(listing.chunks))
        (into or self._store).add_object(
            tree
        )  # duck-typed: add_object asks only for the id and the bytes
        self._keep(tree.id, listing)
        return tree.id

    def _keep(self, sha: ObjectID, listing: Listing) -> None:
        self._listings[sha] = listing
        self._listings.move_to_end(sha)
        while len(self._listings) > self._size:
            self._listings.popitem(last=False)
