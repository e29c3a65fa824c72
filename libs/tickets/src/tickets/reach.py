"""Path rules: the parts of a vault a member, grant, request or token may read and write.

A vault without rules is reached whole. A vault with rules is reached only under its
`read` folders (none named: the whole vault), minus its `exclude` folders, and written only
under its `write` folders (none named: wherever it may read; `[]`: nowhere), minus the same
exclusions. Rules are vault-relative folder paths, cleaned by the same lexical rules the
node applies to every path (docs/design.md#path-resolution: no `..`, no `.` segment, no
absolute path, no empty segment). Rules and paths are compared in one normal form, NFC
(`normal`): a folder stored decomposed on disk, as macOS writes names, is the folder its
rule names. Read and write folders match case-sensitively; excluded folders match
whatever the case (`folded`), since a case-insensitive file system (APFS, NTFS) opens
`Secret/` for a path spelled `SECRET/`. The token carries them signed, as the claim `paths`:

    {"paths": {"team": {"read": ["projects/acme"], "write": ["projects/acme/inbox"],
                        "exclude": ["projects/acme/hr"]}}}

Delegation only narrows: `within(inner, outer)` says why rules are not inside others.
"""

from __future__ import annotations

import functools
import posixpath
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tickets.errors import TicketsError

MAX_RULES = 32
"""Folders per list and vault: a token stays small, a check stays cheap."""
MAX_RULE_BYTES = 512
UNNAMEABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
"""What the node refuses in any path (vault_core.paths: control and direction characters),
so a rule holding one could never match a note."""


class RuleError(TicketsError):
    """A path rule that cannot be used, and why (shown to whoever wrote it)."""


def folder(raw: str) -> str:
    """A rule as the node compares it: `projects/acme` for ` ./projects\\acme/ `."""
    path = raw.strip() if isinstance(raw, str) else ""
    if not path:
        raise RuleError("a path rule is empty; name a folder, e.g. projects/acme")
    if "\x00" in path or any(0xD800 <= ord(ch) <= 0xDFFF for ch in path):
        raise RuleError(f"path rule {raw!r} is not valid Unicode text")
    if len(path.encode("utf-8")) > MAX_RULE_BYTES:
        raise RuleError(f"path rule {raw[:60]!r}… is longer than {MAX_RULE_BYTES} bytes")
    path = path.replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    if path.startswith("/") or re.match(r"[A-Za-z]:/", path):
        raise RuleError(f"path rule {raw!r} is absolute; give a folder inside the vault")
    path = path.rstrip("/")
    if not path or "" in path.split("/"):
        raise RuleError(f"path rule {raw!r} has an empty segment")
    cleaned = posixpath.normpath(path)
    if cleaned in (".", "..") or cleaned.startswith("../"):
        raise RuleError(f"path rule {raw!r} leaves the vault")
    for segment in cleaned.split("/"):
        if segment.startswith("."):
            raise RuleError(f"path rule {raw!r}: no folder of a rule may start with '.'")
        if UNNAMEABLE.search(segment):
            raise RuleError(
                f"path rule {raw!r} contains a control or text-direction character, "
                "which no note's path may hold"
            )
    return unicodedata.normalize("NFC", cleaned)


ROOT = ""
"""The folder that holds the whole vault: `read` of a vault with no read folders named."""


def normal(path: str) -> str:
    """`path` in the normal form rules are compared in: NFC (ASCII is already)."""
    return path if path.isascii() else unicodedata.normalize("NFC", path)


def folded(path: str) -> str:
    """`path` as exclusions compare it: NFC, case-folded (`ß` as `ss`, `É` as `é`)."""
    if path.isascii():
        return path.lower()
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", path).casefold())


def inside(path: str, prefix: str) -> bool:
    """`path` is folder `prefix` or lies under it (`projects/acme2` is not in `projects/acme`)."""
    return prefix in (ROOT, path) or path.startswith(prefix + "/")


def _folders(values: Iterable[str], what: str) -> tuple[str, ...]:
    found = tuple(dict.fromkeys(folder(value) for value in values))
    if len(found) > MAX_RULES:
        raise RuleError(f"{len(found)} {what} folders; at most {MAX_RULES} per vault")
    # A folder inside another of the same list adds nothing: keep the outer one.
    return tuple(sorted(f for f in found if not any(o != f and inside(f, o) for o in found)))


@dataclass(frozen=True)
class Reach:
    """Where in one vault the holder may read and write. `write` lies inside `read`."""

    read: tuple[str, ...]
    write: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    @classmethod
    def of(
        cls,
        read: Iterable[str] | None,
        write: Iterable[str] | None = None,
        exclude: Iterable[str] = (),
    ) -> Reach:
        """Clean and check rules; `read` None means the whole vault, `write` None "wherever
        it may read"."""
        readable = (ROOT,) if read is None else _folders(read, "read")
        if not readable:
            raise RuleError(
                "an empty list of read folders reaches nothing; leave read out for the whole "
                "vault, or name the folders"
            )
        writable = readable if write is None else _folders(write, "write")
        excluded = _folders(exclude, "excluded")
        for path in writable:
            if not any(inside(path, r) for r in readable):
                raise RuleError(
                    f"write folder {path!r} is not inside a read folder "
                    f"({', '.join(readable)}); write rules are never wider than read rules"
                )
        for path in excluded:
            if not any(inside(path, r) for r in readable):
                raise RuleError(
                    f"excluded folder {path!r} is not inside a read folder ({', '.join(readable)})"
                )
        for path in (*readable, *writable):
            if any(inside(path, e) for e in excluded):
                raise RuleError(f"folder {path!r} is excluded entirely; leave it out instead")
        return cls(readable, writable, excluded)

    def reads(self, rel: str) -> bool:
        """May the holder see the note, attachment or folder at vault-relative `rel`, in
        whatever normal form it is spelled?"""
        path = normal(rel)
        return any(inside(path, r) for r in self.read) and not self.excluded(path)

    def writes(self, rel: str) -> bool:
        path = normal(rel)
        return any(inside(path, w) for w in self.write) and not self.excluded(path)

    def excluded(self, rel: str) -> bool:
        """Is `rel` in an excluded folder, in any normal form and case?"""
        path = folded(rel)
        return any(inside(path, e) for e in self.folded_exclude)

    @functools.cached_property
    def folded_exclude(self) -> tuple[str, ...]:
        return tuple(folded(e) for e in self.exclude)

    def to_claim(self) -> dict[str, list[str]]:
        claim = {} if self.read == (ROOT,) else {"read": list(self.read)}
        if self.write != self.read:
            claim["write"] = list(self.write)
        if self.exclude:
            claim["exclude"] = list(self.exclude)
        return claim

    @classmethod
    def from_claim(cls, value: Any) -> Reach:
        if not isinstance(value, Mapping) or set(value) - {"read", "write", "exclude"}:
            raise RuleError("path rules must be an object with read, write and exclude lists")
        lists = {}
        for key in ("read", "write", "exclude"):
            item = value.get(key)
            if item is not None and (
                not isinstance(item, list) or not all(isinstance(v, str) for v in item)
            ):
                raise RuleError(f"path rules: {key} must be a list of folder paths")
            lists[key] = item
        return cls.of(lists["read"], lists["write"], lists["exclude"] or [])

    def describe(self, *, writes: bool = True) -> str:
        """For people: `read projects/acme, write projects/acme/inbox, except projects/acme/hr`;
        without `writes` (a scope that cannot write) the write folders are left out."""

        def folders(items: tuple[str, ...]) -> str:
            return "the whole vault" if items == (ROOT,) else ", ".join(items) or "nothing"

        text = f"read {folders(self.read)}"
        if writes:
            text += f"; write {folders(self.write)}"
        if self.exclude:
            text += "; except " + ", ".join(self.exclude)
        return text


@dataclass(frozen=True)
class Paths:
    """The path rules of every vault that has some; a vault not named is reached whole."""

    vaults: Mapping[str, Reach] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.vaults)

    def reach(self, vault: str) -> Reach | None:
        return self.vaults.get(vault)

    def to_claim(self) -> dict[str, dict[str, list[str]]]:
        return {name: reach.to_claim() for name, reach in sorted(self.vaults.items())}

    @classmethod
    def from_claim(cls, value: Any) -> Paths:
        if value is None:
            return cls()
        if not isinstance(value, Mapping) or not all(isinstance(k, str) and k for k in value):
            raise RuleError("paths must map vault names to path rules")
        return cls({name: Reach.from_claim(rules) for name, rules in value.items()})


NO_PATHS = Paths()
"""No rules anywhere: every vault the token names is reached whole."""


def within(inner: Reach | None, outer: Reach | None) -> str | None:
    """Why `inner` reaches further than `outer` (None when it does not). None is the whole
    vault: anything lies within it, and it lies within nothing but itself."""
    if outer is None:
        return None
    if inner is None:
        return f"the whole vault is wider than {outer.describe()}"
    for what, mine, theirs in (
        ("read", inner.read, outer.read),
        ("write", inner.write, outer.write),
    ):
        for path in mine:
            if not any(inside(path, p) for p in theirs):
                return f"{what} folder {path!r} is outside {outer.describe()}"
            for hole in outer.exclude:
                if inside(path, hole):
                    return f"{what} folder {path!r} is excluded by {outer.describe()}"
                if inside(hole, path) and not inner.excluded(hole):
                    return f"{what} folder {path!r} must exclude {hole!r}, as {outer.describe()}"
    return None
