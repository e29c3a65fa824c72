"""The watcher against real file changes: external edits reach search, bulk changes reconcile."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import watchfiles

from vault_core import search
from vault_core.index import Index
from vault_core.watch import MAX_PATHS, Watcher, plan, relevant


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
    watcher = Watcher(root, "vault", counting.update, counting.reconcile).start()
    yield root, counting, watcher
    watcher.stop()
    index.close()


def hits(index: Index, query: str) -> list[str]:
    return [hit.path for hit in search.search(index, query).hits]


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
    time.sleep(1.0)
    counting.reconciles, counting.updates = 0, []
    subprocess.run([*git, "checkout", "-q", "bulk"], check=True)
    assert wait_for(lambda: search.search(counting.index, "quokka99").total == 1)
    time.sleep(1.0)  # let any trailing batch arrive before counting
    assert counting.reconciles == 1
    assert counting.updates == []


def test_a_new_folder_that_arrives_full_is_reconciled(
    watched: tuple[Path, Counting, Watcher], tmp_path: Path
) -> None:
    root, counting, _ = watched
    staging = tmp_path / "staging"
    staging.mkdir()
    (staging / "inside.md").write_text("# Inside\nwombat\n")
    staging.rename(root / "imported")
    assert wait_for(lambda: hits(counting.index, "wombat") == ["imported/inside.md"])
    assert counting.reconciles >= 1


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
