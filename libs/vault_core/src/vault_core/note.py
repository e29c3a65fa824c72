"""A note as tools see it: frontmatter, body, structure, title, tags and hash.

Parsing never fails on content: invalid YAML leaves the note readable with
`frontmatter_error` set, so a broken block is reported, not fatal (docs/design.md#note-format).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from vault_core import frontmatter, markdown
from vault_core.frontmatter import Frontmatter
from vault_core.markdown import Heading, Link, Structure, Task
from vault_core.text import Decoded, content_hash, decode


@dataclass
class Note:
    """One parsed note. `text` has LF line endings; `decoded` knows how to write it back."""

    path: str
    size: int
    content_hash: str
    decoded: Decoded
    split: frontmatter.Split
    mtime_ns: int = 0
    _structure: Structure | None = field(default=None, repr=False)

    @property
    def text(self) -> str:
        return self.decoded.text

    @property
    def body(self) -> str:
        return self.split.body

    @cached_property
    def frontmatter(self) -> Frontmatter:
        return Frontmatter(self.split.yaml_text)

    @property
    def frontmatter_error(self) -> str | None:
        return self.frontmatter.error

    @property
    def structure(self) -> Structure:
        if self._structure is None:
            self._structure = markdown.parse(self.body, self.split.block_lines)
        return self._structure

    @property
    def headings(self) -> list[Heading]:
        return self.structure.headings

    @property
    def links(self) -> list[Link]:
        return self.structure.links

    @property
    def tasks(self) -> list[Task]:
        return self.structure.tasks

    @cached_property
    def title(self) -> str:
        """Frontmatter `title`, else the first `#` heading, else the file name
        (docs/design.md#frontmatter-fields)."""
        value = self.frontmatter.get("title")
        if value is not None and str(value).strip() and not isinstance(value, dict | list):
            return str(value).strip()
        for heading in self.headings:
            if heading.level == 1:
                return heading.text
        return stem(self.path)

    @cached_property
    def tags(self) -> list[str]:
        """Frontmatter `tags`/`tag` united with inline tags, normalised, first-seen order."""
        found = frontmatter.tag_values(self.frontmatter.get("tags"))
        found += frontmatter.tag_values(self.frontmatter.get("tag"))
        found += [frontmatter.normalize_tag(t) for t in self.structure.tags]
        return list(dict.fromkeys(t for t in found if t))

    @cached_property
    def aliases(self) -> list[str]:
        found = frontmatter.alias_values(self.frontmatter.get("aliases"))
        found += frontmatter.alias_values(self.frontmatter.get("alias"))
        return list(dict.fromkeys(found))

    @property
    def words(self) -> int:
        return len(self.body.split())

    def metadata(self) -> dict[str, Any]:
        """Frontmatter as JSON-ready values ({} when absent or invalid)."""
        return self.frontmatter.plain()


def parse(path: str, data: bytes, mtime_ns: int = 0) -> Note:
    """Parse the bytes of a note; raises EncodingError for bytes that are not UTF-8."""
    decoded = decode(data, path)
    return Note(
        path=path,
        size=len(data),
        content_hash=content_hash(data),
        decoded=decoded,
        split=frontmatter.split(decoded.text),
        mtime_ns=mtime_ns,
    )


def stem(path: str) -> str:
    """The file name without its extension: `wiki/Rate Limits.md` → `Rate Limits`."""
    name = posixpath.basename(path)
    root, ext = posixpath.splitext(name)
    return root if ext else name
