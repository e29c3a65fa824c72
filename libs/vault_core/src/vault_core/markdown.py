"""The structure of a note body: headings, links, tags and tasks, outside code.

One pass over the lines. Fenced code (also inside callouts and list items) and
inline code spans hide everything in them — the Obsidian Help vault is full of
`[[Example]]` links that are examples, not links (docs/design.md#note-format).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import unquote

HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
TASK = re.compile(r"^(\s*)[-*+]\s+\[( |x|X)\]\s*(.*)$")
_HEADING_M = re.compile(r"^(#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$", re.MULTILINE)
_TASK_M = re.compile(r"^([ \t]*)[-*+][ \t]+\[( |x|X)\][ \t]*(.*)$", re.MULTILINE)
_QUOTE_PREFIX = re.compile(r"^[ \t]*((?:>[ \t]?)*)[ \t]*")
_QUOTE_MARK = re.compile(r"[ \t]*>[ \t]?")
_FENCE_OPEN = re.compile(r"^(`{3,}|~{3,})(.*)$")
_WIKI = re.compile(r"(!?)\[\[([^\[\]\n]+?)\]\]")
# The same links found by their literal `[[` (a pattern that begins with an optional `!` is
# tried at every character of the note), the `!` looked for before it: a match never ends
# in `!`, so the character before one is never part of the previous.
_WIKI_INNER = re.compile(r"\[\[([^\[\]\n]+?)\]\]")
_MD_LINK = re.compile(
    r"(!?)\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*(<[^<>\n]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)"
    r"(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^()]*\)))?\s*\)"
)
_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://\S+")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
# The `#` comes first, and what may not precede it is looked at behind it: a pattern that
# begins with a literal is searched for it, not tried at every character of the note.
TAG = re.compile(r"#(?<![\w`#/]#)([^\W\d_][\w/-]{0,63})(?![\w/-])")


@dataclass(frozen=True)
class Heading:
    level: int
    text: str
    line: int  # 1-based line number in the file (frontmatter included)


@dataclass(frozen=True)
class Link:
    target: str  # '' for a link into the same note ([[#Heading]])
    anchor: str
    alias: str
    wiki: bool
    embed: bool
    line: int


@dataclass(frozen=True)
class Task:
    line: int
    text: str
    done: bool
    indent: str


@dataclass
class Structure:
    headings: list[Heading]
    links: list[Link]
    tags: list[str]  # inline tags in order of appearance, as written (not normalised)
    tasks: list[Task]


@dataclass(frozen=True)
class Line:
    number: int  # 0-based index into the body's lines
    text: str
    code: bool  # inside fenced code (fence lines included)


def lines(body: str) -> Iterator[Line]:
    """Every body line with a flag saying whether it is fenced code."""
    texts = [raw[:-1] if raw.endswith("\r") else raw for raw in body.split("\n")]
    code = _fenced(texts)
    for number, text in enumerate(texts):
        yield Line(number, text, code=number in code)


def _fenced(texts: list[str]) -> set[int]:
    """The numbers of the lines (without their `\r`) that are fenced code, fences included."""
    code: set[int] = set()
    fence: tuple[str, int, int] | None = None  # (char, length, quote depth)
    for number, text in enumerate(texts):
        head = text.lstrip(" \t")[:1]
        if fence is None and head not in ("`", "~", ">"):
            continue  # the common case, without a regex
        if fence is not None and fence[2] == 0 and head != fence[0]:
            code.add(number)
            continue
        prefix = _QUOTE_PREFIX.match(text)
        depth = prefix.group(1).count(">") if prefix else 0
        rest = text[prefix.end() :] if prefix else text
        if fence is not None:
            char, length, fence_depth = fence
            if depth < fence_depth:
                fence = None  # the callout or quote that held the fence has ended
            else:
                # Only the fence's own quote markers are stripped: inside a plain fence,
                # "> ```" is an example of a callout with code, not the closing fence.
                inner = _unquote(text, fence_depth)
                if re.fullmatch(rf"[ \t]*{re.escape(char)}{{{length},}}[ \t]*", inner):
                    fence = None
                code.add(number)
                continue
        opened = _FENCE_OPEN.match(rest)
        if opened and not (opened.group(1)[0] == "`" and "`" in opened.group(2)):
            fence = (opened.group(1)[0], len(opened.group(1)), depth)
            code.add(number)
    return code


def _unquote(text: str, depth: int) -> str:
    for _ in range(depth):
        mark = _QUOTE_MARK.match(text)
        if mark is None:
            break
        text = text[mark.end() :]
    return text


def parse(body: str, line_offset: int = 0) -> Structure:
    """Headings, links, inline tags and tasks of a body; line numbers shifted by the offset.

    Code is blanked first (fenced lines emptied, code spans turned to spaces, every
    offset kept), then each kind of structure is one regex pass over the whole text.
    """
    plain = _without_fences(body)
    visible = _without_code_spans(plain) if "`" in plain else plain
    line_of = _LineCounter(plain, line_offset)

    found = Structure([], [], [], [])
    for start in _lines_starting(plain, "#"):
        if m := _HEADING_M.match(plain, start):
            found.headings.append(Heading(len(m.group(1)), m.group(2), line_of(start)))
    if "[ ]" in plain or "[x]" in plain or "[X]" in plain:
        for m in _TASK_M.finditer(plain):
            found.tasks.append(Task(line_of(m.start()), m.group(3), m.group(2) != " ", m.group(1)))
    unwikied = visible
    if "[[" in visible:
        pieces: list[str] = []  # the text with every wiki link blanked, as the tags see it
        end = 0
        for m in _WIKI_INNER.finditer(visible):
            start = m.start()
            embed = start > 0 and visible[start - 1] == "!"
            start -= embed
            found.links.append(wiki_link(m.group(1), embed=embed, line=line_of(start)))
            pieces += (visible[end:start], " " * (m.end() - start))
            end = m.end()
        pieces.append(visible[end:])
        unwikied = "".join(pieces)
    if "](" in unwikied:
        for m in _MD_LINK.finditer(unwikied):
            link = markdown_link(m.group(3), embed=m.group(1) == "!", line=line_of(m.start()))
            if link is not None:
                found.links.append(link)
    if "#" in visible:
        found.tags.extend(_tags(unwikied))
    found.links.sort(key=lambda link: link.line)
    return found


def _lines_starting(text: str, char: str) -> Iterator[int]:
    """The offsets of the lines that begin with `char`, found by a search for it after a
    line break (a regex anchored at every line's start is tried at every character)."""
    if text.startswith(char):
        yield 0
    marker = "\n" + char
    at = text.find(marker)
    while at >= 0:
        yield at + 1
        at = text.find(marker, at + 1)


class _LineCounter:
    """The file line of an offset into `text`; offsets asked in increasing order (one
    regex pass) cost one scan of the text between them, a new pass starts over."""

    def __init__(self, text: str, line_offset: int) -> None:
        self._text, self._base = text, line_offset + 1
        self._offset, self._line = 0, 0

    def __call__(self, offset: int) -> int:
        if offset < self._offset:
            self._offset, self._line = 0, 0
        self._line += self._text.count("\n", self._offset, offset)
        self._offset = offset
        return self._line + self._base


def _without_fences(body: str) -> str:
    """The body with every fenced line emptied and `\r` dropped, line count unchanged."""
    text = body.replace("\r\n", "\n") if "\r" in body else body
    if "```" not in text and "~~~" not in text:
        return text
    kept = text.split("\n")
    for number in _fenced(kept):
        kept[number] = ""
    return "\n".join(kept)


def _without_code_spans(text: str) -> str:
    return "\n".join(strip_code_spans(line) if "`" in line else line for line in text.split("\n"))


def strip_code_spans(text: str) -> str:
    """Blank out inline code spans (`like this`), keeping every other character in place."""
    if "`" not in text:
        return text
    out = list(text)
    runs = [(m.start(), m.end()) for m in re.finditer(r"`+", text)]
    i = 0
    while i < len(runs):
        start, end = runs[i]
        width = end - start
        closing = next(
            (j for j in range(i + 1, len(runs)) if runs[j][1] - runs[j][0] == width), None
        )
        if closing is None:
            i += 1
            continue
        for k in range(start, runs[closing][1]):
            out[k] = " "
        i = closing + 1
    return "".join(out)


def wiki_link(inner: str, *, embed: bool, line: int) -> Link:
    """`target#anchor|alias` → Link; `\\|` (escaped inside tables) counts as `|`."""
    inner = inner.replace("\\|", "|")
    target, _, alias = inner.partition("|")
    target, _, anchor = target.partition("#")
    return Link(target.strip(), anchor.strip(), alias.strip(), wiki=True, embed=embed, line=line)


def markdown_link(raw: str, *, embed: bool, line: int) -> Link | None:
    """A `[text](target)` to a local file, percent-decoded; None for URLs and pure anchors."""
    target = raw[1:-1] if raw.startswith("<") and raw.endswith(">") else raw
    if not target or target.startswith("#") or _SCHEME.match(target):
        return None
    target, _, anchor = target.partition("#")
    return Link(unquote(target).strip(), unquote(anchor), "", wiki=False, embed=embed, line=line)


def tag_matches(text: str) -> Iterator[re.Match[str]]:
    """Every inline tag of one line of text (`group(1)` is the tag, without `#`), at its place.

    Links and URLs are blanked first: `[[#Heading]]` and `page#fragment` are no tags.
    """
    if "[[" in text:
        text = _WIKI.sub(_blank, text)
    if "](" in text:
        text = _MD_LINK.sub(_blank, text)
    if "://" in text:
        text = _URL.sub(_blank, text)
    return TAG.finditer(text)


def _tags(text: str) -> Iterator[str]:
    for m in tag_matches(text):
        yield m.group(1)


def _blank(match: re.Match[str]) -> str:
    return " " * len(match.group(0))
