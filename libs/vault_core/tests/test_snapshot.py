"""Reading files for the index: one at a time or by a pool of processes, the same result."""

from __future__ import annotations

from pathlib import Path

import pytest

from vault_core import paths, snapshot
from vault_core.index import Index


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
        if want.note is not None:
            assert got.note is not None
            assert (got.note.title, got.note.tags, got.note.links, got.note.content_hash) == (
                want.note.title, want.note.tags, want.note.links, want.note.content_hash,
            )  # fmt: skip


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
