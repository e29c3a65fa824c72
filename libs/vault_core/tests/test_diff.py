"""Diffs cut lines at "\n" only, so a write's diff and note_diff agree on every note."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from vault_core import diff, edit
from vault_core.edit import WriteOp
from vault_core.library import Library, Settings

# Characters str.splitlines ends a line at, each inside a line of the note.
INSIDE = ["a\rcarriage return", "a form\x0cfeed", "a file\x1cseparator", "a line\u2028separator"]
NOTE = "# N\n\n" + "\n".join(INSIDE) + "\nthe end\n"


@pytest.fixture
def library(tmp_path: Path) -> Iterator[Library]:
    opened = Library(tmp_path / "data", Settings(watch=False)).open_all()
    yield opened
    opened.close()


def test_lines_end_at_a_newline_only() -> None:
    assert diff.lines("a\rb\x0cc\x1cd\u2028e\u0085f\ng") == ["a\rb\x0cc\x1cd\u2028e\u0085f\n", "g"]
    assert diff.lines("one\ntwo\n") == ["one\n", "two\n"]
    assert diff.lines("") == []


def test_a_line_holding_a_carriage_return_is_one_line_of_the_diff() -> None:
    changed = NOTE.replace("the end", "The end")
    assert diff.unified(NOTE, changed, "n.md") == (
        "--- a/n.md\n+++ b/n.md\n@@ -4,4 +4,4 @@\n"
        " a form\x0cfeed\n a file\x1cseparator\n a line\u2028separator\n-the end\n+The end\n"
    )


def test_a_writes_diff_and_note_diff_agree_on_a_note_splitlines_would_cut(
    library: Library,
) -> None:
    opened = library.get("default")
    create = WriteOp("n.md", lambda _c, _e: NOTE, reason="note_create: n.md", skip_touch=True)
    edit.apply(opened.vault, create)
    change = WriteOp(
        "n.md",
        lambda text, _e: text.replace("a form", "A form"),
        reason="note_edit: n.md",
        skip_touch=True,
    )
    written = edit.apply(opened.vault, change)
    new, old = opened.history().history("n.md")
    note_diff = opened.history().diff("n.md", old.commit, new.commit)
    assert written.diff.split("\n", 2)[2] == note_diff.split("\n", 2)[2]
    assert "-a form\x0cfeed\n+A form\x0cfeed\n" in written.diff
    assert written.diff.split("\n")[2] == "@@ -1,7 +1,7 @@"  # the note's seven lines
