"""YAML frontmatter: found only at byte 0, kept byte-for-byte unless a field changes.

ruamel.yaml's round-trip mode keeps key order, comments and quoting when a
field does change, so a hand-written block comes out as it went in (docs/design.md#note-format).
Both readers refuse alias bombs and deep nesting (`yamlread.check_graph`): such a
block is unreadable on read and refused on write.
"""

from __future__ import annotations

import datetime as dt
import io
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.constructor import RoundTripConstructor
from ruamel.yaml.error import YAMLError

from vault_core import yamlread
from vault_core.errors import FrontmatterError
from vault_core.text import check_unicode

_OPEN = ("---\n", "---\r\n")
_CLOSERS = ("---", "...")


class Rfc3339(str):
    """A timestamp string written as a plain YAML scalar (`updated: 2026-01-02T03:04:05Z`)."""

    __slots__ = ()


class _Constructor(RoundTripConstructor):
    def construct_document(self, node: Any) -> Any:
        yamlread.check_graph(node)
        return super().construct_document(node)


def _yaml() -> YAML:
    yaml = YAML(typ="rt")
    yaml.Constructor = _Constructor
    yaml.preserve_quotes = True
    yaml.width = 4096
    yaml.representer.add_representer(
        Rfc3339, lambda rep, data: rep.represent_scalar("tag:yaml.org,2002:timestamp", str(data))
    )
    return yaml


@dataclass(frozen=True)
class Split:
    """A note's text cut into its frontmatter block and its body."""

    yaml_text: str | None  # between the delimiters; None when there is no block
    block: str  # the whole block with delimiters, "" when absent
    body: str
    block_lines: int  # how many file lines the block occupies


def split(text: str) -> Split:
    """Find the frontmatter block: only at the very start, closed by `---` or `...`.

    An unterminated block is no block at all: the whole text is body (docs/design.md#note-format).
    """
    if not text.startswith(_OPEN):
        return Split(None, "", text, 0)
    first_nl = text.index("\n") + 1
    pos = first_nl
    while pos < len(text):
        end = text.find("\n", pos)
        line_end = len(text) if end == -1 else end + 1
        line = text[pos:line_end].rstrip("\r\n")
        if line in _CLOSERS:
            block = text[:line_end]
            return Split(
                text[first_nl:pos], block, text[line_end:], block.count("\n") + (end == -1)
            )
        pos = line_end
    return Split(None, "", text, 0)


class Frontmatter:
    """The parsed block. `error` is set (and the fields empty) when the YAML is unusable.

    Reading uses libyaml (`yamlread`); ruamel's round-trip model, which keeps
    comments and order, is built only when a field changes.
    """

    def __init__(self, yaml_text: str | None) -> None:
        self.present = yaml_text is not None
        self.error: str | None = None
        self.dirty = False
        self._source = yaml_text or ""
        self._values: dict[Any, Any] = {}
        self._rt: CommentedMap | None = None
        if yaml_text and yaml_text.strip():
            self._values = self._load(yamlread.load, yaml_text) or {}

    def _load(self, load: Callable[[str], Any], text: str) -> dict[Any, Any] | None:
        try:
            loaded = load(text)
        except (YAMLError, yamlread.YAMLError) as exc:
            self.error = yamlread.describe(exc)
            return None
        if loaded is None:
            return None
        if not isinstance(loaded, dict):
            self.error = f"expected key: value pairs, found a {type(loaded).__name__}"
            return None
        return loaded

    @property
    def data(self) -> CommentedMap:
        """The round-trip mapping (comments, order, quoting); loaded on first use."""
        if self._rt is None:
            loaded = self._load(_yaml().load, self._source) if self._source.strip() else None
            self._rt = loaded if isinstance(loaded, CommentedMap) else CommentedMap()
        return self._rt

    def _fields(self) -> dict[Any, Any]:
        return self._rt if self._rt is not None else self._values

    def get(self, key: str) -> Any:
        return self._fields().get(key)

    def __contains__(self, key: str) -> bool:
        return key in self._fields()

    def set(self, key: str, value: Any) -> None:
        self.data[check_unicode(key, "a frontmatter key")] = _to_yaml(value)
        self.dirty = True

    def unset(self, key: str) -> bool:
        if key in self.data:
            del self.data[key]
            self.dirty = True
            return True
        return False

    def plain(self) -> dict[str, Any]:
        """The fields as JSON-ready values (timestamps as RFC 3339 strings)."""
        return {str(k): plain_value(v) for k, v in self._fields().items()}

    def render(self) -> str:
        """The YAML text between the delimiters; unchanged source when nothing changed."""
        if not self.dirty:
            return self._source
        if not self.data:
            return ""
        yaml = _yaml()
        if re.search(r"^[ \t]+- ", self._source, re.MULTILINE) or not self._source:
            yaml.indent(mapping=2, sequence=4, offset=2)
        out = io.StringIO()
        yaml.dump(self.data, out)
        return out.getvalue()


def refuse_limits(text: str, path: str, *, before: str = "") -> None:
    """Raise FrontmatterError when a write brings a block past an alias or nesting limit.

    Other unreadable YAML is written as it is and reported on read (docs/design.md#note-format),
    and a block the write leaves as `before` had it is not looked at again.
    """
    found = split(text)
    if not found.yaml_text or found.block == split(before).block:
        return
    try:
        yamlread.load(found.yaml_text)
    except yamlread.LimitError as exc:
        raise FrontmatterError(path, exc.problem) from exc
    except yamlread.YAMLError:
        return


def join(yaml_text: str, body: str) -> str:
    """Build a note from YAML text (without delimiters) and a body."""
    if yaml_text and not yaml_text.endswith("\n"):
        yaml_text += "\n"
    return f"---\n{yaml_text}---\n{body}"


def normalize_tag(tag: str) -> str:
    """Leading '#' and edge slashes removed, lowercase (docs/design.md#frontmatter-fields)."""
    return tag.strip().lstrip("#").strip("/").strip().lower()


def tag_values(value: Any) -> list[str]:
    """`tags` as a list or a comma-separated scalar, normalised, empty ones dropped."""
    return [t for t in (normalize_tag(v) for v in _string_items(value, split_commas=True)) if t]


def alias_values(value: Any) -> list[str]:
    """`aliases` as a list or a single scalar (a name may contain a comma)."""
    return [a.strip() for a in _string_items(value, split_commas=False) if a.strip()]


def _string_items(value: Any, *, split_commas: bool) -> Iterable[str]:
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return [str(plain_value(v)) for v in value if _is_scalar(v)]
    if not _is_scalar(value):
        return []
    text = str(plain_value(value))
    return text.split(",") if split_commas else [text]


def _is_scalar(value: Any) -> bool:
    return isinstance(value, str | int | float | bool | dt.date)


def plain_value(value: Any) -> Any:
    """A YAML value as JSON-ready data: timestamps become RFC 3339 strings."""
    if isinstance(value, dt.datetime):
        text = value.isoformat()
        return text[:-6] + "Z" if text.endswith("+00:00") else text
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): plain_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain_value(v) for v in value]
    if isinstance(value, str):
        return str(value)
    return value


def _to_yaml(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return CommentedSeq(_to_yaml(v) for v in value)
    if isinstance(value, dict):
        mapping = CommentedMap()
        for k, v in value.items():
            mapping[check_unicode(str(k), "a frontmatter key")] = _to_yaml(v)
        return mapping
    if isinstance(value, str):  # a lone surrogate would be dumped as an escape no reader takes
        return check_unicode(value, "a frontmatter value")
    return value
