"""Rows gathered for many files at once are the rows each file stored alone would give."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from vault_core.index import store as index_module
from vault_core.index.store import Index

TABLES = {
    "notes": "path, title, mtime, size, hash, created, updated, is_note, words",
    "notes_fts": "path, title, body",
    "tags": "path, tag",
    "links": "src, target, anchor, alias, wiki, resolved, key",
    "headings": "path, level, text, line",
    "aliases": "path, alias",
    "tasks": "path, line, text, done",
    "names": "name, kind, path",
}


def vault(root: Path) -> Path:
    for i in range(40):
        target = root / f"d{i % 4}" / f"n{i}.md"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(
            f"---\ntitle: N{i}\naliases: [a{i}]\ncreated: 2024-01-0{1 + i % 9}\n---\n"
            f"# N{i}\n## part\n#t{i % 3} [[n{(i + 1) % 40}]] [[gone]]\n- [ ] open\n- [x] done\n"
        )
    (root / "d0" / "pic.png").write_bytes(b"\x89PNG")
    return root


def dump(conn: sqlite3.Connection) -> dict[str, list[tuple[object, ...]]]:
    return {t: sorted(conn.execute(f"SELECT {c} FROM {t}").fetchall()) for t, c in TABLES.items()}


def test_a_cold_index_in_batches_holds_what_one_update_per_file_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_module, "BULK", 10)
    monkeypatch.setattr(index_module, "BATCH", 7)
    batched = Index.open(vault(tmp_path / "a"), "a")
    one_by_one = Index.open(vault(tmp_path / "b"), "b")
    try:
        batched.reconcile()
        rels = sorted(
            p.relative_to(tmp_path / "b").as_posix() for p in (tmp_path / "b").rglob("*.*")
        )
        one_by_one.update_paths([r for r in rels if not r.startswith(".")])
        with batched.reading() as left, one_by_one.reading() as right:
            got, want = dump(left), dump(right)
            (mismatched,) = left.execute(
                "SELECT count(*) FROM notes_fts f LEFT JOIN notes n ON n.rowid = f.rowid"
                " WHERE n.path IS NOT f.path"
            ).fetchone()
        others = {t: v for t, v in got.items() if t != "notes"}
        assert others == {t: v for t, v in want.items() if t != "notes"}
        unstamped = [r[:2] + r[3:] for r in got["notes"]]  # the two vaults differ in mtimes
        assert unstamped == [r[:2] + r[3:] for r in want["notes"]]
        assert mismatched == 0  # every search row names its note's rowid
        assert len(got["notes"]) == 41
    finally:
        batched.close()
        one_by_one.close()
