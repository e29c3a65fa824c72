"""A data directory of vaults, each opened with index, git and watcher working together."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from vault_core import deadline, edit, testing
from vault_core import library as library_module
from vault_core.edit import WriteOp
from vault_core.errors import NotFoundError, VaultExistsError, VersioningOffError
from vault_core.library import RECOVERED, Library, OpenVault, Settings, VaultOpeningError
from vault_core.ops import move
from vault_core.search import answers as queries
from vault_core.search import fts as search
from vault_core.vault import Actor
from vault_core.verbs import Verbs


@pytest.fixture
def library(tmp_path: Path) -> Iterator[Library]:
    lib = Library(tmp_path / "data", Settings(watch=False)).open_all()
    yield lib
    lib.close()


def git_log(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), "log", *args], capture_output=True, text=True, check=True
    ).stdout


def uncommitted(root: Path) -> list[str]:
    """Paths of the vault (no dot segment) whose working-tree state git has not committed."""
    lines = subprocess.run(
        ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=all"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    paths = [line[3:] for line in lines]
    return [p for p in paths if not any(part.startswith(".") for part in p.split("/"))]


def test_an_empty_data_dir_gets_a_default_wiki_raw_vault(library: Library) -> None:
    assert library.names() == ["default"]
    opened = library.get("default")
    assert (opened.vault.root / "wiki" / ".gitkeep").is_file()
    assert (opened.vault.root / ".gitignore").read_text().count(".secondbrain/") == 1
    assert git_log(opened.vault.root, "--format=%s") == "create: default\n"


def test_existing_vault_folders_are_opened_and_invalid_names_ignored(tmp_path: Path) -> None:
    data = tmp_path / "data"
    for name in ("team", "ops", "Not A Vault", ".hidden"):
        (data / name).mkdir(parents=True)
    (data / "team" / "x.md").write_text("# X\nhello\n")
    lib = Library(data, Settings(watch=False)).open_all()
    try:
        assert lib.names() == ["ops", "team"]
        assert search.search(lib.get("team").index, "hello").total == 1
        team = lib.get("team")
        assert git_log(team.vault.root, "--format=%s") == "import: 1 files already in the folder\n"
        assert [r.message for r in team.history().history("x.md")] == [
            "import: 1 files already in the folder"
        ]
        assert not (data / "ops" / ".git" / "refs" / "heads" / "main").exists()
    finally:
        lib.close()


def test_an_unknown_vault_is_not_found(library: Library) -> None:
    with pytest.raises(NotFoundError, match="unknown vault"):
        library.get("nope")


def test_a_write_updates_the_index_and_commits_attributed(library: Library) -> None:
    opened = library.get("default")
    actor = Actor("alice", grant_id="grant-7")
    edit.apply(
        opened.vault,
        WriteOp(
            "wiki/topic",
            lambda _c, _e: "# Topic\nsee [[Missing]]\n",
            reason="note_create: wiki/topic.md",
        ),
        actor,
    )
    assert [h.path for h in search.search(opened.index, "topic").hits] == ["wiki/topic.md"]
    assert queries.stats(opened.index)["broken_links"] == 1
    log = git_log(opened.vault.root, "-1", "--format=%an|%cn|%B")
    assert log.startswith("alice|secondbrain|note_create: wiki/topic.md\n")
    assert "Secondbrain-Grant: grant-7" in log
    revisions = opened.history().history("wiki/topic.md")
    assert [r.author for r in revisions] == ["alice"]


def test_a_write_a_crash_kept_out_of_history_is_committed_when_the_vault_opens(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    first = Library(data, Settings(watch=False)).open_all()
    root = first.get("default").vault.root
    for rel in ("wiki/kept.md", "wiki/gone.md"):
        edit.apply(first.get("default").vault, WriteOp(rel, lambda _c, _e: "# note\n", reason="x"))
    first.close()
    # What a SIGKILL between the file write and the commit leaves: disk ahead of history.
    (root / "wiki" / "kept.md").write_text("# note, edited\n")
    (root / "raw" / "late.md").write_text("# late\n")
    (root / "wiki" / "gone.md").unlink()
    lock = root / ".git" / "refs" / "heads" / "main.lock"  # a kill during a ref update
    lock.write_text("")
    os.utime(lock, (1e9, 1e9))
    before = git_log(root, "--format=%H").split()
    again = Library(data, Settings(watch=False)).open_all()
    again.close()
    log = git_log(root, "--format=%an|%cn|%s").splitlines()
    assert len(log) == len(before) + 1
    assert log[0] == f"secondbrain|secondbrain|recover: {RECOVERED}"
    assert uncommitted(root) == []
    Library(data, Settings(watch=False)).open_all().close()  # nothing new: no second commit
    assert len(git_log(root, "--format=%H").split()) == len(before) + 1


def test_creating_a_vault_twice_is_refused(library: Library) -> None:
    library.create("team", "para")
    assert "team" in library.names()
    with pytest.raises(VaultExistsError):
        library.create("team", "para")


def test_a_vault_without_usable_git_still_works_with_versioning_off(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "broken").mkdir(parents=True)
    (data / "broken" / ".git").write_text("not a repository")
    (data / "broken" / "x.md").write_text("# X\n")
    lib = Library(data, Settings(watch=False)).open_all()
    try:
        opened = lib.get("broken")
        assert opened.git is None
        with pytest.raises(VersioningOffError, match="versioning is off"):
            opened.history()
        edit.apply(
            opened.vault, WriteOp("y.md", lambda _c, _e: "# Y\n", reason="note_create: y.md")
        )
        assert search.search(opened.index, "Y").total == 1
    finally:
        lib.close()


def test_git_can_be_switched_off(tmp_path: Path) -> None:
    lib = Library(tmp_path / "data", Settings(git=False, watch=False)).open_all()
    try:
        opened = lib.get("default")
        assert not (opened.vault.root / ".git").exists()
        with pytest.raises(VersioningOffError):
            opened.history()
    finally:
        lib.close()


def test_restore_writes_an_old_revision_back_through_the_write_path(library: Library) -> None:
    opened = library.get("default")
    vault = opened.vault
    first = edit.apply(
        vault, WriteOp("n.md", lambda _c, _e: "# N\nfirst\n", reason="note_create: n.md")
    )
    edit.apply(
        vault, WriteOp("n.md", lambda c, _e: c.replace("first", "second"), reason="note_edit: n.md")
    )
    (old, *_rest) = reversed(opened.history().history("n.md"))
    preview = opened.restore("n", old.commit, dry_run=True)
    assert preview.dry_run
    assert "second" in (vault.root / "n.md").read_text()
    result = opened.restore("n", old.commit, actor=Actor("carol"))
    assert (vault.root / "n.md").read_bytes().decode() == first.text
    assert result.response()["restored_from"] == old.commit
    assert search.search(opened.index, "first").total == 1
    log = git_log(vault.root, "-1", "--format=%an|%s")
    assert log == f"carol|restore: n.md to {old.commit}\n"
    trash = list((vault.root / ".secondbrain" / "trash").iterdir())
    assert any("second" in p.read_text() for p in trash)


def test_a_vault_folder_made_after_start_opens_on_first_use(
    library: Library, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(library_module, "OPEN_WAIT", 3600.0)  # a loaded machine is slow
    (library.data_dir / "later").mkdir()
    (library.data_dir / "later" / "x.md").write_text("# Later\nfound\n")
    opened = library.get("later")
    assert search.search(opened.index, "found").total == 1
    assert library.get("later") is opened
    with pytest.raises(NotFoundError):
        library.get("Not-Valid")


def test_open_new_begins_opening_the_vault_folders_added_since(library: Library) -> None:
    """What the node's scan calls: new folders are listed at once and open in the
    background; a name that is no vault name, a symbolic link and a held vault are not."""
    (library.data_dir / "later").mkdir()
    (library.data_dir / "later" / "x.md").write_text("# Later\nfound\n")
    (library.data_dir / "Not Valid").mkdir()
    (library.data_dir / "linked").symlink_to(library.data_dir / "later")
    assert library.open_new() == ["later"]
    assert library.names() == ["default", "later"]
    assert library.open_new() == []
    assert library.settle(3600.0) == []
    assert search.search(library.get("later").index, "found").total == 1


def test_fresh_without_a_watcher_reconciles_at_most_once_in_a_burst(library: Library) -> None:
    opened = library.get("default")
    (opened.vault.root / "new.md").write_text("# New\nburst\n")
    opened.fresh(max_age=0.0)
    assert search.search(opened.index, "burst").total == 1
    (opened.vault.root / "newer.md").write_text("# Newer\nsecond\n")
    opened.fresh(max_age=3600.0)
    assert search.search(opened.index, "second").total == 0


def test_the_git_token_never_shows_in_a_repr() -> None:
    assert "s3cret-token" not in repr(Settings(git_token="s3cret-token"))


def test_a_vault_holding_hostile_files_opens_reports_them_and_keeps_committing(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    Library(data, Settings(watch=False)).open_all().close()
    root = data / "default"
    expected = testing.plant_hostile_files(root)
    with capture_logs() as logs:
        again = Library(data, Settings(watch=False)).open_all()
    try:
        opened = again.get("default")
        assert {item.path: item.reason for item in opened.index.skips.listing()} == expected
        op = WriteOp("wiki/after.md", lambda _c, _e: "# After\n\nstill written\n", reason="x")
        edit.apply(opened.vault, op)
        assert git_log(root, "-1", "--format=%s", "--name-only").split() == ["x", "wiki/after.md"]
        assert [h.path for h in search.search(opened.index, "still written").hits] == [
            "wiki/after.md"
        ]
        assert queries.stats(opened.index)["skipped"] == len(expected)
    finally:
        again.close()
    assert str(tmp_path) not in json.dumps(logs, default=str)


@pytest.fixture
def held_open() -> Iterator[threading.Event]:
    """Opening the vault named `big` waits until the event is set (a first index of hours)."""
    with testing.held_open("big") as release:
        yield release


def test_a_vault_being_opened_holds_up_no_call_to_another(
    library: Library, held_open: threading.Event, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(library_module, "OPEN_WAIT", 0.05)
    (library.data_dir / "big").mkdir()
    (library.data_dir / "big" / "x.md").write_text("# Big\nfound\n")
    with pytest.raises(VaultOpeningError, match="still being opened") as caught:
        library.get("big")
    assert caught.value.code == "timeout"
    assert library.names() == ["big", "default"]
    answered: list[OpenVault] = []
    other = threading.Thread(target=lambda: answered.append(library.get("default")))
    other.start()
    other.join()  # would wait for the open of big if that held the library's lock
    assert answered == [library.get("default")]
    held_open.set()
    monkeypatch.setattr(library_module, "OPEN_WAIT", 3600.0)
    opened = library.get("big")
    assert search.search(opened.index, "found").total == 1
    assert library.get("big") is opened


def test_a_call_waits_for_an_opening_vault_no_longer_than_its_deadline(
    library: Library, held_open: threading.Event, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(library_module, "OPEN_WAIT", 3600.0)  # the deadline comes first
    (library.data_dir / "big").mkdir()
    with deadline.Limit(0.05).active(), pytest.raises(VaultOpeningError):
        library.get("big")


def test_a_failed_open_reaches_the_caller_and_the_next_call_tries_again(
    library: Library, monkeypatch: pytest.MonkeyPatch
) -> None:
    real, calls = OpenVault.open, []

    def failing_once(root: Path, name: str, *args: Any, **kwargs: Any) -> OpenVault:
        calls.append(name)
        if len(calls) == 1:
            raise OSError(5, "Input/output error")
        return real(root, name, *args, **kwargs)

    monkeypatch.setattr(OpenVault, "open", failing_once)
    (library.data_dir / "flaky").mkdir()
    with capture_logs() as logs, pytest.raises(OSError, match="Input/output"):
        library.get("flaky")
    assert [e["event"] for e in logs if e.get("vault") == "flaky"] == ["vault_open_failed"]
    assert library.get("flaky").name == "flaky"
    assert calls == ["flaky", "flaky"]


def test_opening_in_the_background_lists_the_vaults_at_once_and_close_waits(
    tmp_path: Path, held_open: threading.Event, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(library_module, "OPEN_WAIT", 0.05)
    data = tmp_path / "data"
    for name in ("big", "small"):
        (data / name).mkdir(parents=True)
        (data / name / "n.md").write_text(f"# {name}\n")
    lib = Library(data, Settings(watch=False)).open_all(background=True)
    try:
        assert lib.names() == ["big", "small"]
        with pytest.raises(VaultOpeningError):
            lib.get("big")
        monkeypatch.setattr(library_module, "OPEN_WAIT", 3600.0)
        assert lib.get("small").name == "small"  # ready while big is still being opened
        assert lib.names() == ["big", "small"]
        held_open.set()
    finally:
        lib.close()
    assert lib.names() == []


def test_settle_waits_a_bounded_time_and_names_what_is_still_opening(
    tmp_path: Path, held_open: threading.Event
) -> None:
    data = tmp_path / "data"
    for name in ("big", "small"):
        (data / name).mkdir(parents=True)
        (data / name / "n.md").write_text(f"# {name}\n")
    lib = Library(data, Settings(watch=False)).open_all(background=True)
    try:
        assert lib.ready("big") is None  # neither waits nor starts an open
        assert lib.settle(0.2) == ["big"]
        assert lib.opening() == ["big"]
        small = lib.ready("small")
        assert small is not None
        assert small.name == "small"
        held_open.set()
        assert lib.settle(3600.0) == []
        assert lib.opening() == []
        assert lib.ready("big") is lib.get("big")
    finally:
        lib.close()


def test_settle_raises_the_error_of_a_vault_that_failed_to_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(root: Path, name: str, *args: Any, **kwargs: Any) -> OpenVault:
        raise OSError(5, "Input/output error")

    (tmp_path / "data" / "bad").mkdir(parents=True)
    monkeypatch.setattr(OpenVault, "open", broken)
    lib = Library(tmp_path / "data", Settings(watch=False)).open_all(background=True)
    try:
        with pytest.raises(OSError, match="Input/output"):
            lib.settle(3600.0)
        assert lib.ready("bad") is None
    finally:
        lib.close()


def test_every_commit_vault_core_makes_begins_with_the_verb_it_was_given(tmp_path: Path) -> None:
    verbs = Verbs(create="made", delete="gone", move="went", attach="filed")
    lib = Library(tmp_path / "data", Settings(watch=False, verbs=verbs)).open_all()
    try:
        opened = lib.get("default")
        vault = opened.vault
        assert vault.verbs is verbs
        edit.apply(vault, WriteOp("a.md", lambda _c, _e: "# A\n", commit_as="wrote"))
        move.move_note(vault, opened.index, "a.md", "b.md")
        edit.put_attachment(vault, "p.png", b"\x89PNG....")
        edit.delete(vault, "b.md")
        subjects = git_log(vault.root, "--format=%s").splitlines()
    finally:
        lib.close()
    assert subjects == [
        "gone: b.md",
        "filed: p.png",
        "went: a.md -> b.md",
        "wrote: a.md",
        "made: default",
    ]
