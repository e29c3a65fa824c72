"""Unified diffs with three lines of context, as every write response carries them."""

from __future__ import annotations

import difflib


def unified(old: str, new: str, path: str, *, existed: bool = True, context: int = 3) -> str:
    """The change from `old` to `new` as a unified diff; '' when they are equal."""
    if old == new:
        return ""
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"a/{path}" if existed else "/dev/null",
        tofile=f"b/{path}",
        n=context,
    )
    return "".join(_terminated(line) for line in lines)


def _terminated(line: str) -> str:
    # A last line without a newline would glue itself to the next hunk line.
    return line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
