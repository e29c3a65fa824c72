"""Reading files for the index: one at a time or by a pool of processes, the same result."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from vault_core import paths
from vault_core.index import rows, snapshot
from vault_core.index.store import Index


@pytest.fixture
def many(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    for i in range(snapshot.PARALLEL_MIN + 30):
        target = root / f"d{i % 7}" / f"note {i}.md"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f"---\ntitle: N{i}\ntags: [t{i % 5}]\n---\n# N{i}\n[[note {i + 1}]] #x\n")
    (root / "big.md").write_bytes(b"x" * (4 * 1024 * 1024 + 1))
    (root / "latin1.md").write_bytes(b"caf\xe9")
    (root / "image.png").write_bytes(b"\x89PNG")
    return root


def test_reading_in_parallel_gives_what_reading_in_order_gives(many: Path) -> None:
    entries = list(paths.walk(many))
    parallel = list(snapshot.read_many(many, entries))
    sequential = [(e, snapshot.read(many, e.rel, e.abs)) for e in entries]
    assert [e.rel for e, _ in parallel] == [e.rel for e in entries]
    for (_, got), (_, want) in zip(parallel, sequential, strict=True):
        assert got is not None
        assert want is not None
        assert (got.rel, got.mtime_ns, got.size, got.skipped) == (
            want.rel, want.mtime_ns, want.size, want.skipped,
        )  # fmt: skip
        # A worker sends the file's rows for the index, not its parse.
        assert got.note is None
        assert got.digest == want.digest
        assert got.text == want.text
        if want.digest:
            assert 0 < got.read_ns <= time.time_ns()
        assert rows.file_rows(got) == rows.file_rows(want)
        if want.note is not None and not want.skipped:
            assert got.rows is not None
            assert got.rows.tables["notes"][0][1] == want.note.title


def test_a_large_cold_index_is_complete(many: Path) -> None:
    index = Index.open(many, "vault")
    stats = index.reconcile()
    with index.reading() as conn:
        notes = conn.execute("SELECT count(*) FROM notes WHERE is_note = 1").fetchone()[0]
        broken = conn.execute("SELECT count(*) FROM links WHERE resolved = ''").fetchone()[0]
    index.close()
    assert stats.files == snapshot.PARALLEL_MIN + 33
    assert stats.skipped == 2
    assert notes == snapshot.PARALLEL_MIN + 30
    assert broken == 1  # only the last note links past the end


def test_skipped_notes_carry_their_reason(many: Path) -> None:
    big = snapshot.read(many, "big.md", many / "big.md")
    latin = snapshot.read(many, "latin1.md", many / "latin1.md")
    assert big is not None
    assert big.skipped == "too_large"
    assert latin is not None
    assert latin.skipped == "not_utf8"


def rewritten_keeping_the_stamp(target: Path, text: str) -> None:
    """A same-size write whose mtime ends up where it was (`rsync -t`, a coarse clock)."""
    before = target.stat()
    target.write_text(text)
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))


def test_a_recent_file_is_read_again_before_it_is_stored(tmp_path: Path) -> None:
    target = tmp_path / "n.md"
    target.write_text("# one\n")
    snap = snapshot.read(tmp_path, "n.md", target)
    rewritten_keeping_the_stamp(target, "# two\n")
    assert not snapshot.still(tmp_path, target, snap)


def test_a_file_last_written_a_minute_before_its_read_is_not_read_again(tmp_path: Path) -> None:
    target = tmp_path / "n.md"
    target.write_text("# one\n")
    settled = time.time_ns() - snapshot.SETTLED_NS - 1_000_000_000
    os.utime(target, ns=(settled, settled))
    snap = snapshot.read(tmp_path, "n.md", target)
    assert snapshot.still(tmp_path, target, snap)
    rewritten_keeping_the_stamp(target, "# two\n")
    assert snapshot.still(tmp_path, target, snap)  # the trade: no second read of old files
    target.write_text("# three\n")  # any write now moves the mtime on
    assert not snapshot.still(tmp_path, target, snap)


@pytest.mark.parametrize("now", [b"# N\ngrew after the stat\n", b"#"])
def test_a_note_whose_size_changed_after_its_stat_is_marked_to_be_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, now: bytes
) -> None:
    target = tmp_path / "n.md"
    target.write_bytes(b"# N\n")
    stale = snapshot.stat_of(tmp_path, target)
    target.write_bytes(now)
    monkeypatch.setattr(snapshot, "stat_of", lambda _root, _target: stale)
    snap = snapshot.read(tmp_path, "n.md", target)
    assert snap is not None
    assert (snap.mtime_ns, snap.size) == (-1, -1)  # what the store reads again
