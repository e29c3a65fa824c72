"""The one write path (docs/design.md#write-path): locking, dry run, touch, trash, atomic write,
index, commit."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from vault_core import edit
from vault_core.edit import WriteOp
from vault_core.errors import (
    ATTACHMENT_LIMIT,
    NOTE_LIMIT,
    AttachmentTypeError,
    EncodingError,
    FrontmatterError,
    HashMismatchError,
    InvalidPathError,
    InvalidTextError,
    NotAFileError,
    NoteExistsError,
    NoteNotFoundError,
    TooLargeError,
)
from vault_core.git.store import Identity
from vault_core.library import Library, Settings
from vault_core.testing import make_vault, snapshot
from vault_core.text import content_hash
from vault_core.vault import Actor, Vault

NOW = "2026-01-02T03:04:05Z"


def replace_with(text: str) -> edit.Transform:
    return lambda _cur, _exists: text


def append(text: str) -> edit.Transform:
    return lambda cur, _exists: cur + text


def trash_files(vault: Vault) -> list[Path]:
    trash = vault.state_dir / "trash"
    return sorted(trash.iterdir()) if trash.exists() else []


class RecordingIndex:
    """Stands where the vault's index does, to see what the write path asks of it."""

    def __init__(self) -> None:
        self.changed_calls: list[list[str]] = []

    def update_paths(self, paths: Sequence[str]) -> None:
        self.changed_calls.append(list(paths))


class RecordingGit:
    """Stands where the vault's git store does: records each commit and its author."""

    def __init__(self) -> None:
        self.commits: list[tuple[str, list[str], str | None, str | None]] = []

    def commit(
        self,
        message: str,
        paths: Sequence[str],
        *,
        author: Identity | None = None,
        grant_id: str | None = None,
    ) -> str:
        self.commits.append((message, list(paths), author.name if author else None, grant_id))
        return "0" * 40


def recorded(vault: Vault) -> tuple[RecordingIndex, RecordingGit]:
    index, git = RecordingIndex(), RecordingGit()
    vault.index, vault.git = index, git  # type: ignore[assignment]
    return index, git


def test_a_new_note_gets_created_and_updated(vault: Vault) -> None:
    result = edit.apply(vault, WriteOp("wiki/new", replace_with("# New\n")))
    on_disk = (vault.root / "wiki/new.md").read_text()
    assert on_disk == f"---\ncreated: {NOW}\nupdated: {NOW}\n---\n# New\n"
    assert result.created
    assert result.path == "wiki/new.md"
    assert result.content_hash == content_hash(on_disk.encode())
    assert result.bytes == len(on_disk.encode())
    assert result.diff.startswith("--- /dev/null\n+++ b/wiki/new.md\n")


def test_a_note_without_frontmatter_gets_none_from_an_edit(tmp_path: Path) -> None:
    vault = make_vault(tmp_path, {"x.md": "# Hand written\n"})
    edit.apply(vault, WriteOp("x.md", append("more\n")))
    assert (vault.root / "x.md").read_text() == "# Hand written\nmore\n"


def test_a_note_with_frontmatter_gets_updated_and_keeps_created(tmp_path: Path) -> None:
    vault = make_vault(
        tmp_path, {"x.md": "---\ntitle: X  # mine\ncreated: 2020-01-01\n---\nbody\n"}
    )
    edit.apply(vault, WriteOp("x.md", append("more\n")))
    assert (vault.root / "x.md").read_text() == (
        f"---\ntitle: X  # mine\ncreated: 2020-01-01\nupdated: {NOW}\n---\nbody\nmore\n"
    )


def test_skip_touch_leaves_created_and_updated_alone(tmp_path: Path) -> None:
    original = "---\ntitle: X\nupdated: 2020-01-01T00:00:00Z\n---\nbody\n"
    vault = make_vault(tmp_path, {"x.md": original})
    edit.apply(vault, WriteOp("x.md", append("more\n"), skip_touch=True))
    assert (vault.root / "x.md").read_text() == original + "more\n"


def test_the_right_hash_is_accepted_and_a_wrong_one_refused(tmp_path: Path) -> None:
    vault = make_vault(tmp_path, {"x.md": "body\n"})
    good = content_hash(b"body\n")
    with pytest.raises(HashMismatchError) as caught:
        edit.apply(vault, WriteOp("x.md", append("!"), expected_hash="0" * 32))
    assert caught.value.actual == good
    assert good in caught.value.message
    assert (vault.root / "x.md").read_text() == "body\n"
    edit.apply(vault, WriteOp("x.md", append("!\n"), expected_hash=good.upper()))
    assert (vault.root / "x.md").read_text() == "body\n!\n"


def test_a_hash_for_a_missing_note_means_not_found(vault: Vault) -> None:
    with pytest.raises(NoteNotFoundError):
        edit.apply(vault, WriteOp("missing.md", replace_with("x"), expected_hash="0" * 32))
    assert not (vault.root / "missing.md").exists()


def test_a_dry_run_writes_nothing_but_reports_the_diff(tmp_path: Path) -> None:
    vault = make_vault(tmp_path, {"x.md": "a\nb\n"})
    before = snapshot(vault.root)
    result = edit.apply(vault, WriteOp("x.md", replace_with("a\nc\n"), dry_run=True))
    assert snapshot(vault.root) == before
    assert result.dry_run
    assert result.message == "dry run: nothing was written"
    assert "-b\n+c\n" in result.diff
    assert result.content_hash == content_hash(b"a\nc\n")


def test_an_identical_result_is_no_change_and_writes_nothing(tmp_path: Path) -> None:
    vault = make_vault(tmp_path, {"x.md": "---\ntitle: X\n---\nbody\n"})
    index, git = recorded(vault)
    before = snapshot(vault.root)
    result = edit.apply(vault, WriteOp("x.md", lambda cur, _e: cur, reason="note_edit: x.md"))
    assert result.message == "no change"
    assert not result.changed
    assert result.diff == ""
    assert snapshot(vault.root) == before
    assert index.changed_calls == []
    assert git.commits == []


def test_an_overwrite_puts_the_old_bytes_in_the_trash_and_leaves_no_temp_file(
    tmp_path: Path,
) -> None:
    vault = make_vault(tmp_path, {"wiki/x.md": "old\n"})
    edit.apply(vault, WriteOp("wiki/x.md", replace_with("new\n")))
    (copy,) = trash_files(vault)
    assert copy.read_bytes() == b"old\n"
    assert copy.name.endswith("-wiki__x.md")
    assert not list(vault.root.rglob(".sbtmp-*"))


def test_two_copies_of_one_note_in_the_same_instant_both_survive(tmp_path: Path) -> None:
    vault = make_vault(tmp_path, {"x.md": "v0\n"})
    for i in range(1, 6):
        edit.apply(vault, WriteOp("x.md", replace_with(f"v{i}\n")))
    assert sorted(p.read_text() for p in trash_files(vault)) == [f"v{i}\n" for i in range(5)]


def test_crlf_and_bom_survive_an_edit(tmp_path: Path) -> None:
    vault = make_vault(tmp_path, {"x.md": "\ufeffline one\r\nline two\r\n".encode()})
    result = edit.apply(vault, WriteOp("x.md", append("line three\n")))
    assert (
        vault.root / "x.md"
    ).read_bytes() == "\ufeffline one\r\nline two\r\nline three\r\n".encode()
    added = [ln for ln in result.diff.splitlines() if ln.startswith("+") and ln[:3] != "+++"]
    assert added == ["+line three"]


def test_invalid_frontmatter_is_kept_verbatim_by_a_body_edit(tmp_path: Path) -> None:
    original = "---\ntitle: [broken\n---\nbody\n"
    vault = make_vault(tmp_path, {"x.md": original})
    edit.apply(vault, WriteOp("x.md", append("more\n")))
    assert (vault.root / "x.md").read_text() == original + "more\n"


def test_a_frontmatter_edit_on_invalid_yaml_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    vault = make_vault(tmp_path, {"x.md": "---\na: 1\na: 2\n---\nbody\n"})
    before = snapshot(vault.root)

    def set_title(cur: str, _exists: bool) -> str:
        return edit.edit_frontmatter(cur, "x.md", lambda fm: fm.set("title", "T"))

    with pytest.raises(FrontmatterError, match="duplicate"):
        edit.apply(vault, WriteOp("x.md", set_title))
    assert snapshot(vault.root) == before


def test_edit_frontmatter_adds_a_block_where_there_was_none() -> None:
    out = edit.edit_frontmatter("body\n", "x.md", lambda fm: fm.set("title", "T"))
    assert out == "---\ntitle: T\n---\nbody\n"


def test_a_note_that_is_not_utf8_is_refused_and_untouched(tmp_path: Path) -> None:
    vault = make_vault(tmp_path, {"x.md": b"caf\xe9\n"})
    before = snapshot(vault.root)
    with pytest.raises(EncodingError):
        edit.apply(vault, WriteOp("x.md", append("more")))
    assert snapshot(vault.root) == before


@pytest.mark.parametrize("dry_run", [False, True])
def test_text_with_a_lone_surrogate_is_refused_before_anything_is_written(
    tmp_path: Path, dry_run: bool
) -> None:
    vault = make_vault(tmp_path, {"a.md": "---\ntitle: A\n---\n# A\n"})
    before = snapshot(vault.root)
    for rel, transform in [("a.md", append("\udc80\n")), ("new.md", replace_with("# \ud83d\n"))]:
        with pytest.raises(InvalidTextError) as caught:
            edit.apply(vault, WriteOp(rel, transform, dry_run=dry_run, reason="x"))
        assert caught.value.code == "invalid_argument"
        assert rel in caught.value.message
    assert snapshot(vault.root) == before


def test_a_frontmatter_value_with_a_lone_surrogate_is_refused(tmp_path: Path) -> None:
    vault = make_vault(tmp_path, {"a.md": "---\ntitle: A\n---\n# A\n"})
    before = snapshot(vault.root)
    for change in ({"title": "x\udc80"}, {"tags": ["ok", "\udcff"]}, {"k\udc80": 1}):

        def transform(current: str, _exists: bool, change: dict[str, object] = change) -> str:
            return edit.edit_frontmatter(current, "a.md", lambda fm: fm.set(*change.popitem()))

        with pytest.raises(InvalidTextError):
            edit.apply(vault, WriteOp("a.md", transform))
    assert snapshot(vault.root) == before


def test_a_pipe_is_not_a_note_and_never_holds_the_reader(tmp_path: Path) -> None:
    vault = make_vault(tmp_path)
    os.mkfifo(vault.root / "pipe.md")
    with pytest.raises(InvalidPathError, match="not a regular file"):
        vault.read_note("pipe.md")  # returns at once: nobody ever writes the pipe
    with pytest.raises(InvalidPathError, match="not a regular file"):
        edit.apply(vault, WriteOp("pipe.md", replace_with("x")))
    assert (vault.root / "pipe.md").is_fifo()


def test_a_directory_is_not_a_note(tmp_path: Path) -> None:
    vault = make_vault(tmp_path)
    (vault.root / "folder.md").mkdir()
    with pytest.raises(NotAFileError):
        edit.apply(vault, WriteOp("folder.md", replace_with("x")))
    with pytest.raises(NotAFileError):
        vault.read_note("folder.md")


def test_a_note_over_4_mib_is_neither_read_nor_written(tmp_path: Path) -> None:
    vault = make_vault(tmp_path, {"big.md": b"x" * (NOTE_LIMIT + 1)})
    with pytest.raises(TooLargeError) as caught:
        vault.read_note("big.md")
    assert caught.value.limit == NOTE_LIMIT
    with pytest.raises(TooLargeError):
        edit.apply(vault, WriteOp("big.md", append("x")))


def test_a_result_over_4_mib_is_refused_before_anything_is_written(vault: Vault) -> None:
    with pytest.raises(TooLargeError):
        edit.apply(vault, WriteOp("huge.md", replace_with("x" * (NOTE_LIMIT + 1))))
    assert not (vault.root / "huge.md").exists()


def test_a_parent_that_is_a_file_is_a_clear_path_error(tmp_path: Path) -> None:
    vault = make_vault(tmp_path, {"a.md": "x\n"})
    before = snapshot(vault.root)
    with pytest.raises(InvalidPathError, match="parent of this path is a file"):
        edit.apply(vault, WriteOp("a.md/b.md", replace_with("y\n")))
    assert snapshot(vault.root) == before


def test_a_failed_rename_leaves_the_old_note_and_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault = make_vault(tmp_path, {"x.md": "old\n"})

    def broken_replace(self: Path, target: Path) -> Path:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "replace", broken_replace)
    with pytest.raises(Exception, match="No space left on device"):
        edit.apply(vault, WriteOp("x.md", replace_with("new\n")))
    monkeypatch.undo()
    assert (vault.root / "x.md").read_text() == "old\n"
    assert not list(vault.root.glob(".sbtmp-*"))


def test_a_write_updates_the_index_and_commits_as_its_tool_with_the_actor(vault: Vault) -> None:
    index, git = recorded(vault)
    actor = Actor("alice", grant_id="g-1")
    edit.apply(vault, WriteOp("x", replace_with("x\n"), commit_as="note_create"), actor)
    edit.apply(vault, WriteOp("y.md", replace_with("y\n")))
    edit.apply(vault, WriteOp("z.md", replace_with("z\n"), reason="note_restore: z.md to abc"))
    assert index.changed_calls == [["x.md"], ["y.md"], ["z.md"]]
    assert git.commits == [
        ("note_create: x.md", ["x.md"], "alice", "g-1"),
        ("note_restore: z.md to abc", ["z.md"], None, None),
    ]


def test_a_failed_index_update_and_commit_come_back_as_warnings_and_the_write_stands(
    tmp_path: Path,
) -> None:
    library = Library(tmp_path, Settings(watch=False)).open_all()
    opened = library.create("team", "empty")
    edit.apply(opened.vault, WriteOp("a.md", replace_with("a\n"), commit_as="t"))
    opened.index.close()  # a closed database: every update fails
    lock = opened.vault.root / ".git" / "refs" / "heads" / "main.lock"
    lock.touch()  # another git process moves the branch: this commit cannot
    result = edit.apply(opened.vault, WriteOp("x.md", replace_with("x\n"), commit_as="t"))
    lock.unlink()
    assert (opened.vault.root / "x.md").read_text().endswith("x\n")
    assert result.changed
    index_warning, git_warning = result.warnings
    assert index_warning.startswith("written, but the search index was not updated")
    assert git_warning.startswith("written, but not recorded in history")
    assert result.response()["warnings"] == result.warnings
    library.close()


def test_concurrent_writers_to_one_note_lose_no_update(vault: Vault) -> None:
    (vault.root / "log.md").write_text("start\n")
    threads = [
        threading.Thread(
            target=lambda i=i: [
                edit.apply(vault, WriteOp("log.md", append(f"t{i}-{n}\n"))) for n in range(10)
            ]
        )
        for i in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    lines = (vault.root / "log.md").read_text().splitlines()
    assert sorted(lines[1:]) == sorted(f"t{i}-{n}" for i in range(8) for n in range(10))


def test_delete_moves_the_note_to_the_trash_and_commits(tmp_path: Path) -> None:
    vault = make_vault(tmp_path, {"wiki/x.md": "bye\n"})
    index, git = recorded(vault)
    result = edit.delete(vault, "wiki/x", actor=Actor("bob"))
    assert result.deleted
    assert result.message == "moved to .secondbrain/trash"
    assert not (vault.root / "wiki/x.md").exists()
    assert [p.read_text() for p in trash_files(vault)] == ["bye\n"]
    assert index.changed_calls == [["wiki/x.md"]]
    assert git.commits == [("delete: wiki/x.md", ["wiki/x.md"], "bob", None)]


def test_delete_checks_the_hash_and_a_dry_run_deletes_nothing(tmp_path: Path) -> None:
    vault = make_vault(tmp_path, {"x.md": "keep\n"})
    before = snapshot(vault.root)
    with pytest.raises(HashMismatchError):
        edit.delete(vault, "x.md", expected_hash="f" * 32)
    result = edit.delete(vault, "x.md", dry_run=True)
    assert result.dry_run
    assert snapshot(vault.root) == before
    with pytest.raises(NoteNotFoundError):
        edit.delete(vault, "missing.md")


def test_move_refuses_an_existing_target_unless_overwrite_then_trashes_it(tmp_path: Path) -> None:
    vault = make_vault(tmp_path, {"a.md": "A\n", "b.md": "B\n"})
    with pytest.raises(NoteExistsError):
        edit.move(vault, "a.md", "b.md")
    with pytest.raises(InvalidPathError, match="same note"):
        edit.move(vault, "a.md", "a")
    edit.move(vault, "a.md", "b.md", overwrite=True)
    assert (vault.root / "b.md").read_text() == "A\n"
    assert not (vault.root / "a.md").exists()
    assert [p.read_text() for p in trash_files(vault)] == ["B\n"]


def test_move_into_a_new_folder_and_a_dry_run_that_moves_nothing(tmp_path: Path) -> None:
    vault = make_vault(tmp_path, {"inbox/a.md": "A\n"})
    before = snapshot(vault.root)
    edit.move(vault, "inbox/a.md", "wiki/deep/a.md", dry_run=True)
    assert snapshot(vault.root) == before
    edit.move(vault, "inbox/a.md", "wiki/deep/a.md")
    assert (vault.root / "wiki/deep/a.md").read_text() == "A\n"
    with pytest.raises(NoteNotFoundError):
        edit.move(vault, "inbox/a.md", "x.md")


def test_put_attachment_checks_type_and_size_and_trashes_an_overwrite(vault: Vault) -> None:
    with pytest.raises(AttachmentTypeError, match=r"\.png"):
        edit.put_attachment(vault, "attachments/run.sh", b"#!/bin/sh")
    with pytest.raises(TooLargeError):
        edit.put_attachment(vault, "attachments/big.pdf", b"x" * (ATTACHMENT_LIMIT + 1))
    edit.put_attachment(vault, "attachments/a.PNG", b"one")
    with pytest.raises(NoteExistsError):
        edit.put_attachment(vault, "attachments/a.PNG", b"two")
    edit.put_attachment(vault, "attachments/a.PNG", b"two", overwrite=True)
    assert (vault.root / "attachments/a.PNG").read_bytes() == b"two"
    assert [p.read_bytes() for p in trash_files(vault)] == [b"one"]


def test_the_response_shows_flags_only_when_they_apply(vault: Vault) -> None:
    result = edit.apply(vault, WriteOp("x.md", replace_with("x\n")))
    response = result.response()
    assert response["created"] is True
    assert "dry_run" not in response
    assert "deleted" not in response
    assert set(response) == {"path", "vault", "bytes", "content_hash", "created", "diff"}


def test_a_rewrite_that_drops_the_block_gets_created_back_and_updated(tmp_path: Path) -> None:
    vault = make_vault(
        tmp_path, {"x.md": "---\ntitle: X\ncreated: 2020-01-01T00:00:00Z\n---\nold\n"}
    )
    edit.apply(vault, WriteOp("x.md", replace_with("new body\n")))
    assert (vault.root / "x.md").read_text() == (
        f"---\ncreated: 2020-01-01T00:00:00Z\nupdated: {NOW}\n---\nnew body\n"
    )


def test_a_block_added_to_a_hand_written_note_gets_no_timestamps(tmp_path: Path) -> None:
    vault = make_vault(tmp_path, {"x.md": "# Hand written\n"})

    def tag(cur: str, _exists: bool) -> str:
        return edit.edit_frontmatter(cur, "x.md", lambda fm: fm.set("tags", ["a"]))

    edit.apply(vault, WriteOp("x.md", tag))
    assert (vault.root / "x.md").read_text() == "---\ntags:\n  - a\n---\n# Hand written\n"


BOMB = (
    "---\na0: &a0 [lol]\n"
    + "".join(f"a{n}: &a{n} [" + ", ".join([f"*a{n - 1}"] * 10) + "]\n" for n in range(1, 10))
    + "---\n"
)


def test_a_write_that_brings_an_alias_bomb_is_refused_and_nothing_changes(
    tmp_path: Path,
) -> None:
    vault = make_vault(tmp_path, {"x.md": "---\ntitle: X\n---\nbody\n"})
    before = snapshot(vault.root)
    for op in (
        WriteOp("x.md", replace_with(BOMB + "body\n")),
        WriteOp("new.md", replace_with(BOMB + "body\n")),
        WriteOp("x.md", replace_with(BOMB + "body\n"), skip_touch=True),
    ):
        with pytest.raises(FrontmatterError) as caught:
            edit.apply(vault, op)
        assert caught.value.code == "invalid_argument"
        assert "more than 5000 nodes, past the alias budget" in caught.value.message
    assert snapshot(vault.root) == before


def test_a_note_planted_with_a_bomb_still_takes_a_body_edit(tmp_path: Path) -> None:
    vault = make_vault(tmp_path, {"x.md": BOMB + "body\n"})
    result = edit.apply(vault, WriteOp("x.md", append("more\n")))
    assert result.changed
    assert (vault.root / "x.md").read_text() == BOMB + "body\nmore\n"


def test_what_a_transform_tells_beside_the_text_reaches_the_answer(vault: Vault) -> None:
    """A transform's extra fields are made under the lock from the text it changed, and come
    back in the answer whether the write ran, was a dry run or changed nothing."""

    def doubled(current: str, _exists: bool) -> edit.Edited:
        return edit.Edited(current + "x\n", {"lines_before": current.count("\n")})

    edit.apply(vault, WriteOp("n.md", replace_with("a\nb\n"), skip_touch=True))
    written = edit.apply(vault, WriteOp("n.md", doubled, skip_touch=True))
    assert written.response()["lines_before"] == 2
    assert (vault.root / "n.md").read_text() == "a\nb\nx\n"
    dry = edit.apply(vault, WriteOp("n.md", doubled, dry_run=True, skip_touch=True))
    assert (dry.dry_run, dry.response()["lines_before"]) == (True, 3)
    same = edit.apply(vault, WriteOp("n.md", lambda c, _e: edit.Edited(c, {"n": 0})))
    assert (same.changed, same.response()["n"]) == (False, 0)
