"""The watcher against real file changes: external edits reach search, bulk changes reconcile."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import watchfiles

from vault_core import paths, storage
from vault_core.index.store import Index
from vault_core.index.watch import MAX_PATHS, Watcher, plan, relevant
from vault_core.search import fts as search


def write_own(root: Path, rel: str, text: str) -> None:
    """Write as a write tool does: a temp file renamed into place (the index is told apart)."""
    resolved = paths.resolve(root, rel)
    storage.write_atomic(resolved, text.encode(), trash_from=None, state_dir=root / ".secondbrain")


def wait_for(condition: Callable[[], bool], timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


class Counting:
    """Wraps an index so a test can count full reconciles and single updates."""

    def __init__(self, index: Index) -> None:
        self.index = index
        self.reconciles = 0
        self.updates: list[list[str]] = []

    def reconcile(self) -> None:
        self.reconciles += 1
        self.index.reconcile()

    def update(self, rels: list[str]) -> None:
        self.updates.append(rels)
        self.index.update_paths(rels)


@pytest.fixture
def watched(tmp_path: Path) -> Iterator[tuple[Path, Counting, Watcher]]:
    root = tmp_path / "vault"
    (root / "wiki").mkdir(parents=True)
    (root / "wiki" / "a.md").write_text("# A\nalpha\n")
    index = Index.open(root, "vault")
    index.reconcile()
    counting = Counting(index)
    watcher = Watcher(root, "vault", counting.update, counting.reconcile, index.current).start()
    yield root, counting, watcher
    watcher.stop()
    index.close()


def hits(index: Index, query: str) -> list[str]:
    return [hit.path for hit in search.search(index, query).hits]


def settle(root: Path, counting: Counting, word: str) -> None:
    """Write a marker note and wait until search finds it: the watcher hands changes on in
    the order they happened, so every change made before the marker has been handled."""
    (root / f"{word}.md").write_text(f"# Marker\n{word}\n")
    assert wait_for(lambda: hits(counting.index, word) == [f"{word}.md"])


def test_an_external_edit_shows_up_in_search(watched: tuple[Path, Counting, Watcher]) -> None:
    root, counting, _ = watched
    (root / "wiki" / "a.md").write_text("# A\nzebracorn\n")
    assert wait_for(lambda: hits(counting.index, "zebracorn") == ["wiki/a.md"])
    assert counting.reconciles == 0


def test_an_external_delete_leaves_search(watched: tuple[Path, Counting, Watcher]) -> None:
    root, counting, _ = watched
    (root / "wiki" / "a.md").unlink()
    assert wait_for(lambda: hits(counting.index, "alpha") == [])


def test_a_git_checkout_of_100_files_triggers_one_reconcile(
    watched: tuple[Path, Counting, Watcher],
) -> None:
    root, counting, _ = watched
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(root)]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    subprocess.run([*git, "checkout", "-q", "-b", "bulk"], check=True)
    for i in range(100):
        (root / "wiki" / f"bulk-{i}.md").write_text(f"# Bulk {i}\nquokka{i}\n")
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "bulk"], check=True)
    subprocess.run([*git, "checkout", "-q", "main"], check=True)
    settle(root, counting, "markerbefore")
    counting.reconciles, counting.updates = 0, []
    subprocess.run([*git, "checkout", "-q", "bulk"], check=True)
    assert wait_for(lambda: search.search(counting.index, "quokka99").total == 1)
    settle(root, counting, "markerafter")  # no trailing batch of the checkout is still to come
    assert counting.reconciles == 1
    assert all(batch == ["markerafter.md"] for batch in counting.updates)


def test_a_new_folder_that_arrives_full_is_indexed_without_a_full_reconcile(
    watched: tuple[Path, Counting, Watcher], tmp_path: Path
) -> None:
    root, counting, _ = watched
    staging = tmp_path / "staging"
    (staging / "deeper").mkdir(parents=True)
    (staging / "inside.md").write_text("# Inside\nwombat\n")
    (staging / "deeper" / "below.md").write_text("# Below\nwallaby\n")
    staging.rename(root / "imported")
    assert wait_for(lambda: hits(counting.index, "wombat") == ["imported/inside.md"])
    assert wait_for(lambda: hits(counting.index, "wallaby") == ["imported/deeper/below.md"])
    settle(root, counting, "markerfolder")
    assert counting.reconciles == 0


def test_a_note_created_in_a_new_folder_updates_only_that_note(
    watched: tuple[Path, Counting, Watcher],
) -> None:
    root, counting, _ = watched
    (root / "projects" / "fresh").mkdir(parents=True)
    (root / "projects" / "fresh" / "idea.md").write_text("# Idea\nnarwhal\n")
    assert wait_for(lambda: hits(counting.index, "narwhal") == ["projects/fresh/idea.md"])
    settle(root, counting, "markernew")
    assert counting.reconciles == 0
    assert {p for batch in counting.updates for p in batch} <= {
        "projects/fresh/idea.md",
        "markernew.md",
    }


def test_a_new_folder_of_more_than_50_files_is_a_full_reconcile(
    watched: tuple[Path, Counting, Watcher], tmp_path: Path
) -> None:
    root, counting, _ = watched
    staging = tmp_path / "bulk"
    staging.mkdir()
    for i in range(MAX_PATHS + 1):
        (staging / f"n{i}.md").write_text(f"# N{i}\nokapi{i}\n")
    staging.rename(root / "bulk")
    assert wait_for(lambda: search.search(counting.index, f"okapi{MAX_PATHS}").total == 1)
    assert counting.reconciles == 1


def test_a_burst_of_60_own_writes_never_reconciles(
    watched: tuple[Path, Counting, Watcher],
) -> None:
    root, counting, _ = watched
    (root / "wiki" / "a.md").unlink()
    counting.index.update_path("wiki/a.md")  # a tool's delete: gone from disk and index
    for i in range(MAX_PATHS + 10):
        # As a write tool does: the file through a temp file, then the index takes it in.
        write_own(root, f"wiki/own-{i}.md", f"# Own {i}\nibex{i}\n")
        counting.index.update_path(f"wiki/own-{i}.md")
    settle(root, counting, "markerown")
    assert counting.reconciles == 0
    assert search.search(counting.index, f"ibex{MAX_PATHS + 9}").total == 1


def test_a_burst_of_61_outside_writes_reconciles_once(
    watched: tuple[Path, Counting, Watcher],
) -> None:
    root, counting, _ = watched
    settle(root, counting, "markerquiet")
    counting.reconciles = 0
    for i in range(MAX_PATHS + 11):
        (root / "wiki" / f"theirs-{i}.md").write_text(f"# Theirs {i}\nyak{i}\n")
    assert wait_for(lambda: search.search(counting.index, f"yak{MAX_PATHS + 10}").total == 1)
    settle(root, counting, "markertheirs")
    assert counting.reconciles >= 1


def test_plan_leaves_out_what_the_index_holds_as_it_is(tmp_path: Path) -> None:
    index = Index.open(tmp_path, "vault")
    try:
        own = [f"own/n{i}.md" for i in range(MAX_PATHS + 10)]
        for rel in own:
            write_own(tmp_path, rel, f"# {rel}\n")
        index.update_paths(own)
        (tmp_path / "own" / "n0.md").write_text("# changed behind the index's back\n")
        (tmp_path / "gone.md").write_text("# gone\n")
        index.update_path("gone.md")
        (tmp_path / "gone.md").unlink()
        changes = {(watchfiles.Change.modified, str(tmp_path / rel)) for rel in own}
        changes |= {(watchfiles.Change.deleted, str(tmp_path / "gone.md"))}
        changes |= {(watchfiles.Change.deleted, str(tmp_path / "never.md"))}
        assert plan(tmp_path, changes, index.current) == ["gone.md", "own/n0.md"]
        assert plan(
            tmp_path, {(watchfiles.Change.added, str(tmp_path / "own"))}, index.current
        ) == ["own/n0.md"]
        assert plan(tmp_path, changes) is None
    finally:
        index.close()


def test_dot_paths_and_own_temp_files_are_ignored(watched: tuple[Path, Counting, Watcher]) -> None:
    root, counting, _ = watched
    (root / ".obsidian").mkdir()
    (root / ".obsidian" / "workspace.json").write_text("{}")
    (root / "wiki" / ".sbtmp-abc").write_text("half written")
    (root / "wiki" / "b.md").write_text("# B\nbeta\n")
    assert wait_for(lambda: hits(counting.index, "beta") == ["wiki/b.md"])
    assert all(".sbtmp" not in p and ".obsidian" not in p for u in counting.updates for p in u)


def test_what_the_watcher_sees_through_a_link_into_git_is_never_indexed(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "config").write_text("[remote]\n")
    (root / "git").symlink_to(".git", target_is_directory=True)  # there before the watch
    index = Index.open(root, "vault")
    index.reconcile()
    counting = Counting(index)
    watcher = Watcher(root, "vault", counting.update, counting.reconcile).start()
    try:
        (root / ".git" / "config").write_text("[remote]\nurl = x\n")
        (root / ".git" / "new-object").write_text("x")
        (root / "c.md").write_text("# C\ngamma\n")
        assert wait_for(lambda: hits(index, "gamma") == ["c.md"])
        with index.reading() as conn:
            indexed = [p for (p,) in conn.execute("SELECT path FROM notes ORDER BY path")]
        assert indexed == ["c.md"]
        assert watcher.alive
    finally:
        watcher.stop()
        index.close()


def test_plan_asks_for_a_reconcile_over_50_paths(tmp_path: Path) -> None:
    few = {(watchfiles.Change.modified, str(tmp_path / f"n{i}.md")) for i in range(MAX_PATHS)}
    assert plan(tmp_path, few) == sorted(f"n{i}.md" for i in range(MAX_PATHS))
    many = few | {(watchfiles.Change.modified, str(tmp_path / "one-more.md"))}
    assert plan(tmp_path, many) is None


def test_relevant_drops_dot_segments_and_paths_outside(tmp_path: Path) -> None:
    assert relevant(tmp_path, str(tmp_path / "a" / "b.md")) == "a/b.md"
    assert relevant(tmp_path, str(tmp_path / ".git" / "index")) is None
    assert relevant(tmp_path, str(tmp_path / "a" / ".sbtmp-1")) is None
    assert relevant(tmp_path, "/elsewhere/x.md") is None


def test_a_watcher_that_cannot_watch_fails_softly(tmp_path: Path) -> None:
    watcher = Watcher(tmp_path / "missing", "gone", lambda _r: None, lambda: None).start()
    assert wait_for(lambda: not watcher.alive)
    assert watcher.failed is not None
    watcher.stop()


def test_a_name_that_is_not_utf8_is_skipped_and_the_watch_goes_on(
    watched: tuple[Path, Counting, Watcher],
) -> None:
    # watchfiles cannot hand such a name to Python: it ended the whole watch with its batch.
    root, counting, watcher = watched
    with open(os.fsencode(root / "wiki") + b"/caf\xe9.md", "wb") as handle:
        handle.write(b"# Latin-1 name\n")
    settle(root, counting, "heliotrope")  # a note made after it reaches search
    assert watcher.alive
    assert watcher.failed is None
    skipped = [skip.row() for skip in counting.index.skips.listing()]
    assert skipped == [{"path": "wiki/caf\\xe9.md", "reason": "bad_name"}]
