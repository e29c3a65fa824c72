"""Unified diffs with three lines of context, as every write response and note_diff carry them.

One line rule for both: a line ends at "\\n" and nowhere else, so a line of the diff is a
line of the file. (`str.splitlines` also ends one at CR, form feed, \\x1c-\\x1e, U+0085,
U+2028 and U+2029, which a note may hold inside a line.)
"""

from __future__ import annotations

import difflib


def lines(text: str) -> list[str]:
    """`text` cut after each "\\n" (kept); a last line without one is kept as it is."""
    parts = text.split("\n")
    return [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def unified(old: str, new: str, path: str, *, existed: bool = True, context: int = 3) -> str:
    """The change from `old` to `new` as a unified diff; '' when they are equal."""
    if old == new:
        return ""
    fromfile = f"a/{path}" if existed else "/dev/null"
    return between(old, new, fromfile, f"b/{path}", context=context)


def between(old: str, new: str, fromfile: str, tofile: str, *, context: int = 3) -> str:
    """The unified diff from `old` (labelled `fromfile`) to `new` (`tofile`); '' when
    their lines are equal."""
    diff = difflib.unified_diff(lines(old), lines(new), fromfile, tofile, n=context)
    return "".join(_terminated(line) for line in diff)


def _terminated(line: str) -> str:
    # A last line without a newline would glue itself to the next hunk line.
    return line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
