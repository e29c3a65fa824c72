"""Operations over many notes (move, merge, split, tag rename, replace) never drop a note
silently: what they cannot read or write is left as it is and listed with the reason."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from vault_core.errors import InvalidArgumentError, NotFoundError, TooManyNotesError
from vault_core.library import Library, OpenVault, Settings
from vault_core.ops import merge, move, replace, retag, split
from vault_core.vault import Actor

LATIN1 = "caf\xe9\n".encode("latin-1")  # not UTF-8: no note can be read from it
ALICE = Actor("alice")


@pytest.fixture
def opened(tmp_path: Path) -> Iterator[OpenVault]:
    library = Library(tmp_path, Settings(watch=False)).open_all()
    vault = library.create("team", "empty")
    files = {
        "a.md": "# A\n\nSee [[b]] and #old/sub.\n",
        "b.md": "# B\n\nBody of b. #old\n",
        "c.md": "---\ntags: [old]\n---\n# C\n\nLinks to [[b]].\n",
        "long.md": "# Long\n\nIntro.\n\n## One\n\nFirst.\n\n## Two\n\nSecond.\n",
        "two.md": "# Taken\n",
    }
    for rel, text in files.items():
        (vault.vault.root / rel).write_text(text)
    vault.index.reconcile()
    yield vault
    library.close()


def spoil(opened: OpenVault, rel: str) -> None:
    """Make a note unreadable behind the index's back (it still knows the note's links)."""
    (opened.vault.root / rel).write_bytes(LATIN1)


def last_commit(opened: OpenVault) -> str:
    return subprocess.run(
        ["git", "-C", str(opened.vault.root), "log", "-1", "--format=%s"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def test_a_move_lists_a_linking_note_it_could_not_read(opened: OpenVault) -> None:
    spoil(opened, "c.md")
    moved = move.move_note(opened.vault, opened.index, "b.md", "wiki/b.md", actor=ALICE)
    assert moved.written == ["a.md"]
    ((skipped),) = moved.skipped
    assert (skipped.path, skipped.code) == ("c.md", "invalid_argument")
    assert "UTF-8" in skipped.reason
    assert (opened.vault.root / "a.md").read_text() == "# A\n\nSee [[wiki/b]] and #old/sub.\n"
    assert (opened.vault.root / "c.md").read_bytes() == LATIN1
    assert last_commit(opened) == "move: b.md -> wiki/b.md"


def test_a_dry_run_move_lists_the_same_skip_and_moves_nothing(opened: OpenVault) -> None:
    spoil(opened, "c.md")
    moved = move.move_note(opened.vault, opened.index, "b.md", "wiki/b.md", dry_run=True)
    assert [skip.path for skip in moved.skipped] == ["c.md"]
    assert [update.path for update in moved.updates] == ["a.md"]
    assert (opened.vault.root / "b.md").exists()


def test_a_merge_reports_the_linking_note_it_left_alone(opened: OpenVault) -> None:
    spoil(opened, "c.md")
    merged = merge.merge_notes(opened.vault, opened.index, "a.md", "b.md", actor=ALICE)
    assert [skip.path for skip in merged.skipped] == ["c.md"]
    assert not (opened.vault.root / "b.md").exists()
    assert "Body of b." in (opened.vault.root / "a.md").read_text()
    assert last_commit(opened) == "merge: b.md -> a.md"


def test_a_merge_of_a_note_into_itself_is_refused(opened: OpenVault) -> None:
    with pytest.raises(InvalidArgumentError, match="same note"):
        merge.merge_notes(opened.vault, opened.index, "a.md", "a")


def test_a_split_lists_a_piece_whose_path_is_taken_and_keeps_its_section(
    opened: OpenVault,
) -> None:
    done = split.split_note(opened.vault, "long.md", actor=ALICE)
    assert done.created == ["one.md"]
    ((skipped),) = done.skipped
    assert (skipped.path, skipped.code) == ("two.md", "exists")
    source = (opened.vault.root / "long.md").read_text()
    assert "See [[one|One]]." in source
    assert "## Two\n\nSecond." in source  # the section that found no note of its own stays
    assert (opened.vault.root / "two.md").read_text() == "# Taken\n"


def test_a_split_without_the_level_names_the_headings_tool(opened: OpenVault) -> None:
    with pytest.raises(NotFoundError, match="note_outline"):
        split.split_note(opened.vault, "a.md", level=3)


def test_a_tag_rename_lists_a_note_it_could_not_change(opened: OpenVault) -> None:
    spoil(opened, "b.md")
    done = retag.rename_tag(opened.vault, opened.index, "#old", "new", dry_run=False, actor=ALICE)
    assert [path for path, _ in done.changed] == ["a.md", "c.md"]
    assert [(skip.path, skip.code) for skip in done.skipped] == [("b.md", "invalid_argument")]
    assert "#new/sub" in (opened.vault.root / "a.md").read_text()
    assert "tags:\n- new\n" in (opened.vault.root / "c.md").read_text()
    assert last_commit(opened) == "retag: #old -> #new"


def test_a_tag_rename_leaves_a_heading_link_named_like_the_tag(opened: OpenVault) -> None:
    (opened.vault.root / "h.md").write_text("# H\n\n[[#old]] is a heading link; #old is a tag.\n")
    opened.index.reconcile()
    retag.rename_tag(opened.vault, opened.index, "old", "new", dry_run=False)
    assert (opened.vault.root / "h.md").read_text() == (
        "# H\n\n[[#old]] is a heading link; #new is a tag.\n"
    )


def test_a_replace_counts_the_notes_it_could_not_read(opened: OpenVault) -> None:
    spoil(opened, "b.md")
    done = replace.replace_text(
        opened.vault, lambda text: (text.replace("# ", "## "), text.count("# ")), dry_run=False
    )
    assert [(skip.path, skip.code) for skip in done.skipped] == [("b.md", "invalid_argument")]
    assert sorted(change.path for change in done.changes) == ["a.md", "c.md", "long.md", "two.md"]
    assert all(change.content_hash for change in done.changes)
    assert last_commit(opened) == "replace: 4 notes"


def test_a_replace_over_its_limit_writes_nothing(opened: OpenVault) -> None:
    before = (opened.vault.root / "a.md").read_text()
    with pytest.raises(TooManyNotesError, match="more than limit 2"):
        replace.replace_text(opened.vault, lambda t: (t + "!", 1), limit=2, dry_run=False)
    assert (opened.vault.root / "a.md").read_text() == before
