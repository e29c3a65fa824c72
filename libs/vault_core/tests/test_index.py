"""The index (docs/design.md#index): schema, reconcile, rebuilds, races, concurrency."""

from __future__ import annotations

import gc
import json
import os
import shutil
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from fpdf import FPDF
from structlog.testing import capture_logs

from vault_core import paths
from vault_core.errors import NOTE_LIMIT
from vault_core.index import linkstore
from vault_core.index import snapshot as snapshot_mod
from vault_core.index import store as index_module
from vault_core.index.schema import SCHEMA_VERSION
from vault_core.index.store import Index, ReconcileStats
from vault_core.search import fts as search
from vault_core.testing import (
    make_vault,
    plant_hostile_files,
    plant_unreadable_file,
    unprivileged,
)
from vault_core.text import content_hash

Build = Callable[..., Index]


@pytest.fixture
def build(tmp_path: Path) -> Iterator[Build]:
    """Write `files` into a vault, open its index and (by default) reconcile it."""
    opened: list[Index] = []

    def _build(files: dict[str, str | bytes] | None = None, *, reconcile: bool = True) -> Index:
        vault = make_vault(tmp_path, files)
        index = Index.open(vault.root, vault.name)
        opened.append(index)
        if reconcile:
            index.reconcile()
        return index

    yield _build
    for index in opened:
        index.close()


def put(index: Index, rel: str, content: str | bytes) -> Path:
    target = index.root.joinpath(*rel.split("/"))
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(content.encode() if isinstance(content, str) else content)
    return target


def query(index: Index, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    with index.reading() as conn:
        return conn.execute(sql, params).fetchall()


def dump(index: Index) -> dict[str, list[tuple[object, ...]]]:
    """Every row of every table (rowids left out), sorted: two equal dumps are equal indexes."""
    tables = ("notes", "tags", "links", "headings", "aliases", "tasks", "embeddings", "names")
    found = {table: sorted(query(index, f"SELECT * FROM {table}")) for table in tables}
    found["notes_fts"] = sorted(query(index, "SELECT path, title, body FROM notes_fts"))
    return found


def without_seconds(stats: ReconcileStats) -> tuple[int, int, int, int]:
    return (stats.files, stats.changed, stats.removed, stats.skipped)


# ---------------------------------------------------------------------- schema

SPEC_COLUMNS = {
    # (name, type, notnull, default, pk) exactly as docs/design.md#index-schema declares them
    "meta": [("key", "TEXT", 0, None, 1), ("value", "TEXT", 0, None, 0)],
    "notes": [
        ("path", "TEXT", 0, None, 1), ("title", "TEXT", 1, "''", 0),
        ("mtime", "INTEGER", 1, "0", 0), ("size", "INTEGER", 1, "0", 0),
        ("hash", "TEXT", 1, "''", 0), ("created", "TEXT", 1, "''", 0),
        ("updated", "TEXT", 1, "''", 0), ("is_note", "INTEGER", 1, "1", 0),
        ("words", "INTEGER", 1, "0", 0),
    ],
    "tags": [("path", "TEXT", 1, None, 0), ("tag", "TEXT", 1, None, 0)],
    "links": [
        ("src", "TEXT", 1, None, 0), ("target", "TEXT", 1, None, 0),
        ("anchor", "TEXT", 1, "''", 0), ("alias", "TEXT", 1, "''", 0),
        ("wiki", "INTEGER", 1, "1", 0), ("resolved", "TEXT", 1, "''", 0),
    ],
    "headings": [
        ("path", "TEXT", 1, None, 0), ("level", "INTEGER", 1, None, 0),
        ("text", "TEXT", 1, None, 0), ("line", "INTEGER", 1, None, 0),
    ],
    "aliases": [("path", "TEXT", 1, None, 0), ("alias", "TEXT", 1, None, 0)],
    "tasks": [
        ("path", "TEXT", 1, None, 0), ("line", "INTEGER", 1, None, 0),
        ("text", "TEXT", 1, None, 0), ("done", "INTEGER", 1, None, 0),
    ],
    "embeddings": [
        ("path", "TEXT", 1, None, 1), ("chunk", "INTEGER", 1, None, 2),
        ("model", "TEXT", 1, None, 3), ("heading", "TEXT", 1, "''", 0),
        ("vector", "BLOB", 1, None, 0),
    ],
}  # fmt: skip

SPEC_INDEXES = {
    "tags": {"tags_tag": ["tag"], "tags_path": ["path"]},
    "links": {"links_src": ["src"], "links_resolved": ["resolved"]},
    "headings": {"headings_path": ["path"]},
    "aliases": {"aliases_alias": ["alias"]},
    "tasks": {"tasks_path": ["path"]},
}


def test_schema_has_every_table_and_column_of_the_spec(build: Build) -> None:
    index = build()
    for table, columns in SPEC_COLUMNS.items():
        info = [tuple(row[1:]) for row in query(index, f"PRAGMA table_info({table})")]
        assert info[: len(columns)] == columns, table


def test_schema_has_every_index_of_the_spec(build: Build) -> None:
    index = build()
    for table, wanted in SPEC_INDEXES.items():
        for name, columns in wanted.items():
            assert [row[2] for row in query(index, f"PRAGMA index_info({name})")] == columns
            assert name in [row[1] for row in query(index, f"PRAGMA index_list({table})")]


def test_replacing_a_notes_rows_finds_them_by_an_index_in_every_table(build: Build) -> None:
    # A table scanned to delete one note's rows made every write slower as the vault grew
    # (aliases: half a millisecond per write at 100,000 notes).
    index = build()
    for table, column in index_module._PATH_TABLES:
        plan = query(index, f"EXPLAIN QUERY PLAN DELETE FROM {table} WHERE {column} = 'a.md'")
        assert not [row for row in plan if str(row[-1]).startswith("SCAN")], table


def test_an_index_made_before_a_secondary_index_was_added_gets_it_on_open(
    tmp_path: Path,
) -> None:
    index = Index.open(tmp_path, "v")
    index.close()
    with sqlite3.connect(tmp_path / ".secondbrain" / "index.db") as conn:
        conn.execute("DROP INDEX aliases_path")
    index = Index.open(tmp_path, "v")
    try:
        assert "aliases_path" in [row[1] for row in query(index, "PRAGMA index_list(aliases)")]
    finally:
        index.close()


def test_full_text_table_has_path_title_body_and_folds_diacritics(build: Build) -> None:
    index = build()
    assert [row[1] for row in query(index, "PRAGMA table_info(notes_fts)")] == [
        "path",
        "title",
        "body",
    ]
    (sql,) = query(index, "SELECT sql FROM sqlite_master WHERE name = 'notes_fts'")[0]
    assert "fts5(" in str(sql)
    assert 'tokenize = "unicode61 remove_diacritics 2"' in str(sql)


def test_embeddings_table_exists_and_stays_empty(build: Build) -> None:
    index = build({"a.md": "# A\n\ntext\n", "pic.png": b"\x89PNG"})
    assert query(index, "SELECT count(*) FROM embeddings") == [(0,)]


def test_meta_records_the_schema_version(build: Build) -> None:
    index = build()
    assert query(index, "SELECT value FROM meta WHERE key = 'schema'") == [(SCHEMA_VERSION,)]


def test_index_lives_in_the_state_directory_with_wal_and_synchronous_normal(
    build: Build,
) -> None:
    index = build()
    assert index.db_path == index.root / ".secondbrain" / "index.db"
    assert index.db_path.is_file()
    assert query(index, "PRAGMA journal_mode") == [("wal",)]
    # synchronous is a per-connection setting: the writer is the one that commits.
    assert index._writer.execute("PRAGMA synchronous").fetchone() == (1,)  # 1 = NORMAL
    assert index._writer.execute("PRAGMA busy_timeout").fetchone() == (5000,)


def at_each_batch(
    index: Index, monkeypatch: pytest.MonkeyPatch, probe: Callable[[], object]
) -> list[object]:
    """What `probe` answers as each batch of a fill begins, in a list that grows."""
    seen: list[object] = []
    real = index._store_batch

    def spying(*args: Any, **kwargs: Any) -> set[str]:
        seen.append(probe())
        return real(*args, **kwargs)

    monkeypatch.setattr(index, "_store_batch", spying)
    return seen


def test_a_cold_fill_writes_without_fsync_and_commits_with_it_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_module, "BULK", 5)
    for i in range(12):
        (tmp_path / f"n{i}.md").write_text(f"# N{i}\n[[n{i + 1}]]\n")
    index = Index.open(tmp_path, "v")
    synchronous = "PRAGMA synchronous"
    seen = at_each_batch(
        index, monkeypatch, lambda: index._writer.execute(synchronous).fetchone()[0]
    )
    try:
        assert index.reconcile().changed == 12
        assert seen == [0]  # 0 = OFF, while the empty index is filled
        assert index._writer.execute("PRAGMA synchronous").fetchone() == (1,)  # NORMAL again
    finally:
        index.close()


@pytest.mark.parametrize("on_before", [True, False])
def test_a_cold_fill_pauses_the_cycle_collector_and_leaves_it_as_it_found_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, on_before: bool
) -> None:
    monkeypatch.setattr(index_module, "BULK", 5)
    for i in range(12):
        (tmp_path / f"n{i}.md").write_text(f"# N{i}\n[[n{i + 1}]]\n")
    index = Index.open(tmp_path, "v")
    seen = at_each_batch(index, monkeypatch, gc.isenabled)
    if not on_before:
        gc.disable()
    try:
        assert index.reconcile().changed == 12
        assert seen == [False]
        assert gc.isenabled() is on_before
        # A later reconcile fills nothing: the collector is not touched.
        (tmp_path / "n0.md").write_text("# changed\n")
        gc.enable()
        assert index.reconcile().changed == 1
        assert seen == [False, True]
    finally:
        gc.enable()
        index.close()


def test_a_cold_fill_merges_search_segments_eight_at_a_time_then_back_to_four(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_module, "BULK", 5)
    for i in range(12):
        (tmp_path / f"n{i}.md").write_text(f"# N{i}\nword{i}\n")
    index = Index.open(tmp_path, "v")
    automerge = "SELECT v FROM notes_fts_config WHERE k = 'automerge'"
    seen = at_each_batch(index, monkeypatch, lambda: index._writer.execute(automerge).fetchone()[0])
    try:
        assert index.reconcile().changed == 12
        assert seen == [8]
        assert query(index, automerge) == [(4,)]
        assert [
            p for (p,) in query(index, "SELECT path FROM notes_fts WHERE notes_fts MATCH 'word7'")
        ] == ["n7.md"]
    finally:
        index.close()


def test_two_fills_at_once_turn_the_collector_back_on_when_the_last_one_ends() -> None:
    pause = index_module._CollectorPause()
    assert gc.isenabled()
    with pause():
        with pause():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the other fill is still running
    assert gc.isenabled()


# ---------------------------------------------------------------------- reconcile

NOTE_A = """\
---
title: Alpha note
tags: [Project/Alpha, ops]
aliases: [First]
created: 2026-01-02T03:04:05Z
updated: 2026-01-03
---
# Heading

Body words here #inline and [[b]] and [text](b.md#Part).

- [ ] open thing
- [x] done thing
"""


def test_reconcile_ingests_every_table_for_a_new_note(build: Build) -> None:
    index = build({"wiki/a.md": NOTE_A, "b.md": "# B\n"})
    stat = (index.root / "wiki" / "a.md").stat()
    # words: 19 whitespace-separated tokens in the body, frontmatter left out
    assert query(index, "SELECT * FROM notes WHERE path = 'wiki/a.md'") == [
        ("wiki/a.md", "Alpha note", stat.st_mtime_ns, stat.st_size,
         content_hash(NOTE_A.encode()), "2026-01-02T03:04:05Z", "2026-01-03", 1, 19),
    ]  # fmt: skip
    assert query(index, "SELECT tag FROM tags WHERE path = 'wiki/a.md' ORDER BY rowid") == [
        ("project/alpha",),
        ("ops",),
        ("inline",),
    ]
    assert query(index, "SELECT target, anchor, alias, wiki, resolved FROM links") == [
        ("b", "", "", 1, "b.md"),
        ("b.md", "Part", "", 0, "b.md"),
    ]
    assert query(index, "SELECT level, text, line FROM headings WHERE path = 'wiki/a.md'") == [
        (1, "Heading", 8)
    ]
    assert query(index, "SELECT alias FROM aliases") == [("First",)]
    assert query(index, "SELECT line, text, done FROM tasks ORDER BY line") == [
        (12, "open thing", 0),
        (13, "done thing", 1),
    ]
    assert query(index, "SELECT title FROM notes_fts WHERE notes_fts MATCH 'inline'") == [
        ("Alpha note",)
    ]


def test_reconcile_counts_new_files(build: Build) -> None:
    index = build({"a.md": "a\n", "b.md": "b\n", "img/c.png": b"png"}, reconcile=False)
    assert without_seconds(index.reconcile()) == (3, 3, 0, 0)
    assert query(index, "SELECT path FROM notes ORDER BY path") == [
        ("a.md",),
        ("b.md",),
        ("img/c.png",),
    ]


def test_reconcile_removes_the_temporary_files_a_killed_write_left_and_no_others(
    build: Build,
) -> None:
    """A process killed between writing a note's temporary file and renaming it leaves
    `.sbtmp-…` beside the note; the next reconcile (a node's start) removes it once no write
    can still be making it, and leaves a fresh one, a look-alike folder and anything else."""
    index = build({"a.md": "a\n", "deep/b.md": "b\n"}, reconcile=False)
    old = [put(index, ".sbtmp-0123abcd", "half a"), put(index, "deep/.sbtmp-89ef", "half b")]
    fresh = put(index, "deep/.sbtmp-4567", "being written")
    other = put(index, ".obsidian-note", "kept")
    folder = index.root / ".sbtmp-folder"
    folder.mkdir()
    an_hour_ago = time.time() - 3600
    for path in (*old, other, folder):
        os.utime(path, (an_hour_ago, an_hour_ago))
    assert without_seconds(index.reconcile()) == (2, 2, 0, 0)
    assert not any(path.exists() for path in old)
    assert fresh.exists()
    assert other.exists()
    assert folder.is_dir()
    assert query(index, "SELECT path FROM notes ORDER BY path") == [("a.md",), ("deep/b.md",)]


def test_a_second_reconcile_over_an_unchanged_vault_changes_nothing(build: Build) -> None:
    index = build({"wiki/a.md": NOTE_A, "b.md": "# B\n[[a]]\n", "pic.png": b"png"})
    before = dump(index)
    with capture_logs() as logs:
        stats = index.reconcile()
    assert without_seconds(stats) == (3, 0, 0, 0)
    assert dump(index) == before
    assert [e["event"] for e in logs] == ["index_reconciled"]


def test_reconcile_detects_changed_content(build: Build) -> None:
    index = build({"a.md": "old words\n", "b.md": "b\n"})
    put(index, "a.md", "new words, more of them\n")
    assert without_seconds(index.reconcile()) == (2, 1, 0, 0)
    assert query(index, "SELECT hash, words FROM notes WHERE path = 'a.md'") == [
        (content_hash(b"new words, more of them\n"), 5)
    ]
    assert query(index, "SELECT path FROM notes_fts WHERE notes_fts MATCH 'old'") == []
    assert query(index, "SELECT path FROM notes_fts WHERE notes_fts MATCH 'more'") == [("a.md",)]


def test_reconcile_detects_a_same_size_change_by_its_mtime(build: Build) -> None:
    index = build({"a.md": "cat\n"})
    target = put(index, "a.md", "dog\n")
    stat = target.stat()
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert without_seconds(index.reconcile()) == (1, 1, 0, 0)
    assert query(index, "SELECT hash, mtime FROM notes") == [
        (content_hash(b"dog\n"), stat.st_mtime_ns + 1_000_000_000)
    ]


def test_reconcile_detects_a_touched_file_by_its_mtime_alone(build: Build) -> None:
    index = build({"a.md": "same\n"})
    target = index.root / "a.md"
    os.utime(target, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
    assert without_seconds(index.reconcile()) == (1, 1, 0, 0)
    assert query(index, "SELECT mtime FROM notes") == [(1_700_000_000_000_000_000,)]


def test_reconcile_removes_vanished_files_from_every_table(build: Build) -> None:
    index = build({"wiki/a.md": NOTE_A, "b.md": "# B\n[[a]]\n", "pic.png": b"png"})
    (index.root / "wiki" / "a.md").unlink()
    (index.root / "pic.png").unlink()
    assert without_seconds(index.reconcile()) == (1, 0, 2, 0)
    for table, rows in dump(index).items():
        assert all("wiki/a.md" not in row and "pic.png" not in row for row in rows), table
    # b's link to the vanished note is broken now
    assert query(index, "SELECT target, resolved FROM links") == [("a", "")]


def test_reconcile_skips_dot_directories(build: Build) -> None:
    index = build({"a.md": "a\n", ".obsidian/app.json": "{}", ".trash/x.md": "x\n"})
    assert query(index, "SELECT path FROM notes") == [("a.md",)]


def test_attachments_are_rows_with_is_note_0_their_file_name_as_title_and_no_hash(
    build: Build,
) -> None:
    index = build({"attachments/Diagram One.png": b"\x89PNG\r\n"})
    stat = (index.root / "attachments" / "Diagram One.png").stat()
    assert query(index, "SELECT * FROM notes") == [
        ("attachments/Diagram One.png", "Diagram One.png", stat.st_mtime_ns, 6, "", "", "", 0, 0)
    ]
    assert query(index, "SELECT count(*) FROM notes_fts") == [(0,)]


def _pdf(*pages: str) -> bytes:
    document = FPDF()
    document.set_font("helvetica", size=12)
    for text in pages:
        document.add_page()
        document.multi_cell(0, 10, text)
    return bytes(document.output())


def test_a_pdf_s_pages_are_searchable_text_on_a_row_still_marked_as_attachment(
    build: Build,
) -> None:
    index = build({"a/plan.pdf": _pdf("one", "two", "the ossifrage clause"), "n.md": "# N\n"})
    assert query(index, "SELECT is_note, words FROM notes WHERE path = 'a/plan.pdf'") == [(0, 0)]
    found = query(
        index,
        "SELECT f.path, f.body FROM notes_fts f WHERE notes_fts MATCH 'ossifrage'",
    )
    assert [path for path, _ in found] == ["a/plan.pdf"]
    assert found[0][1].split("\f")[2].strip() == "the ossifrage clause"


def test_a_changed_pdf_replaces_its_text_and_a_broken_one_has_none(build: Build) -> None:
    index = build({"a/plan.pdf": _pdf("first words")})
    (index.root / "a" / "plan.pdf").write_bytes(_pdf("second words"))
    index.update_path("a/plan.pdf")
    assert query(index, "SELECT path FROM notes_fts WHERE notes_fts MATCH 'second'") == [
        ("a/plan.pdf",)
    ]
    assert query(index, "SELECT count(*) FROM notes_fts WHERE notes_fts MATCH 'first'") == [(0,)]
    (index.root / "a" / "plan.pdf").write_bytes(b"%PDF-1.7 broken")
    index.update_path("a/plan.pdf")
    assert query(index, "SELECT is_note FROM notes WHERE path = 'a/plan.pdf'") == [(0,)]
    assert query(index, "SELECT count(*) FROM notes_fts") == [(0,)]


def test_notes_over_4_mib_and_non_utf8_notes_are_skipped_without_a_crash(build: Build) -> None:
    files: dict[str, str | bytes] = {
        "big.md": b"x" * (NOTE_LIMIT + 1),
        "latin1.md": "caf\xe9\n".encode("latin-1"),
        "ok.md": "fine\n",
    }
    index = build(files, reconcile=False)
    with capture_logs() as logs:
        stats = index.reconcile()
    assert without_seconds(stats) == (3, 1, 0, 2)
    assert query(index, "SELECT path FROM notes") == [("ok.md",)]
    skipped = {(e["path"], e["reason"]) for e in logs if e["event"] == "file_skipped"}
    assert skipped == {("big.md", "too_large"), ("latin1.md", "not_utf8")}
    index.update_paths(["big.md", "latin1.md"])
    assert query(index, "SELECT path FROM notes") == [("ok.md",)]


def test_hostile_files_are_skipped_reported_and_logged_once_and_the_rest_is_indexed(
    build: Build,
) -> None:
    index = build({"wiki/good.md": "# Good\n\nfindable words\n"}, reconcile=False)
    (index.root / ".git").mkdir()
    (index.root / ".git" / "config").write_text("[remote]\nurl = https://token@host/x\n")
    expected = plant_hostile_files(index.root)
    with capture_logs() as logs:
        stats = index.reconcile()
    assert query(index, "SELECT path FROM notes") == [("wiki/good.md",)]
    assert {item.path: item.reason for item in index.skips.listing()} == expected
    assert stats.skipped == len(expected)
    logged = {e["path"]: e["reason"] for e in logs if e["event"] == "file_skipped"}
    assert logged == expected
    assert str(index.root) not in json.dumps(logs, default=str)
    assert search.search(index, "findable").total == 1
    with capture_logs() as again:
        index.reconcile()
    assert [e for e in again if e["event"] == "file_skipped"] == []
    assert len(index.skips) == len(expected)


def test_an_unreadable_note_is_skipped_until_it_can_be_read(build: Build) -> None:
    index = build({"wiki/good.md": "# Good\n"}, reconcile=False)
    expected = plant_unreadable_file(index.root)
    with unprivileged():
        index.reconcile()
        assert {item.path: item.reason for item in index.skips.listing()} == expected
        index.update_paths(["wiki/locked.md"])
    assert query(index, "SELECT path FROM notes") == [("wiki/good.md",)]
    locked = index.root / "wiki" / "locked.md"
    locked.chmod(0o644)
    os.utime(locked, ns=(1_800_000_000_000_000_000, 1_800_000_000_000_000_000))
    index.update_paths(["wiki/locked.md"])
    assert len(index.skips) == 0
    assert query(index, "SELECT path FROM notes ORDER BY path") == [
        ("wiki/good.md",), ("wiki/locked.md",),
    ]  # fmt: skip


def test_an_unreadable_attachment_is_skipped_too(build: Build) -> None:
    index = build({"a.png": b"png"}, reconcile=False)
    (index.root / "a.png").chmod(0)
    with unprivileged():
        index.reconcile()
    assert query(index, "SELECT path FROM notes") == []
    assert [item.row() for item in index.skips.listing()] == [
        {"path": "a.png", "reason": "unreadable"}
    ]


def test_an_update_for_a_name_that_is_not_utf8_is_reported_not_raised(build: Build) -> None:
    index = build({"a.md": "# A\n"})
    with capture_logs() as logs:
        index.update_paths(["wiki/\udc80.md", "a.md"])
    assert [item.row() for item in index.skips.listing()] == [
        {"path": "wiki/\\x80.md", "reason": "bad_name"}
    ]
    assert [e["path"] for e in logs if e["event"] == "file_skipped"] == ["wiki/\\x80.md"]


def test_an_update_through_a_linked_folder_never_indexes_what_is_behind_it(build: Build) -> None:
    index = build({"a.md": "# A\n", "wiki/b.md": "# B\n"})
    (index.root / ".git").mkdir()
    (index.root / ".git" / "config").write_text("secret\n")
    (index.root / "git").symlink_to(".git", target_is_directory=True)
    (index.root / "wiki" / "up").symlink_to("..", target_is_directory=True)
    # what a watcher that follows links reports
    index.update_paths(["git/config", "git", "wiki/up/a.md", "wiki/up", ".git/config"])
    assert query(index, "SELECT path FROM notes ORDER BY path") == [("a.md",), ("wiki/b.md",)]


def test_a_note_of_exactly_4_mib_is_still_indexed(build: Build) -> None:
    index = build({"edge.md": b"word " * (NOTE_LIMIT // 5) + b"w" * (NOTE_LIMIT % 5)})
    assert query(index, "SELECT size FROM notes") == [(NOTE_LIMIT,)]


def test_a_note_that_becomes_too_large_or_undecodable_leaves_the_index(build: Build) -> None:
    index = build({"a.md": "# A\n", "b.md": "# B\n", "c.md": "[[a]] [[b]]\n"})
    put(index, "a.md", b"x" * (NOTE_LIMIT + 1))
    index.update_path("a.md")
    put(index, "b.md", b"\xff\xfe not utf-8")
    assert without_seconds(index.reconcile()) == (3, 0, 0, 2)
    assert query(index, "SELECT path FROM notes ORDER BY path") == [("c.md",)]
    assert query(index, "SELECT target, resolved FROM links ORDER BY target") == [
        ("a", ""),
        ("b", ""),
    ]


# ---------------------------------------------------------------------- rebuilds


def test_a_corrupt_index_file_is_deleted_rebuilt_and_logged(tmp_path: Path) -> None:
    vault = make_vault(tmp_path, {"a.md": "# A\nhello\n"})
    db = vault.root / ".secondbrain" / "index.db"
    db.parent.mkdir()
    db.write_bytes(b"this is not sqlite " * 512)
    with capture_logs() as logs:
        index = Index.open(vault.root, vault.name)
    try:
        assert [(e["event"], e["log_level"], e["vault"]) for e in logs] == [
            ("index_rebuilt", "error", "test")
        ]
        assert "not a database" in logs[0]["reason"]
        assert without_seconds(index.reconcile()) == (1, 1, 0, 0)
        assert query(index, "SELECT path, title FROM notes") == [("a.md", "A")]
    finally:
        index.close()
    assert (vault.root / "a.md").read_bytes() == b"# A\nhello\n"


def test_an_index_with_another_schema_version_is_rebuilt(tmp_path: Path) -> None:
    vault = make_vault(tmp_path, {"a.md": "# A\n"})
    index = Index.open(vault.root, vault.name)
    index.reconcile()
    index.close()
    with sqlite3.connect(vault.root / ".secondbrain" / "index.db") as conn:
        conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema'")
    conn.close()
    with capture_logs() as logs:
        index = Index.open(vault.root, vault.name)
    try:
        assert [e["event"] for e in logs] == ["index_rebuilt"]
        assert query(index, "SELECT count(*) FROM notes") == [(0,)]
        assert query(index, "SELECT value FROM meta WHERE key = 'schema'") == [(SCHEMA_VERSION,)]
        assert without_seconds(index.reconcile()) == (1, 1, 0, 0)
    finally:
        index.close()


def test_reopening_a_healthy_index_keeps_it_and_logs_nothing(tmp_path: Path) -> None:
    vault = make_vault(tmp_path, {"a.md": "# A\n"})
    Index.open(vault.root, vault.name).reconcile()
    with capture_logs() as logs:
        index = Index.open(vault.root, vault.name)
    try:
        assert logs == []
        assert without_seconds(index.reconcile()) == (1, 0, 0, 0)
    finally:
        index.close()


# ---------------------------------------------------------------------- single updates


def test_update_path_ingests_changes_and_drops_deleted_files(build: Build) -> None:
    index = build({"a.md": "# A\n"})
    put(index, "b.md", "# B\n[[a]]\n")
    index.update_path("b.md")
    assert query(index, "SELECT src, resolved FROM links") == [("b.md", "a.md")]
    (index.root / "a.md").unlink()
    index.update_paths(["a.md", "never-existed.md"])
    assert query(index, "SELECT path FROM notes") == [("b.md",)]
    assert query(index, "SELECT src, resolved FROM links") == [("b.md", "")]


def test_an_update_never_stores_a_snapshot_older_than_the_file(
    build: Build, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A slow update read v1; v2 (same size, same coarse mtime) was written and indexed since.

    File systems with coarse timestamps give both writes one mtime; the slow update
    must still not put v1 back over v2.
    """
    index = build({"a.md": "- [ ] v0\n"})
    target = index.root / "a.md"
    real_read = snapshot_mod.read
    calls = 0

    def slow_read(root: Path, rel: str, path: Path) -> object:
        nonlocal calls
        calls += 1
        snapshot = real_read(root, rel, path)
        if calls == 1:  # the slow update has its snapshot of v1; now a writer wins the race
            mtime = target.stat().st_mtime_ns
            target.write_bytes(b"- [x] v2\n")
            os.utime(target, ns=(mtime, mtime))
            index.update_path("a.md")
        return snapshot

    put(index, "a.md", "- [ ] v1\n")
    monkeypatch.setattr(snapshot_mod, "read", slow_read)
    index.update_path("a.md")
    assert query(index, "SELECT hash FROM notes") == [(content_hash(b"- [x] v2\n"),)]
    assert query(index, "SELECT text, done FROM tasks") == [("v2", 1)]


def test_updates_racing_a_writer_end_with_the_file_s_content(build: Build) -> None:
    index = build({"a.md": "version 0\n", "b.md": "[[a]]\n"})
    target = index.root / "a.md"
    stop = threading.Event()
    errors: list[BaseException] = []

    def updater() -> None:
        try:
            while not stop.is_set():
                index.update_path("a.md")
        except BaseException as exc:  # the test asserts there were none
            errors.append(exc)

    threads = [threading.Thread(target=updater) for _ in range(4)]
    for thread in threads:
        thread.start()
    for n in range(300):
        target.write_bytes(f"version {n}\n".encode() * (1 + n % 3))
        if n % 7 == 0:
            index.update_path("a.md")
    stop.set()
    for thread in threads:
        thread.join()
    index.update_path("a.md")
    assert errors == []
    assert query(index, "SELECT hash, size FROM notes WHERE path = 'a.md'") == [
        (content_hash(target.read_bytes()), target.stat().st_size)
    ]
    assert query(index, "SELECT count(*) FROM notes_fts") == [(2,)]
    assert query(index, "SELECT resolved FROM links") == [("a.md",)]


def test_a_first_reconcile_tolerates_a_note_indexed_by_a_concurrent_update(
    build: Build, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index was empty when reconcile began; a tool write was indexed before its batch."""
    index = build({"a.md": "# A\n[[b]]\n", "b.md": "# B\n"}, reconcile=False)
    real_read = snapshot_mod.read
    raced = False

    def read_while_a_tool_writes(root: Path, rel: str, path: Path) -> object:
        nonlocal raced
        if not raced:
            raced = True
            index.update_path("a.md")
        return real_read(root, rel, path)

    monkeypatch.setattr(snapshot_mod, "read", read_while_a_tool_writes)
    assert without_seconds(index.reconcile()) == (2, 2, 0, 0)
    monkeypatch.undo()
    assert query(index, "SELECT path FROM notes ORDER BY path") == [("a.md",), ("b.md",)]
    assert query(index, "SELECT src, resolved FROM links") == [("a.md", "b.md")]
    assert query(index, "SELECT count(*) FROM notes_fts") == [(2,)]
    assert query(index, "SELECT count(*) FROM names WHERE path = 'a.md'") == [(3,)]


def test_reconcile_rechecks_that_a_file_is_gone_before_removing_it(
    build: Build, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = build({"a.md": "# A\n", "b.md": "[[a]]\n"})
    real_walk = paths.walk

    def walk_missing_a(
        root: Path, prefix: str = "", skipped: Any = None, temps: Any = None
    ) -> Iterator[paths.Entry]:
        # the walk ran while a.md was mid-rename: it did not see it, but it is there
        return (e for e in real_walk(root, prefix, skipped, temps) if e.rel != "a.md")

    monkeypatch.setattr(paths, "walk", walk_missing_a)
    assert without_seconds(index.reconcile()) == (1, 0, 0, 0)
    assert query(index, "SELECT path FROM notes ORDER BY path") == [("a.md",), ("b.md",)]
    assert query(index, "SELECT resolved FROM links") == [("a.md",)]


def test_update_path_rechecks_that_a_file_is_gone_before_removing_it(
    build: Build, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = build({"a.md": "# A\n"})
    real_read = snapshot_mod.read
    calls = 0

    def read_sees_it_gone_once(root: Path, rel: str, path: Path) -> object:
        nonlocal calls
        calls += 1
        return None if calls == 1 else real_read(root, rel, path)

    monkeypatch.setattr(snapshot_mod, "read", read_sees_it_gone_once)
    (index.root / "a.md").write_text("# A, changed\n")
    index.update_path("a.md")
    assert calls == 2
    assert query(index, "SELECT path, title FROM notes") == [("a.md", "A, changed")]


def test_an_update_for_a_file_the_index_already_holds_reads_no_note(
    build: Build, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = build({"a.md": "# A\n"})
    calls: list[str] = []
    monkeypatch.setattr(snapshot_mod, "read", lambda root, rel, path: calls.append(rel))
    index.update_path("a.md")
    assert calls == []
    assert query(index, "SELECT path, title FROM notes") == [("a.md", "A")]


def test_a_folder_moved_out_of_the_vault_leaves_the_index_with_everything_in_it(
    build: Build, tmp_path: Path
) -> None:
    index = build({
        "folder/a.md": "# A\n", "folder/sub/b.md": "# B\n", "folder/pic.png": b"png",
        "folder-x.md": "[[a]] [[b]] ![[pic.png]]\n", "folder0.md": "",
    })  # fmt: skip
    shutil.move(index.root / "folder", tmp_path / "outside")
    index.update_path("folder")  # the one event a move out of the watched tree gives
    assert query(index, "SELECT path FROM notes ORDER BY path") == [
        ("folder-x.md",),
        ("folder0.md",),
    ]
    assert query(index, "SELECT resolved FROM links") == [("",), ("",), ("",)]
    assert query(index, "SELECT count(*) FROM names WHERE path LIKE 'folder/%'") == [(0,)]


def test_an_update_for_an_existing_folder_changes_nothing(build: Build) -> None:
    index = build({"folder/a.md": "# A\n", "b.md": "[[a]]\n"})
    before = dump(index)
    index.update_path("folder")
    assert dump(index) == before


def test_a_symlink_is_never_indexed_and_one_leading_out_is_reported(
    build: Build, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("# Secret\npassword\n")
    index = build({"inside.md": "# Inside\n"})
    (index.root / "leak.md").symlink_to(secret)
    (index.root / "alias.md").symlink_to(index.root / "inside.md")
    index.update_paths(["leak.md", "alias.md"])
    # the note a link inside the vault leads to is indexed once, where it lies
    assert without_seconds(index.reconcile()) == (1, 0, 0, 1)
    assert query(index, "SELECT path FROM notes ORDER BY path") == [("inside.md",)]
    (index.root / "alias.md").unlink()
    (index.root / "alias.md").symlink_to(secret)
    assert without_seconds(index.reconcile()) == (1, 0, 0, 2)
    assert search.search(index, "password").total == 0
    assert [item.row() for item in index.skips.listing()] == [
        {"path": "alias.md", "reason": "symlink_outside"},
        {"path": "leak.md", "reason": "symlink_outside"},
    ]


# ---------------------------------------------------------------------- readers


def test_reader_connections_are_query_only(build: Build) -> None:
    index = build({"a.md": "# A\n"})
    with index.reading() as conn:
        assert conn.execute("PRAGMA query_only").fetchone() == (1,)
        with pytest.raises(sqlite3.OperationalError, match="readonly database"):
            conn.execute("DELETE FROM notes")
    assert query(index, "SELECT count(*) FROM notes") == [(1,)]


def test_searches_from_eight_threads_run_beside_a_writer(build: Build) -> None:
    files: dict[str, str | bytes] = {f"stable/{n}.md": f"alpha {n}\n" for n in range(20)}
    files.update({f"moving/{n}.md": "beta\n" for n in range(10)})
    index = build(files)
    done = threading.Event()

    def writer() -> int:
        rounds = 0
        while not done.is_set() or rounds < 5:
            for n in range(10):
                put(index, f"moving/{n}.md", f"beta round {rounds}\n")
            index.update_paths([f"moving/{n}.md" for n in range(10)])
            rounds += 1
        return rounds

    def searcher(_: int) -> list[int]:
        return [search.search(index, "alpha").total for _ in range(40)]

    with ThreadPoolExecutor(max_workers=9) as pool:
        writing = pool.submit(writer)
        totals = list(pool.map(searcher, range(8)))
        done.set()
        rounds = writing.result()
    assert totals == [[20] * 40] * 8
    assert query(index, "SELECT count(*) FROM notes WHERE path LIKE 'moving/%'") == [(10,)]
    assert search.search(index, "round").total == 10
    assert search.search(index, f'"round {rounds - 1}"').total == 10


# ---------------------------------------------------------------------- parameter limit


def test_link_lookups_by_many_keys_stay_under_the_bound_parameter_limit(
    build: Build,
) -> None:
    files: dict[str, str | bytes] = {f"n{n}.md": f"[[n{n + 1}]]\n" for n in range(1300)}
    index = build(files)
    keys = [f"n{n}" for n in range(1, 1301)]
    with index.reading() as conn:
        before = conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 999)
        try:
            with pytest.raises(sqlite3.OperationalError, match="too many SQL variables"):
                conn.execute(f"SELECT 1 FROM links WHERE key IN ({', '.join('?' * 1300)})", keys)
            rows = linkstore._rows_where(conn, "key", keys)
        finally:
            conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, before)
    assert len(rows) == 1300
    assert sorted(src for _rowid, src, _t, _w, _r in rows) == sorted(files)


def test_tags_of_many_paths_stays_under_the_bound_parameter_limit(build: Build) -> None:
    files: dict[str, str | bytes] = {f"n{n:04}.md": f"#t{n % 7}\n" for n in range(1300)}
    index = build(files)
    with index.reading() as conn:
        before = conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 999)
        try:
            found = search.tags_of(conn, sorted(files))
        finally:
            conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, before)
    assert found == {path: [f"t{int(path[1:5]) % 7}"] for path in files}


def test_reconcile_reports_progress_up_to_the_files_it_ingests(tmp_path: Path) -> None:
    vault = make_vault(tmp_path, {f"n{i}.md": f"# {i}\n" for i in range(450)})
    index = Index.open(vault.root, vault.name)
    seen: list[tuple[int, int]] = []
    index.reconcile(progress=lambda done, total: seen.append((done, total)))
    index.close()
    assert seen[-1] == (450, 450)
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)
    assert {total for _, total in seen} == {450}


def test_remove_deletes_the_index_and_every_sqlite_side_file(tmp_path: Path) -> None:
    state = tmp_path / ".secondbrain"
    state.mkdir()
    for suffix in ("", "-wal", "-shm", "-journal"):
        (state / f"index.db{suffix}").write_bytes(b"x")
    (state / "trash").mkdir()
    Index.remove(tmp_path)
    assert sorted(p.name for p in state.iterdir()) == ["trash"]
