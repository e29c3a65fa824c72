"""Section edits (docs/design.md#section-edits) and exact string edits on a note's text.

A section runs from its heading to just before the next heading of the same or
a higher level; headings inside fenced code do not count. All functions are
pure: text in, text out, errors for what cannot be done unambiguously.
"""

from __future__ import annotations

from dataclasses import dataclass

from vault_core import markdown
from vault_core.errors import (
    AmbiguousEditError,
    HeadingNotFoundError,
    InvalidArgumentError,
    NotFoundError,
)

MODES = (
    "append_to_section",
    "prepend_to_section",
    "replace_section",
    "insert_before_section",
    "insert_after_section",
    "delete_section",
    "append_to_note",
    "prepend_to_note",
)
NOTE_MODES = ("append_to_note", "prepend_to_note")


@dataclass(frozen=True)
class Section:
    """Lines `start` (the heading) up to `end` (exclusive) of the body's lines."""

    level: int
    text: str
    start: int
    end: int


def headings(body: str) -> list[Section]:
    """Every heading outside code, each with the extent of its section."""
    found: list[tuple[int, int, str]] = []
    for line in markdown.lines(body):
        if line.code:
            continue
        match = markdown.HEADING.match(line.text)
        if match:
            found.append((line.number, len(match.group(1)), match.group(2)))
    total = len(_lines(body))
    sections = []
    for i, (start, level, text) in enumerate(found):
        end = next((s for s, lv, _ in found[i + 1 :] if lv <= level), total)
        sections.append(Section(level, text, start, end))
    return sections


def find_section(body: str, heading: str, path: str = "the note") -> Section:
    """Exact, case-insensitive, prefix; the first hit wins (docs/design.md#heading-lookup)."""
    want = heading.strip().lstrip("#").strip()
    if not want:
        raise InvalidArgumentError("heading is empty; pass the heading text, e.g. 'Open questions'")
    candidates = headings(body)
    folded = want.casefold()
    for found in (
        next((s for s in candidates if s.text == want), None),
        next((s for s in candidates if s.text.casefold() == folded), None),
        next((s for s in candidates if s.text.casefold().startswith(folded)), None),
    ):
        if found is not None:
            return found
    raise HeadingNotFoundError(want, path)


def section_edit(
    body: str, mode: str, *, heading: str | None, content: str | None, path: str = "the note"
) -> str:
    """Apply one of the eight modes of docs/design.md#section-modes and tidy blank lines."""
    check_mode(mode, heading, content)
    new = _content_lines(content or "")
    if mode == "append_to_note":
        result = _join_blocks(body, "\n".join(new))
    elif mode == "prepend_to_note":
        result = _join_blocks("\n".join(new), body)
    else:
        lines = _lines(body)
        section = find_section(body, heading or "", path)
        result = "\n".join(_apply_section(lines, section, mode, new)) + "\n"
    return collapse_blank_lines(result)


def check_mode(mode: str, heading: str | None, content: str | None) -> None:
    """Refuse an unknown mode or a mode without the heading/content it needs."""
    if mode not in MODES:
        raise InvalidArgumentError(f"unknown mode: {mode!r}; use one of {', '.join(MODES)}")
    if mode not in NOTE_MODES and not (heading and heading.strip()):
        raise InvalidArgumentError(f"mode {mode} needs a heading; call note_outline to see them")
    if mode != "delete_section" and content is None:
        raise InvalidArgumentError(f"mode {mode} needs content")


def _apply_section(lines: list[str], s: Section, mode: str, new: list[str]) -> list[str]:
    before, heading_line, inside, after = (
        lines[: s.start],
        lines[s.start],
        lines[s.start + 1 : s.end],
        lines[s.end :],
    )
    gap = [""] if after else []
    if mode == "append_to_section":
        return [*before, heading_line, *_rstrip_blank(inside), *new, *gap, *after]
    if mode == "prepend_to_section":
        return [*before, heading_line, *new, *inside, *after]
    if mode == "replace_section":
        return [*before, heading_line, *new, *gap, *after]
    if mode == "insert_before_section":
        return [*before, *new, "", heading_line, *inside, *after]
    if mode == "insert_after_section":
        return [*before, heading_line, *_rstrip_blank(inside), "", *new, *gap, *after]
    return [*before, *after]  # delete_section


def collapse_blank_lines(body: str) -> str:
    """Runs of three or more blank lines become two, outside code; end with exactly one \\n."""
    out: list[str] = []
    blanks = 0
    raw_lines = body.split("\n")  # kept raw: a mixed-ending note keeps its \r\n lines
    for line in markdown.lines(body):
        if not line.code and not line.text.strip():
            blanks += 1
            if blanks > 2:
                continue
        else:
            blanks = 0
        out.append(raw_lines[line.number])
    while out and not out[-1].strip():
        out.pop()
    return "\n".join(out) + "\n" if out else ""


def string_edit(
    text: str,
    old: str,
    new: str,
    *,
    replace_all: bool = False,
    path: str = "the note",
) -> tuple[str, int]:
    """Replace `old` exactly; refuse it empty, identical, missing or ambiguous (no replace_all)."""
    old, new = old.replace("\r\n", "\n"), new.replace("\r\n", "\n")
    if old == "":
        raise InvalidArgumentError("old_string is empty; copy the exact text to replace")
    if old == new:
        raise InvalidArgumentError("old_string and new_string are identical; nothing changes")
    count = text.count(old)
    if count == 0:
        raise NotFoundError(
            f"old_string not found in {path}; call note_read and copy the text exactly, "
            "including whitespace and line breaks"
        )
    if count > 1 and not replace_all:
        raise AmbiguousEditError(count)
    return text.replace(old, new), count


def scaffold(title: str, mode: str, heading: str | None) -> str:
    """The body of a note made by `create: true`: `# title` and, if needed, `## heading`."""
    body = f"# {title}\n"
    if mode not in NOTE_MODES and heading:
        body += f"\n## {heading.strip().lstrip('#').strip()}\n"
    return body


def _lines(body: str) -> list[str]:
    lines = body.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _content_lines(content: str) -> list[str]:
    return _lines(content.replace("\r\n", "\n"))


def _rstrip_blank(lines: list[str]) -> list[str]:
    end = len(lines)
    while end and not lines[end - 1].strip():
        end -= 1
    return lines[:end]


def _join_blocks(first: str, second: str) -> str:
    first, second = first.rstrip("\n"), second.lstrip("\n")
    if not first.strip():
        return second
    if not second.strip():
        return first + "\n"
    return f"{first}\n\n{second}"
