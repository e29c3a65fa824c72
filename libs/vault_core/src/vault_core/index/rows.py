"""The rows a file gives the index's tables, gathered for many files and inserted table by
table: a cold index runs one `executemany` per table per transaction, not eight per note.

A file's rows (`file_rows`) are made where it is parsed: by a worker process of a cold
index, which sends back those compact tuples instead of the parsed note (a fifth of the
bytes to unpickle, and no parse objects rebuilt in the writing process). Each file's
notes row gets its rowid when it is gathered (the next free one), so its search row can
name it without asking SQLite what it was given.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from vault_core.frontmatter import plain_value
from vault_core.index import linkstore
from vault_core.index.linkstore import Names, PathNames
from vault_core.words import languages
from vault_core.words.terms import spaced

if TYPE_CHECKING:
    from vault_core.frontmatter import Frontmatter
    from vault_core.index.snapshot import Snapshot

_INSERTS = {
    "notes": "notes (rowid, path, title, mtime, size, hash, created, updated, is_note, words)",
    "notes_fts": "notes_fts (rowid, path, title, body)",
    "tags": "tags (path, tag)",
    "links": "links (src, target, anchor, alias, wiki, resolved, key)",
    "headings": "headings (path, level, text, line)",
    "aliases": "aliases (path, alias)",
    "tasks": "tasks (path, line, text, done)",
    "names": "names (name, kind, path)",
    "translations": "translations (path, lang, key)",
}
_NUMBERED = ("notes", "notes_fts")  # their rows get the file's rowid in front when gathered

Row = tuple[object, ...]


@dataclass(frozen=True)
class FileRows:
    """The rows of one file, table by table (the notes and search rows without their
    rowid), and the names it can be linked by."""

    tables: dict[str, list[Row]]
    names: Names


def file_rows(snap: Snapshot, paths: PathNames | None = None) -> FileRows:
    """What `snap` gives each table; nothing for a skipped file (`Index.skips` lists it).
    Its links are resolved where `paths` (the vault's, when known) decide them."""
    if snap.rows is not None:
        return snap.rows
    if snap.skipped:
        return FileRows({}, [])
    rel, note = snap.rel, snap.note
    if note is None:
        name = rel.rsplit("/", 1)[-1]
        tables: dict[str, list[Row]] = {
            "notes": [(rel, name, snap.mtime_ns, snap.size, "", "", "", 0, 0)]
        }
        if snap.text:  # a PDF's pages: searchable text, its row still marked is_note = 0
            tables["notes_fts"] = [(rel, _spaced(name), _spaced(snap.text))]
        names, tables["names"] = linkstore.name_rows(rel, None, [])
        return FileRows(tables, names)
    meta = note.frontmatter
    key = _key(meta)
    tables = {
        "notes": [
            (
                rel,
                note.title,
                snap.mtime_ns,
                snap.size,
                note.content_hash,
                _text(meta.get("created")),
                _text(meta.get("updated")),
                1,
                note.words,
            )
        ],
        "notes_fts": [(rel, _spaced(note.title), _spaced(note.body))],
        "tags": [(rel, t) for t in note.tags],
        "links": linkstore.link_rows(rel, note.links, paths),
        "headings": [(rel, h.level, h.text, h.line) for h in note.headings],
        "aliases": [(rel, a) for a in note.aliases],
        "tasks": [(rel, t.line, t.text, int(t.done)) for t in note.tasks],
        "translations": [(rel, _language(note.title, note.body, key), key)],
    }
    names, tables["names"] = linkstore.name_rows(rel, note.title, note.aliases)
    return FileRows({table: rows for table, rows in tables.items() if rows}, names)


class Rows:
    """Rows of files not yet in the index (their old rows already deleted)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        (self._rowid,) = conn.execute("SELECT coalesce(max(rowid), 0) + 1 FROM notes").fetchone()
        self._tables: defaultdict[str, list[Row]] = defaultdict(list)

    def add(self, snap: Snapshot) -> Names:
        """Gather the rows of `snap`; returns the names it can be linked by."""
        found = file_rows(snap)
        if not found.tables:
            return found.names
        rowid = self._rowid
        self._rowid += 1
        add = self._tables
        for table, rows in found.tables.items():
            if table in _NUMBERED:
                add[table] += [(rowid, *row) for row in rows]
            else:
                add[table] += rows
        return found.names

    def insert(self, conn: sqlite3.Connection) -> None:
        """Insert what was gathered, one table at a time, and start empty again."""
        for table, into in _INSERTS.items():
            rows = self._tables.pop(table, None)
            if rows:
                marks = ", ".join("?" * len(rows[0]))
                conn.executemany(f"INSERT INTO {into} VALUES ({marks})", rows)


def _spaced(text: str) -> str:
    # ASCII holds no CJK character: checked at C speed, where the search for one scanned
    # every note (a twelfth of a cold index's parse in a vault of Latin text).
    return text if text.isascii() else spaced(text)


def _language(title: str, body: str, key: str) -> str:
    return languages.of_note(title, body) if key else languages.rough(body)


def _key(meta: Frontmatter) -> str:
    """What names the note and its translations alike: its `permalink` (Obsidian Publish's
    address of a page, which a multilingual vault gives each translation of it)."""
    value = meta.get("permalink")
    return value.strip() if isinstance(value, str) else ""


def _text(value: object) -> str:
    return "" if value is None else str(plain_value(value))
