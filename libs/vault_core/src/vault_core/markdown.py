"""The structure of a note body: headings, links, tags and tasks, outside code.

One pass over the lines. Fenced code (also inside callouts and list items) and
inline code spans hide everything in them — the Obsidian Help vault is full of
`[[Example]]` links that are examples, not links (DESIGN.md §3).
"""

from __future__ import annotations

import bisect
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
_MD_LINK = re.compile(
    r"(!?)\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*(<[^<>\n]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)"
    r"(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^()]*\)))?\s*\)"
)
_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://\S+")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
TAG = re.compile(r"(?<![\w`#/])#([^\W\d_][\w/-]{0,63})(?![\w/-])")


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
    fence: tuple[str, int, int] | None = None  # (char, length, quote depth)
    for number, raw in enumerate(body.split("\n")):
        text = raw[:-1] if raw.endswith("\r") else raw
        head = text.lstrip(" \t")[:1]
        if fence is None and head not in ("`", "~", ">"):
            yield Line(number, text, code=False)  # the common case, without a regex
            continue
        if fence is not None and fence[2] == 0 and head != fence[0]:
            yield Line(number, text, code=True)
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
                yield Line(number, text, code=True)
                continue
        opened = _FENCE_OPEN.match(rest)
        if opened and not (opened.group(1)[0] == "`" and "`" in opened.group(2)):
            fence = (opened.group(1)[0], len(opened.group(1)), depth)
            yield Line(number, text, code=True)
            continue
        yield Line(number, text, code=False)


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
    starts = [0, *(m.end() for m in re.finditer("\n", plain))]

    def line_of(offset: int) -> int:
        return bisect.bisect_right(starts, offset) + line_offset

    found = Structure([], [], [], [])
    for m in _HEADING_M.finditer(plain):
        found.headings.append(Heading(len(m.group(1)), m.group(2), line_of(m.start())))
    for m in _TASK_M.finditer(plain):
        found.tasks.append(Task(line_of(m.start()), m.group(3), m.group(2) != " ", m.group(1)))
    for m in _WIKI.finditer(visible):
        found.links.append(wiki_link(m.group(2), embed=m.group(1) == "!", line=line_of(m.start())))
    unwikied = _WIKI.sub(_blank, visible) if "[[" in visible else visible
    if "](" in unwikied:
        for m in _MD_LINK.finditer(unwikied):
            link = markdown_link(m.group(3), embed=m.group(1) == "!", line=line_of(m.start()))
            if link is not None:
                found.links.append(link)
    if "#" in visible:
        found.tags.extend(_tags(unwikied))
    found.links.sort(key=lambda link: link.line)
    return found


def _without_fences(body: str) -> str:
    """The body with every fenced line emptied and `\r` dropped, line count unchanged."""
    text = body.replace("\r\n", "\n") if "\r" in body else body
    if "```" not in text and "~~~" not in text:
        return text
    kept = text.split("\n")
    for line in lines(text):
        if line.code:
            kept[line.number] = ""
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


def _links(text: str, file_line: int) -> Iterator[Link]:
    if "[[" in text:
        for m in _WIKI.finditer(text):
            yield wiki_link(m.group(2), embed=m.group(1) == "!", line=file_line)
        text = _WIKI.sub(_blank, text)
    if "](" in text:
        for m in _MD_LINK.finditer(text):
            link = markdown_link(m.group(3), embed=m.group(1) == "!", line=file_line)
            if link is not None:
                yield link


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


def _tags(text: str) -> Iterator[str]:
    # Links and URLs are blanked first: `[[#Heading]]` and `page#fragment` are no tags.
    if "[[" in text:
        text = _WIKI.sub(_blank, text)
    if "](" in text:
        text = _MD_LINK.sub(_blank, text)
    if "://" in text:
        text = _URL.sub(_blank, text)
    for m in TAG.finditer(text):
        yield m.group(1)


def _blank(match: re.Match[str]) -> str:
    return " " * len(match.group(0))
