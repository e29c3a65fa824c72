"""Turning a caller's path into a file inside the vault, or refusing it.

The invariant that keeps `.secondbrain/`, `.git/` and `.obsidian/` out of reach:
no segment of a resolved path starts with a dot (spec §9, step 6).
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from vault_core.errors import InvalidPathError, InvalidVaultNameError

VAULT_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
TEMP_PREFIX = ".sbtmp-"
MAX_PATH_BYTES = 1024


def check_vault_name(name: str) -> str:
    """Return `name` if it is a valid vault name, else raise InvalidVaultNameError."""
    if not VAULT_NAME.fullmatch(name):
        raise InvalidVaultNameError(name)
    return name


@dataclass(frozen=True)
class Resolved:
    """A path inside a vault: `rel` is vault-relative with '/', `abs` is on the host."""

    rel: str
    abs: Path


def clean(raw: str) -> str:
    """Steps 1-6 of spec §9: the lexical checks. Returns the cleaned relative path."""
    path = raw.strip()
    if not path:
        raise InvalidPathError(raw, "the path is empty")
    if "\x00" in path:
        raise InvalidPathError(raw, "the path contains a NUL byte")
    if len(path.encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES:
        raise InvalidPathError(raw[:80] + "…", f"the path is longer than {MAX_PATH_BYTES} bytes")
    path = path.replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    if path.startswith("/") or re.match(r"[A-Za-z]:/", path):
        raise InvalidPathError(raw, "absolute paths are not allowed; give a vault-relative path")
    # Empty segments are refused before cleaning would hide them: 'a//b' is a typo.
    if "" in path.rstrip("/").split("/"):
        raise InvalidPathError(raw, "the path has an empty segment")
    cleaned = posixpath.normpath(path)
    if cleaned in (".", "..") or cleaned.startswith("../"):
        raise InvalidPathError(raw, "the path leaves the vault")
    for segment in cleaned.split("/"):
        _check_segment(raw, segment)
    return cleaned


def _check_segment(raw: str, segment: str) -> None:
    if not segment:
        raise InvalidPathError(raw, "the path has an empty segment")
    if segment.startswith("."):
        raise InvalidPathError(
            raw, "no part of a path may start with '.' (hidden paths are off limits)"
        )
    if any(ord(ch) < 32 for ch in segment):
        raise InvalidPathError(raw, "the path contains a control character")


def resolve(root: Path, raw: str) -> Resolved:
    """Resolve `raw` against the vault `root` (spec §9, all eight steps)."""
    rel = clean(raw)
    target = root.joinpath(*rel.split("/"))
    _check_symlinks(root, target, raw)
    return Resolved(rel=rel, abs=target)


def resolve_note(root: Path, raw: str) -> Resolved:
    """Like `resolve`, completing a missing `.md` extension (compared case-insensitively)."""
    rel = clean(raw)
    if not rel.lower().endswith(".md"):
        rel += ".md"
    target = root.joinpath(*rel.split("/"))
    _check_symlinks(root, target, raw)
    return Resolved(rel=rel, abs=target)


def _check_symlinks(root: Path, target: Path, raw: str) -> None:
    # Step 8: resolve what exists of the path. A missing tail is fine (a new
    # note); an existing prefix that is a symlink pointing outside is not.
    try:
        real_root = root.resolve()
        real = target.resolve(strict=False)
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop on 3.11/3.12
        raise InvalidPathError(raw, "the path runs into a symbolic link loop") from exc
    if real != real_root and real_root not in real.parents:
        raise InvalidPathError(raw, "the path leads outside the vault through a symbolic link")


def is_hidden(rel: str) -> bool:
    """True when any segment of a vault-relative path starts with a dot."""
    return any(segment.startswith(".") for segment in rel.split("/"))


@dataclass(frozen=True)
class Entry:
    """One visible file found by `walk`."""

    rel: str
    abs: Path
    size: int
    mtime_ns: int


def walk(root: Path, prefix: str = "") -> Iterator[Entry]:
    """Every visible regular file under `root` (or under `prefix`), dot directories skipped.

    Symlinked directories are not followed and symlinked files that point
    outside the vault are skipped, so a walk never leaves the vault.
    """
    start = resolve(root, prefix).abs if prefix else root
    if not start.is_dir():
        return
    real_root = root.resolve()
    stack = [start]
    while stack:
        directory = stack.pop()
        try:
            with os.scandir(directory) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        subdirs = []
        for entry in entries:
            if entry.name.startswith("."):
                continue
            entry_path = Path(entry.path)
            if entry.is_dir(follow_symlinks=False):
                subdirs.append(entry_path)
                continue
            found = _visible_file(root, real_root, entry, entry_path)
            if found is not None:
                yield found
        stack.extend(reversed(subdirs))


def _visible_file(
    root: Path, real_root: Path, entry: os.DirEntry[str], entry_path: Path
) -> Entry | None:
    try:
        if entry.is_symlink():
            real = entry_path.resolve()
            if real_root not in real.parents or not real.is_file():
                return None
            stat = real.stat()
        elif entry.is_file(follow_symlinks=False):
            stat = entry.stat(follow_symlinks=False)
        else:
            return None
    except OSError:
        return None
    rel = entry_path.relative_to(root).as_posix()
    return Entry(rel=rel, abs=entry_path, size=stat.st_size, mtime_ns=stat.st_mtime_ns)
