"""Per-vault git history: real repositories in tmp_path, checked against the git CLI."""

from __future__ import annotations

import base64
import os
import re
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog
from dulwich import index as dulwich_index
from dulwich.objects import Blob, Commit, Tree
from dulwich.repo import Repo

from vault_core import errors
from vault_core.errors import (
    InvalidPathError,
    NotFoundError,
    StorageError,
    UnknownRevisionError,
    VersioningOffError,
)
from vault_core.git import _index as _gitindex
from vault_core.git import _pack as _gitpack
from vault_core.git import store as gitstore
from vault_core.git.store import GITIGNORE_LINES, GitStore, Identity
from vault_core.testing import unprivileged

NODE = Identity("node", "node@example.org")
ALICE = Identity("alice", "alice@example.org")


@pytest.fixture(autouse=True)
def _isolated_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Neither git nor dulwich may read the machine's or the user's configuration."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("TZ", "UTC")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "vault"
    path.mkdir()
    return path


@pytest.fixture
def store(root: Path) -> Iterator[GitStore]:
    opened = GitStore.open(root, "notes", committer=NODE)
    yield opened
    opened.close()


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)
    return done.stdout


def write(root: Path, rel: str, text: str) -> str:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return rel


def committed(store: GitStore, root: Path, rel: str, text: str, message: str = "edit") -> str:
    sha = store.commit(f"{message}: {rel}", [write(root, rel, text)])
    assert sha is not None
    return sha


# ------------------------------------------------------------------ open


def test_open_creates_a_repository_on_main_with_the_node_gitignore(root: Path) -> None:
    GitStore.open(root, "notes", committer=NODE).close()
    assert (root / ".gitignore").read_text().splitlines() == list(GITIGNORE_LINES)
    assert git(root, "symbolic-ref", "HEAD").strip() == "refs/heads/main"


def test_open_keeps_an_existing_gitignore_and_appends_only_missing_lines(root: Path) -> None:
    (root / ".gitignore").write_text("*.tmp\n.DS_Store")
    GitStore.open(root, "notes", committer=NODE).close()
    assert (root / ".gitignore").read_text() == (
        "*.tmp\n.DS_Store\n.secondbrain/\n.obsidian/workspace*.json\n"
    )


def test_reopening_keeps_history_and_leaves_gitignore_alone(root: Path, store: GitStore) -> None:
    sha = committed(store, root, "a.md", "one\n")
    store.close()
    (root / ".gitignore").write_text("mine\n")
    again = GitStore.open(root, "notes", committer=NODE)
    try:
        assert [r.commit for r in again.history("a.md")] == [sha[:12]]
    finally:
        again.close()
    assert (root / ".gitignore").read_text() == "mine\n"


@pytest.mark.parametrize(
    "damage", ["garbage_head", "git_is_a_file", "no_objects", "root_is_a_file", "garbage_index"]
)
def test_an_unusable_repository_turns_versioning_off(tmp_path: Path, damage: str) -> None:
    root = tmp_path / "vault"
    root.mkdir()
    if damage == "root_is_a_file":
        root.rmdir()
        root.write_text("not a directory")
    elif damage == "git_is_a_file":
        (root / ".git").write_text("garbage\n")
    else:
        GitStore.open(root, "notes", committer=NODE).close()
        if damage == "garbage_head":
            (root / ".git" / "HEAD").write_text("garbage\n")
        elif damage == "garbage_index":
            (root / ".git" / "index").write_bytes(b"garbage" * 20)
        else:
            subprocess.run(["rm", "-r", str(root / ".git" / "objects")], check=True)
    with pytest.raises(VersioningOffError) as caught:
        GitStore.open(root, "notes", committer=NODE)
    assert caught.value.code == "versioning_off"
    assert str(tmp_path) not in caught.value.message


# ------------------------------------------------------------------ commit


def test_first_commit_also_takes_the_gitignore(root: Path, store: GitStore) -> None:
    committed(store, root, "a.md", "one\n")
    assert git(root, "ls-files").split() == [".gitignore", "a.md"]
    assert git(root, "status", "--porcelain") == ""


def test_a_commit_stages_only_the_named_paths(root: Path, store: GitStore) -> None:
    store.commit("create", [write(root, "a.md", "a\n"), write(root, "b.md", "b\n")])
    write(root, "a.md", "a2\n")
    write(root, "b.md", "b2\n")
    write(root, "c.md", "c\n")
    sha = store.commit("note_edit: a.md", ["a.md"])
    assert sha is not None
    assert git(root, "status", "--porcelain").splitlines() == [" M b.md", "?? c.md"]
    assert git(root, "show", "--name-only", "--format=", sha).split() == ["a.md"]
    assert git(root, "show", f"{sha}:a.md") == "a2\n"


def test_a_deleted_path_is_removed_from_the_repository(root: Path, store: GitStore) -> None:
    committed(store, root, "a.md", "a\n")
    (root / "a.md").unlink()
    assert store.commit("note_delete: a.md", ["a.md"]) is not None
    assert "a.md" not in git(root, "ls-files").split()
    assert git(root, "status", "--porcelain") == ""


def test_a_deleted_folder_is_removed_with_everything_below_it(root: Path, store: GitStore) -> None:
    store.commit("create", [write(root, "f/x.md", "x\n"), write(root, "f/g/y.md", "y\n")])
    subprocess.run(["rm", "-r", str(root / "f")], check=True)
    assert store.commit("folder_delete: f", ["f"]) is not None
    assert git(root, "ls-files").split() == [".gitignore"]
    assert git(root, "status", "--porcelain") == ""


def test_a_new_file_replaces_a_tracked_file_in_the_way_of_its_folder(
    root: Path, store: GitStore
) -> None:
    committed(store, root, "a", "file\n")
    (root / "a").unlink()
    assert store.commit("note_create: a/b.md", [write(root, "a/b.md", "b\n")]) is not None
    assert git(root, "ls-files").split() == [".gitignore", "a/b.md"]
    git(root, "fsck", "--strict")


def test_nothing_to_commit_returns_none_and_keeps_head(root: Path, store: GitStore) -> None:
    sha = committed(store, root, "a.md", "a\n")
    assert store.commit("again", ["a.md"]) is None
    assert store.commit("gone", ["never-existed.md"]) is None
    assert store.commit("empty", []) is None
    assert git(root, "rev-parse", "HEAD").strip() == sha


def test_an_ignored_untracked_path_is_skipped(root: Path, store: GitStore) -> None:
    write(root, ".secondbrain/index.db", "cache")
    store.commit("create", [".secondbrain/index.db", write(root, "a.md", "a\n")])
    assert git(root, "ls-files").split() == [".gitignore", "a.md"]


def test_the_message_is_one_line_of_140_characters_with_the_grant_trailer(
    root: Path, store: GitStore
) -> None:
    message = "note_edit: a.md\nsecond line " + "x" * 200
    store.commit(message, [write(root, "a.md", "a\n")], grant_id="grant-42")
    subject = ("note_edit: a.md second line " + "x" * 200)[:140]
    assert git(root, "log", "-1", "--format=%B") == f"{subject}\n\nSecondbrain-Grant: grant-42\n\n"
    trailer = git(root, "log", "-1", "--format=%(trailers:key=Secondbrain-Grant,valueonly)")
    assert trailer.strip() == "grant-42"


def test_without_a_grant_the_message_has_no_trailer(root: Path, store: GitStore) -> None:
    store.commit("note_create: a.md", [write(root, "a.md", "a\n")])
    assert git(root, "log", "-1", "--format=%B") == "note_create: a.md\n\n"


def test_the_author_is_the_caller_and_the_committer_the_node(root: Path, store: GitStore) -> None:
    store.commit("one", [write(root, "a.md", "a\n")], author=ALICE)
    fmt = "--format=%an|%ae|%cn|%ce"
    assert git(root, "log", "-1", fmt).strip() == "alice|alice@example.org|node|node@example.org"
    store.commit("two", [write(root, "a.md", "b\n")])
    assert git(root, "log", "-1", fmt).strip() == "node|node@example.org|node|node@example.org"


def test_paths_outside_the_vault_are_refused(store: GitStore) -> None:
    for bad in ["../x.md", "/etc/passwd", "a//b.md", "./a.md", ".git/config", "x/.GIT/y", ""]:
        with pytest.raises(InvalidPathError):
            store.commit("bad", [bad])


def test_a_path_that_cannot_be_committed_is_left_out_and_the_others_are_committed(
    root: Path, store: GitStore
) -> None:
    committed(store, root, "first.md", "one\n")
    write(root, "good.md", "good\n")
    (root / write(root, "locked.md", "locked\n")).chmod(0)
    (root / "links").mkdir()
    (root / "links" / "git").symlink_to("../.git", target_is_directory=True)
    with open(os.fsencode(root) + b"/bad-\x80.md", "wb") as out:  # a bytes name
        out.write(b"bad name\n")
    wanted = ["good.md", "locked.md", "bad-\udc80.md", "links/git/config", "links/git/HEAD"]
    with structlog.testing.capture_logs() as logs, unprivileged():
        sha = store.commit("several", wanted)
    assert sha is not None
    assert git(root, "show", "--name-only", "--format=", sha).split() == ["good.md"]
    skipped = {(e["path"], e["reason"]) for e in logs if e["event"] == "git_path_skipped"}
    assert skipped == {
        ("locked.md", "unreadable"), ("bad-\\x80.md", "bad_name"),
        ("links/git/config", "symlink_parent"), ("links/git/HEAD", "symlink_parent"),
    }  # fmt: skip
    assert str(root) not in repr(logs)
    (root / "locked.md").chmod(0o644)
    assert store.commit("later", ["locked.md"]) is not None  # left out before, not lost


def test_a_path_staged_with_git_itself_stays_out_of_the_commit(root: Path, store: GitStore) -> None:
    committed(store, root, "a.md", "a\n")
    write(root, "b.md", "b\n")
    git(root, "add", "b.md")
    sha = committed(store, root, "a.md", "a2\n")
    assert git(root, "show", "--name-only", "--format=", sha).split() == ["a.md"]
    assert git(root, "status", "--porcelain").splitlines() == ["A  b.md"]


def test_an_index_that_git_rewrote_in_version_4_is_reloaded(root: Path, store: GitStore) -> None:
    store.commit("create", [write(root, "a.md", "a\n"), write(root, "b.md", "b\n")])
    git(root, "update-index", "--index-version", "4")
    committed(store, root, "a.md", "a2\n")
    assert git(root, "status", "--porcelain") == ""
    assert git(root, "ls-files", "--stage").count("\n") == 3


def test_eight_threads_committing_at_once_all_land_consistently(
    root: Path, store: GitStore
) -> None:
    def worker(n: int) -> None:
        for round_ in range(5):
            committed(store, root, f"t{n}/note.md", f"round {round_}\n")

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(git(root, "log", "--format=%H").split()) == 40
    assert git(root, "status", "--porcelain") == ""
    git(root, "fsck", "--strict")
    for n in range(8):
        assert git(root, "show", f"HEAD:t{n}/note.md") == "round 4\n"


# ------------------------------------------------------------------ reading


def test_history_lists_commits_touching_the_path_newest_first(root: Path, store: GitStore) -> None:
    committed(store, root, "a.md", "one\n", "note_create")
    committed(store, root, "other.md", "x\n", "note_create")
    committed(store, root, "a.md", "two\n", "note_edit")
    (root / "a.md").unlink()
    store.commit("note_delete: a.md", ["a.md"], author=ALICE)
    revisions = store.history("a.md")
    assert [r.message for r in revisions] == [
        "note_delete: a.md",
        "note_edit: a.md",
        "note_create: a.md",
    ]
    expected = git(
        root, "log", "--format=%H %ad", "--date=format-local:%Y-%m-%dT%H:%M:%SZ", "--", "a.md"
    )
    assert [f"{r.commit} {r.when}" for r in revisions] == [
        f"{line[:12]} {line.split()[1]}" for line in expected.splitlines()
    ]
    assert all(re.fullmatch(r"[0-9a-f]{12}", r.commit) for r in revisions)
    assert [r.author for r in revisions] == ["alice", "node", "node"]


def test_history_stops_at_the_limit(root: Path, store: GitStore) -> None:
    shas = [committed(store, root, "a.md", f"v{n}\n") for n in range(5)]
    assert [r.commit for r in store.history("a.md", limit=2)] == [s[:12] for s in shas[:2:-1]]


def test_history_of_a_path_never_committed_is_empty(root: Path, store: GitStore) -> None:
    committed(store, root, "a.md", "one\n")
    assert store.history("b.md") == []


def test_history_before_the_first_commit_is_an_error(store: GitStore) -> None:
    with pytest.raises(NotFoundError, match=r"no history yet for a\.md"):
        store.history("a.md")


def test_resolve_accepts_full_and_abbreviated_ids(root: Path, store: GitStore) -> None:
    sha = committed(store, root, "a.md", "one\n")
    committed(store, root, "a.md", "two\n")
    assert store.resolve(sha) == sha
    assert store.resolve(sha[:12]) == sha
    assert store.resolve(sha[:7].upper()) == sha


@pytest.mark.parametrize("revision", ["deadbeef", "abc", "HEAD", "xyz!", "0" * 41, ""])
def test_resolve_rejects_unknown_and_malformed_ids(
    root: Path, store: GitStore, revision: str
) -> None:
    committed(store, root, "a.md", "one\n")
    with pytest.raises(UnknownRevisionError):
        store.resolve(revision)


def test_resolve_rejects_the_id_of_something_other_than_a_commit(
    root: Path, store: GitStore
) -> None:
    committed(store, root, "a.md", "one\n")
    blob = git(root, "rev-parse", "HEAD:a.md").strip()
    with pytest.raises(UnknownRevisionError):
        store.resolve(blob)


def test_resolve_rejects_an_ambiguous_prefix(root: Path, store: GitStore) -> None:
    committed(store, root, "a.md", "one\n")
    seen: dict[bytes, Commit] = {}
    with Repo(str(root)) as repo:
        for n in range(100_000):
            commit = Commit()
            commit.tree, commit.message = Tree().id, f"probe {n}\n".encode()
            commit.author = commit.committer = b"probe <probe@example.org>"
            commit.author_time = commit.commit_time = 0
            commit.author_timezone = commit.commit_timezone = 0
            twin = seen.setdefault(commit.id[:4], commit)
            if twin is not commit:
                repo.object_store.add_objects([(twin, None), (commit, None)])
                break
    with pytest.raises(UnknownRevisionError, match="ambiguous"):
        store.resolve(commit.id[:4].decode())


def test_contents_returns_the_bytes_of_a_revision(root: Path, store: GitStore) -> None:
    first = committed(store, root, "a.md", "one\n")
    second = committed(store, root, "a.md", "two\n")
    assert store.contents("a.md", first[:12]) == b"one\n"
    assert store.contents("a.md", second) == b"two\n"


def test_contents_of_a_path_absent_from_the_revision_is_not_found(
    root: Path, store: GitStore
) -> None:
    sha = committed(store, root, "a.md", "one\n")
    with pytest.raises(NotFoundError) as caught:
        store.contents("b.md", sha[:12])
    assert caught.value.message == (
        f"b.md does not exist in revision {sha[:12]}; call note_history"
    )
    with pytest.raises(UnknownRevisionError):
        store.contents("a.md", "feedbeef")


def test_previous_revision_is_the_second_newest_or_the_only_one(
    root: Path, store: GitStore
) -> None:
    first = committed(store, root, "a.md", "one\n")
    assert store.previous_revision("a.md") == first
    committed(store, root, "a.md", "two\n")
    assert store.previous_revision("a.md") == first
    assert store.previous_revision("b.md") is None


def test_diff_between_two_revisions_is_unified_with_three_lines_of_context(
    root: Path, store: GitStore
) -> None:
    lines = [f"line {n}" for n in range(1, 10)]
    first = committed(store, root, "a.md", "\n".join(lines) + "\n")
    lines[4] = "line five"
    second = committed(store, root, "a.md", "\n".join(lines) + "\n")
    assert store.diff("a.md", first, second) == (
        f"--- a/a.md@{first[:12]}\n+++ b/a.md@{second[:12]}\n@@ -2,7 +2,7 @@\n"
        " line 2\n line 3\n line 4\n-line 5\n+line five\n line 6\n line 7\n line 8\n"
    )


def test_diff_against_the_working_copy(root: Path, store: GitStore) -> None:
    first = committed(store, root, "a.md", "one")
    assert store.diff("a.md", first[:8], None, b"one\ntwo\n") == (
        f"--- a/a.md@{first[:12]}\n+++ b/a.md@working copy\n@@ -1 +1,2 @@\n"
        "-one\n\\ No newline at end of file\n+one\n+two\n"
    )


def test_diff_of_identical_states_says_no_difference(root: Path, store: GitStore) -> None:
    first = committed(store, root, "a.md", "one\n")
    second = committed(store, root, "b.md", "other\n")
    assert store.diff("a.md", first, second) == "(no difference)"
    assert store.diff("a.md", first, None, b"one\n") == "(no difference)"


def test_a_corrupt_object_is_reported_as_a_storage_error(root: Path, store: GitStore) -> None:
    sha = committed(store, root, "a.md", "one\n")
    blob = git(root, "rev-parse", "HEAD:a.md").strip()
    loose = root / ".git" / "objects" / blob[:2] / blob[2:]
    loose.chmod(0o644)
    loose.write_bytes(b"not zlib at all")
    with pytest.raises(StorageError) as caught:
        store.contents("a.md", sha)
    assert str(root) not in caught.value.message


def test_a_closed_store_turns_versioning_off(root: Path, store: GitStore) -> None:
    store.close()
    with pytest.raises(VersioningOffError):
        store.commit("late", [write(root, "a.md", "a\n")])


# ------------------------------------------------------------------ background


def test_a_push_reaches_a_local_bare_repository(tmp_path: Path, root: Path) -> None:
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "--quiet", "--bare", str(bare)], check=True)
    pushing = GitStore.open(root, "notes", committer=NODE, remote=str(bare))
    with structlog.testing.capture_logs() as logs:
        committed(pushing, root, "a.md", "one\n")
        sha = committed(pushing, root, "a.md", "two\n")
        pushing.close()
    assert git(root, "--git-dir", str(bare), "log", "--format=%H", "main").split()[0] == sha
    assert not [e for e in logs if e["event"] == "git_push_failed"]


def test_a_failing_push_is_logged_and_the_commit_stands(tmp_path: Path, root: Path) -> None:
    pushing = GitStore.open(root, "notes", committer=NODE, remote=str(tmp_path / "nowhere"))
    with structlog.testing.capture_logs() as logs:
        sha = committed(pushing, root, "a.md", "one\n")
        pushing.close()
    assert git(root, "rev-parse", "HEAD").strip() == sha
    failures = [e for e in logs if e["event"] == "git_push_failed"]
    assert failures
    assert all(str(tmp_path) not in str(e) for e in failures)


class StallingRemote:
    """An HTTP remote that accepts connections and answers nothing until released."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}/vault.git"
        self.requests: list[bytes] = []
        self.connected = threading.Event()
        self.released = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except TimeoutError:
                if self.released.is_set():
                    return
                continue
            with conn:
                self.requests.append(conn.recv(65536))
                self.connected.set()
                self.released.wait(30)

    def release(self) -> None:
        self.released.set()
        self.thread.join(30)
        self.server.close()


def test_a_stalled_push_never_blocks_commits_and_carries_the_token(root: Path) -> None:
    remote = StallingRemote()
    pushing = GitStore.open(root, "notes", committer=NODE, remote=remote.url, token="s3cret")
    try:
        with structlog.testing.capture_logs() as logs:
            first = committed(pushing, root, "a.md", "one\n")
            assert remote.connected.wait(30)
            second = committed(pushing, root, "a.md", "two\n")
            assert not remote.released.is_set()
            remote.release()
            pushing.close()
    finally:
        remote.release()
    assert git(root, "log", "--format=%H").split() == [second, first]
    lines = remote.requests[0].split(b"\r\n")[1:]
    headers = {k.lower(): v for k, _, v in (line.partition(b": ") for line in lines)}
    assert headers[b"authorization"] == b"Basic " + base64.b64encode(b"secondbrain:s3cret")
    assert [e for e in logs if e["event"] == "git_push_failed"]


def test_packing_deletes_no_object_while_a_push_reads_the_repository(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A push opens the repository on its own: a loose object deleted (or a pack merged
    # away) under it failed the push. The pack is written meanwhile; deleting waits.
    monkeypatch.setattr(gitstore, "PACK_EVERY", 4)
    remote = StallingRemote()
    pushing = GitStore.open(root, "notes", committer=NODE, remote=remote.url)
    pack_dir = root / ".git" / "objects" / "pack"
    try:
        committed(pushing, root, "a.md", "one\n")
        assert remote.connected.wait(30)
        for n in range(3):  # the fourth commit asks for the pack
            committed(pushing, root, f"n{n}.md", f"{n}\n")
        waited = 0
        while not list(pack_dir.glob("*.pack")) and waited < 300:
            time.sleep(0.1)
            waited += 1
        assert list(pack_dir.glob("*.pack"))  # written beside the running push
        pushing._packer.join(2.0)  # time enough for deleting, were it not waiting
        loose = list((root / ".git" / "objects").glob("??/*"))
        assert loose  # and nothing deleted under it
        remote.release()
        pushing.close()
    finally:
        remote.release()
    assert not list((root / ".git" / "objects").glob("??/*"))  # deleted once it ended
    git(root, "fsck", "--strict")


def test_background_packing_moves_loose_objects_into_packs(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gitstore, "PACK_EVERY", 3)
    monkeypatch.setattr(gitstore, "PACK_LIMIT", 2)
    packing = GitStore.open(root, "notes", committer=NODE)
    shas = [committed(packing, root, f"n{n % 4}.md", f"v{n}\n") for n in range(12)]
    packing.close()
    counts = dict(line.split(": ") for line in git(root, "count-objects", "-v").splitlines())
    assert counts["count"] == "0"
    assert int(counts["in-pack"]) > 0
    assert 1 <= int(counts["packs"]) <= 2
    git(root, "fsck", "--strict")
    reopened = GitStore.open(root, "notes", committer=NODE)
    try:
        assert reopened.contents("n0.md", shas[0]) == b"v0\n"
        assert len(reopened.history("n1.md")) == 3
        assert committed(reopened, root, "n0.md", "after packing\n")
    finally:
        reopened.close()
    assert git(root, "status", "--porcelain") == ""


def test_opening_a_repository_full_of_loose_objects_packs_it(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gitstore, "PACK_EVERY", 1000)
    first = GitStore.open(root, "notes", committer=NODE)
    first.commit("import", [write(root, f"n{n}.md", f"{n}\n") for n in range(30)])
    first.close()
    monkeypatch.setattr(gitstore, "PACK_EVERY", 2)
    GitStore.open(root, "notes", committer=NODE).close()
    counts = dict(line.split(": ") for line in git(root, "count-objects", "-v").splitlines())
    assert counts["count"] == "0"
    assert os.listdir(root / ".git" / "objects" / "pack")


def test_many_commits_in_one_big_folder_keep_the_trees_git_would_write(
    root: Path, store: GitStore
) -> None:
    rels = [write(root, f"wiki/note-{i:03d}.md", f"# {i}\n") for i in range(300)]
    store.commit("import", rels)
    for k in range(40):
        rel = rels[(k * 7) % len(rels)]
        write(root, rel, f"# edited {k}\n")
        store.commit(f"edit {k}", [rel])
        if k == 20:
            git(root, "gc", "--quiet")  # trees now come from a pack, through deltas
    git(root, "fsck", "--strict")
    assert git(root, "status", "--porcelain") == ""
    listed = git(root, "ls-tree", "-r", "--name-only", "HEAD").split()
    assert sorted(listed) == sorted([".gitignore", *rels])
    last = rels[(39 * 7) % len(rels)]
    assert git(root, "show", f"HEAD:{last}") == "# edited 39\n"


# ------------------------------------------------------------------ the index file


def deferred(root: Path, monkeypatch: pytest.MonkeyPatch, quiet: float = 60.0) -> GitStore:
    """A store that writes every index file off the write path, as it does past 2,000."""
    monkeypatch.setattr(gitstore, "INDEX_INLINE", 0)
    monkeypatch.setattr(gitstore, "INDEX_QUIET", quiet)
    return GitStore.open(root, "notes", committer=NODE)


def staged(root: Path) -> dict[str, str]:
    """Path -> blob sha as git's index file holds them."""
    lines = git(root, "ls-files", "--stage").splitlines()
    return {line.split("\t")[1]: line.split()[1] for line in lines}


def in_head(root: Path) -> dict[str, str]:
    lines = git(root, "ls-tree", "-r", "HEAD").splitlines()
    return {line.split("\t")[1]: line.split()[2] for line in lines}


def test_a_large_index_file_lags_a_burst_and_then_holds_what_git_would_write(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = deferred(root, monkeypatch)
    try:
        committed(store, root, "a.md", "a\n")
        store.sync()
        for k in range(20):
            committed(store, root, f"burst/n{k % 7}.md", f"{k}\n")
        committed(store, root, "a.md", "a2\n")
        assert "burst/n0.md" not in staged(root)  # the burst is not in the file yet
        store.sync()
        assert staged(root) == in_head(root)
        assert git(root, "status", "--porcelain") == ""
        assert git(root, "diff-index", "--cached", "HEAD") == ""
        git(root, "fsck", "--strict")
    finally:
        store.close()


def test_the_index_file_is_written_once_commits_pause(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = deferred(root, monkeypatch, quiet=0.2)
    try:
        for k in range(5):
            committed(store, root, f"n{k}.md", f"{k}\n")
        deadline = time.monotonic() + 15
        while git(root, "status", "--porcelain") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert git(root, "status", "--porcelain") == ""
        assert staged(root) == in_head(root)
    finally:
        store.close()


def wait_clean(root: Path, within: float = 15.0) -> None:
    deadline = time.monotonic() + within
    while git(root, "status", "--porcelain") and time.monotonic() < deadline:
        time.sleep(0.05)


@pytest.mark.parametrize("large", [True, False], ids=["written-later", "written-inline"])
def test_an_index_file_git_held_locked_is_written_once_git_lets_go(
    root: Path, monkeypatch: pytest.MonkeyPatch, large: bool
) -> None:
    """`git status` in the vault takes git's index lock to refresh the file: a write that
    found it held is tried again a quiet moment later, not only at the next commit (before,
    `git status` listed every note committed meanwhile as deleted and untracked)."""
    if large:
        store = deferred(root, monkeypatch, quiet=0.2)
    else:
        store = GitStore.open(root, "notes", committer=NODE)
    lock = root / ".git" / "index.lock"
    try:
        lock.write_bytes(b"")  # what a running `git status` holds
        for k in range(3):
            committed(store, root, f"n{k}.md", f"{k}\n")
        time.sleep(0.5)  # a deferred write has met the lock by now
        assert "n2.md" not in staged(root)
        lock.unlink()
        wait_clean(root)
        assert git(root, "status", "--porcelain") == ""
        assert staged(root) == in_head(root)
    finally:
        lock.unlink(missing_ok=True)
        store.close()


def test_closing_writes_the_index_file_the_last_commits_left(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = deferred(root, monkeypatch)
    committed(store, root, "a.md", "a\n")
    committed(store, root, "b.md", "b\n")
    store.close()
    assert git(root, "status", "--porcelain") == ""
    assert staged(root) == in_head(root)


def test_changes_not_yet_written_survive_git_rewriting_the_index_file(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = deferred(root, monkeypatch)
    try:
        committed(store, root, "a.md", "a\n")
        store.sync()
        committed(store, root, "a.md", "a2\n")  # in memory only
        git(root, "update-index", "--index-version", "4")  # git rewrites the old file
        committed(store, root, "b.md", "b\n")  # reloads what git wrote, keeps a.md's change
        store.sync()
        assert staged(root) == in_head(root)
        assert git(root, "status", "--porcelain") == ""
    finally:
        store.close()


# ------------------------------------------------------------------ recovery

OLD = 1_000_000_000 * 1_000_000_000  # 2001, in nanoseconds: long before any index write


def visible(root: Path) -> list[tuple[str, int, int]]:
    """What a vault walk gives: every file without a dot segment, with its size and mtime."""
    found = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and not any(part.startswith(".") for part in rel.split("/")):
            found.append((rel, path.stat().st_size, path.stat().st_mtime_ns))
    return found


def test_what_a_crash_left_uncommitted_is_committed_by_the_node(
    root: Path, store: GitStore
) -> None:
    committed(store, root, "wiki/a.md", "one\n")
    committed(store, root, "wiki/b.md", "two\n", message="edit")
    head = git(root, "rev-parse", "HEAD").strip()
    write(root, "wiki/a.md", "one, changed\n")  # written, then the process died
    write(root, "raw/new.md", "new\n")
    (root / "wiki" / "b.md").unlink()
    write(root, ".obsidian/app.json", "{}")  # a dot path: never the vault's to commit
    sha = store.commit_uncommitted(visible(root), "vault_recover: recovered")
    assert sha == git(root, "rev-parse", "HEAD").strip() != head
    assert git(root, "log", "-1", "--format=%an <%ae>|%cn <%ce>|%s") == (
        "node <node@example.org>|node <node@example.org>|vault_recover: recovered\n"
    )
    assert git(root, "diff", "--name-status", head, "HEAD") == (
        "A\traw/new.md\nM\twiki/a.md\nD\twiki/b.md\n"
    )
    assert git(root, "status", "--porcelain") == "?? .obsidian/\n"
    assert store.commit_uncommitted(visible(root), "vault_recover: again") is None


def test_a_file_whose_stat_data_match_the_index_is_not_read(root: Path, store: GitStore) -> None:
    write(root, "a.md", "one\n")
    os.utime(root / "a.md", ns=(OLD, OLD))
    store.commit("add", ["a.md"])
    # Same size, same mtime, other bytes: only reading the file could tell, and git does not.
    write(root, "a.md", "two\n")
    os.utime(root / "a.md", ns=(OLD, OLD))
    assert store.commit_uncommitted(visible(root), "vault_recover") is None
    # A file touched since its entry was written is read, and an unchanged one commits nothing.
    (root / "a.md").write_text("one\n")
    assert store.commit_uncommitted(visible(root), "vault_recover") is None
    assert git(root, "status", "--porcelain") == ""


def test_a_racily_clean_entry_is_read_as_git_does(root: Path, store: GitStore) -> None:
    write(root, "a.md", "one\n")
    os.utime(root / "a.md", ns=(OLD, OLD))
    store.commit("add", ["a.md"])
    os.utime(root / ".git" / "index", ns=(OLD, OLD))  # the entry is as new as the index
    write(root, "a.md", "two\n")
    os.utime(root / "a.md", ns=(OLD, OLD))
    assert store.commit_uncommitted(visible(root), "vault_recover") is not None
    assert git(root, "show", "HEAD:a.md") == "two\n"


def test_without_an_index_every_file_is_compared_with_head(root: Path, store: GitStore) -> None:
    committed(store, root, "a.md", "one\n")
    committed(store, root, "b.md", "two\n")
    store.close()
    (root / ".git" / "index").unlink()
    write(root, "b.md", "changed\n")
    reopened = GitStore.open(root, "notes", committer=NODE)
    try:
        assert reopened.commit_uncommitted(visible(root), "vault_recover") is not None
    finally:
        reopened.close()
    assert git(root, "show", "--name-only", "--format=", "HEAD") == "b.md\n"
    assert git(root, "status", "--porcelain", "--", "a.md", "b.md") == ""


def test_locks_a_killed_commit_left_are_cleared_so_commits_work_again(
    root: Path, store: GitStore
) -> None:
    committed(store, root, "a.md", "one\n")
    stale = [root / ".git" / "refs" / "heads" / "main.lock", root / ".git" / "index.lock"]
    for lock in stale:
        lock.write_text("")
        os.utime(lock, (OLD / 1e9, OLD / 1e9))
    write(root, "a.md", "two\n")
    with pytest.raises(StorageError):
        store.commit("edit", ["a.md"])  # what every commit after such a kill would get
    assert store.clear_stale_locks() == ["index.lock", "refs/heads/main.lock"]
    assert store.commit("edit", ["a.md"]) is not None
    assert git(root, "show", "HEAD:a.md") == "two\n"


def test_a_loose_object_lock_a_killed_write_left_is_cleared_so_its_content_commits(
    root: Path, store: GitStore
) -> None:
    committed(store, root, "a.md", "one\n")
    sha = Blob.from_string(b"two\n").id.decode()
    lock = root / ".git" / "objects" / sha[:2] / f"{sha[2:]}.lock"
    lock.parent.mkdir(exist_ok=True)
    lock.write_text("")  # the node was killed while writing this very object
    os.utime(lock, (OLD / 1e9, OLD / 1e9))
    write(root, "a.md", "two\n")
    with pytest.raises(errors.VaultError):
        store.commit("edit", ["a.md"])  # every write of that content would fail for good
    assert store.clear_stale_locks() == [f"objects/{sha[:2]}/{sha[2:]}.lock"]
    assert store.commit("edit", ["a.md"]) is not None
    assert git(root, "show", "HEAD:a.md") == "two\n"


def test_a_fresh_lock_gets_its_time_before_it_counts_as_stale(root: Path, store: GitStore) -> None:
    committed(store, root, "a.md", "one\n")
    lock = root / ".git" / "HEAD.lock"
    lock.write_text("")  # as new as a lock a person's git holds right now
    assert store.clear_stale_locks(age=0.2) == ["HEAD.lock"]  # still there after 0.2 s
    assert not lock.exists()
    assert store.clear_stale_locks() == []


def test_importing_many_files_writes_packs_and_no_loose_object(
    root: Path, store: GitStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_gitpack, "PACK_BYTES", 20_000)  # a few packs for 600 small files
    rels = [
        write(root, f"f{i % 7}/n{i}.md", f"# {i}\n{'words ' * 20}\n")
        for i in range(gitstore.PACK_DIRECT + 100)
    ]
    write(root, "f0/same.md", "# 1\n" + "words " * 20 + "\n")  # an object two files share
    sha = store.commit("import", [*rels, "f0/same.md"])
    assert sha is not None
    counts = dict(line.split(": ") for line in git(root, "count-objects", "-v").splitlines())
    assert counts["count"] == "0"
    assert 2 <= int(counts["packs"]) <= gitstore.PACK_LIMIT
    git(root, "fsck", "--strict")
    assert git(root, "status", "--porcelain") == ""
    assert store.contents("f3/n3.md", sha) == (root / "f3" / "n3.md").read_bytes()
    assert committed(store, root, "f1/n1.md", "edited after the import\n")


def test_a_few_files_are_still_committed_as_loose_objects(root: Path, store: GitStore) -> None:
    store.commit("import", [write(root, f"n{i}.md", f"{i}\n") for i in range(5)])
    counts = dict(line.split(": ") for line in git(root, "count-objects", "-v").splitlines())
    assert int(counts["count"]) > 0
    assert counts["packs"] == "0"


@pytest.mark.parametrize("version", ["2", "3", "4"])
def test_the_index_file_is_read_as_git_wrote_it_entry_for_entry(root: Path, version: str) -> None:
    # Read from its bytes (versions 2 and 3) or by dulwich (4), the entries are the ones
    # dulwich's own reading gives, encoded as writing them again would encode them.
    git(root, "init", "--quiet")
    deep = "/".join(["folder"] * 30) + "/" + "n" * 200 + ".md"  # dulwich misreads it in v4
    for rel in ("a.md", "b/c.md", "é/ü.md", *([deep] if version != "4" else []), "z.md"):
        write(root, rel, f"{rel}\n")
    git(root, "add", ".")
    git(root, "add", "--intent-to-add", write(root, "later.md", "x\n"))  # an extended flag
    git(root, "update-index", "--index-version", version)
    path = str(root / ".git" / "index")
    ours = _gitindex.IndexFile(path)
    parsed = dict(dulwich_index.Index(path).items())
    assert ours._names == sorted(parsed)
    assert ours._chunks == [_gitindex._encode_entry(n, parsed[n]) for n in sorted(parsed)]
    assert ours._header[4:] == struct.pack(">L", 3)  # git itself writes 3 for that flag
    assert ours._ours


def test_an_index_file_with_a_conflict_is_left_to_git(root: Path) -> None:
    git(root, "init", "--quiet", "-b", "main")
    git(root, "config", "user.name", "t")
    git(root, "config", "user.email", "t@t")
    git(root, "commit", "--quiet", "--allow-empty", "-m", "base")
    git(root, "checkout", "--quiet", "-b", "side")
    git(root, "add", write(root, "a.md", "side\n"))
    git(root, "commit", "--quiet", "-m", "side")
    git(root, "checkout", "--quiet", "main")
    git(root, "add", write(root, "a.md", "main\n"))
    git(root, "commit", "--quiet", "-m", "main")
    with pytest.raises(subprocess.CalledProcessError):
        git(root, "merge", "--quiet", "side")  # the conflict
    assert "AA a.md" in git(root, "status", "--porcelain")
    ours = _gitindex.IndexFile(str(root / ".git" / "index"))
    assert not ours._ours
    ours.set(b"b.md", dulwich_index.index_entry_from_stat(os.stat(root / "a.md"), b"0" * 40))
    assert ours.flush()  # nothing written: git's conflict stages stay
    assert "AA a.md" in git(root, "status", "--porcelain")


def test_a_truncated_index_file_is_an_error_not_a_short_index(root: Path) -> None:
    git(root, "init", "--quiet")
    git(root, "add", write(root, "a.md", "a\n"), write(root, "b.md", "b\n"))
    index = root / ".git" / "index"
    index.write_bytes(index.read_bytes()[:90])
    with pytest.raises(errors.VersioningOffError, match="git index is unreadable"):
        GitStore.open(root, "notes", committer=NODE)


def test_an_index_file_without_extended_flags_is_written_back_as_version_2(root: Path) -> None:
    git(root, "init", "--quiet")
    git(root, "add", write(root, "a.md", "a\n"))
    path = root / ".git" / "index"
    ours = _gitindex.IndexFile(str(path))
    assert ours._header[4:] == struct.pack(">L", 2)
    ours.set(b"b.md", dulwich_index.index_entry_from_stat(os.stat(root / "a.md"), b"0" * 40))
    assert ours.flush()
    assert path.read_bytes()[4:8] == struct.pack(">L", 2)
    assert git(root, "ls-files").split() == ["a.md", "b.md"]
