"""Link resolution (docs/design.md#link-resolution): which file a link points to.

Steps, first hit wins: same note for an anchor-only link; `./` and `../`
against the linking note's folder; leading `/` dropped; exact path; path +
`.md`; the same path ignoring case; a unique note by file name, by title, by
alias; a unique attachment by file name. Ambiguity leaves a link broken. A name
matches in either Unicode normal form: `[[café]]` typed composed reaches the note a
Mac stored decomposed (docs/design.md#link-resolution).
"""

from __future__ import annotations

import posixpath
import unicodedata
from typing import Protocol

STEM, TITLE, ALIAS, FILE, PATH = 1, 2, 3, 4, 5  # kinds of names in the index


class Names(Protocol):
    """What resolution needs to know about the vault; the index answers it."""

    def exists(self, path: str) -> bool:
        """A note or attachment exists at exactly this vault-relative path."""
        ...

    def unique(self, kind: int, name: str) -> str | None:
        """The one path having this lowercase name of this kind, None if none or several."""
        ...


def normalize_target(src: str, target: str) -> str | None:
    """Steps 1-2: the target as a vault path candidate; None when it leaves the vault."""
    target = target.strip().replace("\\", "/")
    if target.startswith(("./", "../")):
        target = posixpath.normpath(posixpath.join(posixpath.dirname(src), target))
        if target == ".." or target.startswith("../"):
            return None
    return target.lstrip("/")


def from_anywhere(target: str) -> bool:
    """A wiki link to `target` resolves the same from every note: it is neither into its
    own note (empty) nor relative to the linking note's folder."""
    found = target.strip().replace("\\", "/")
    return bool(found) and not found.startswith(("./", "../"))


def resolve(src: str, target: str, names: Names, *, wiki: bool = True) -> str:
    """The vault path a link from `src` to `target` points to, '' when broken."""
    decided, lowered = _by_path(src, target, names, wiki=wiki)
    return decided if decided is not None else _by_content(lowered, names)


def resolve_by_path(src: str, target: str, names: Names, *, wiki: bool = True) -> str | None:
    """What `resolve` gives when the vault's paths alone decide it, None when a title or an
    alias may: `names` need only know the paths then (a cold index's workers resolve most
    links from the walk this way, before any note's title is in the index)."""
    return _by_path(src, target, names, wiki=wiki)[0]


def _by_path(src: str, target: str, names: Names, *, wiki: bool) -> tuple[str | None, str]:
    """The steps up to the unique stem: their answer, or None and the lowercase candidate
    the steps by title, alias and file name take."""
    if not target.strip():
        return src, ""  # [[#Heading]] and [[#^block]] point into their own note
    candidate = normalize_target(src, target)
    if not candidate:
        return "", ""
    if not wiki and not target.startswith(("./", "../", "/")):
        beside = posixpath.normpath(posixpath.join(posixpath.dirname(src), candidate))
        if not beside.startswith("../") and names.exists(beside):
            return beside, ""  # a Markdown link is relative to its note's folder first
    if names.exists(candidate):
        return candidate, ""
    if names.exists(candidate + ".md"):
        return candidate + ".md", ""
    lowered = candidate.lower()
    bare = lowered[:-3] if lowered.endswith(".md") else lowered
    return _unique(names, (PATH, STEM), bare), lowered


def _by_content(lowered: str, names: Names) -> str:
    return _unique(names, (TITLE, ALIAS, FILE), lowered) or ""


def _unique(names: Names, kinds: tuple[int, ...], name: str) -> str | None:
    """The one path with a name of these kinds, in their order, spelled as the link
    spells it or else in the other Unicode normal form (names are stored as their file or
    frontmatter spells them)."""
    for spelling in spellings(name):
        for kind in kinds:
            found = names.unique(kind, spelling)
            if found:
                return found
    return None


def spellings(name: str) -> list[str]:
    """`name` as given, then composed (NFC), then decomposed (NFD), each once."""
    if name.isascii():
        return [name]  # most names: one spelling, and no cost for the broken links
    return list(dict.fromkeys((name, *(unicodedata.normalize(f, name) for f in ("NFC", "NFD")))))


def note_names(path: str, title: str, aliases: list[str]) -> list[tuple[int, str]]:
    """The names a note can be linked by, lowercase, as (kind, name) pairs."""
    bare = path[:-3] if path.lower().endswith(".md") else path
    found = [(PATH, bare.lower()), (STEM, posixpath.basename(bare).lower())]
    if title.strip():
        found.append((TITLE, title.strip().lower()))
    found += [(ALIAS, alias.lower()) for alias in aliases if alias.strip()]
    return list(dict.fromkeys(found))


def attachment_names(path: str) -> list[tuple[int, str]]:
    """An attachment is linked by its path (any case) or its file name with extension."""
    return [(PATH, path.lower()), (FILE, posixpath.basename(path).lower())]


def link_key(target: str) -> str:
    """The lowercase last segment of a link target, without `.md`.

    Whatever a link resolves to shares this key with one of the target's names,
    so when a file changes only the links under its keys can change resolution.
    """
    last = target.strip().replace("\\", "/").rstrip("/").rsplit("/", 1)[-1].lower()
    return last[:-3] if last.endswith(".md") else last


def keys_for(names: list[tuple[int, str]]) -> set[str]:
    """The link keys of a file that has these names, in either normal form: a link keeps
    its key as it spells it."""
    return {key for _kind, name in names for key in spellings(link_key(name))}
