"""The index schema: docs/design.md#index-schema as written, plus two additions for link
resolution and `embedded` (the hash each note had when its vectors were made, per model).

`links.key` and the `names` table let a change to one note re-resolve only the
links that could point to it, so a write costs the same at 100 or 50,000 notes. The
secondary indexes are listed apart: a cold index fills the tables without them and builds
them once at the end, which sorts once instead of inserting every row at a random place.
The totals `vault_stats` reads are kept by triggers (`vault_core.totals`).
"""

from __future__ import annotations

from vault_core.index import totals

SCHEMA_VERSION = "5"  # 3: CJK characters as single-character tokens; 4: PDF page text;
# 5: each note's language and translation key

TABLES = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);

CREATE TABLE IF NOT EXISTS notes (
    path     TEXT PRIMARY KEY,
    title    TEXT NOT NULL DEFAULT '',
    mtime    INTEGER NOT NULL DEFAULT 0,
    size     INTEGER NOT NULL DEFAULT 0,
    hash     TEXT NOT NULL DEFAULT '',
    created  TEXT NOT NULL DEFAULT '',
    updated  TEXT NOT NULL DEFAULT '',
    is_note  INTEGER NOT NULL DEFAULT 1,
    words    INTEGER NOT NULL DEFAULT 0
);

CREATE VIRTUAL TABLE IF NOT EXISTS notes_fts USING fts5(
    path UNINDEXED, title, body,
    tokenize = "unicode61 remove_diacritics 2"
);

CREATE TABLE IF NOT EXISTS tags (path TEXT NOT NULL, tag TEXT NOT NULL);

CREATE TABLE IF NOT EXISTS links (
    src      TEXT NOT NULL,
    target   TEXT NOT NULL,
    anchor   TEXT NOT NULL DEFAULT '',
    alias    TEXT NOT NULL DEFAULT '',
    wiki     INTEGER NOT NULL DEFAULT 1,
    resolved TEXT NOT NULL DEFAULT '',
    key      TEXT NOT NULL DEFAULT ''
);

CREATE TABLE IF NOT EXISTS headings (
    path TEXT NOT NULL, level INTEGER NOT NULL,
    text TEXT NOT NULL, line INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS aliases (path TEXT NOT NULL, alias TEXT NOT NULL);

CREATE TABLE IF NOT EXISTS tasks (
    path TEXT NOT NULL, line INTEGER NOT NULL,
    text TEXT NOT NULL, done INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS embeddings (
    path    TEXT NOT NULL,
    chunk   INTEGER NOT NULL,
    model   TEXT NOT NULL,
    heading TEXT NOT NULL DEFAULT '',
    vector  BLOB NOT NULL,
    PRIMARY KEY (path, chunk, model)
);

CREATE TABLE IF NOT EXISTS embedded (
    path  TEXT NOT NULL,
    model TEXT NOT NULL,
    hash  TEXT NOT NULL,
    PRIMARY KEY (path, model)
);

CREATE TABLE IF NOT EXISTS translations (
    path TEXT NOT NULL,
    lang TEXT NOT NULL,
    key  TEXT NOT NULL DEFAULT ''
);

CREATE TABLE IF NOT EXISTS names (
    name TEXT NOT NULL,
    kind INTEGER NOT NULL,
    path TEXT NOT NULL
);
"""

INDEXES = (
    ("tags_tag", "tags", "tag"),
    ("tags_path", "tags", "path"),
    ("links_src", "links", "src"),
    ("links_resolved", "links", "resolved"),
    ("links_key", "links", "key"),
    ("headings_path", "headings", "path"),
    ("aliases_alias", "aliases", "alias"),
    ("aliases_path", "aliases", "path"),
    ("tasks_path", "tasks", "path"),
    ("names_name", "names", "name, kind"),
    ("names_path", "names", "path"),
    ("translations_path", "translations", "path"),
    ("translations_key", "translations", "key, lang"),
    ("notes_mtime", "notes", "mtime"),
)
"""Every secondary index: name, table, columns. Each is created `IF NOT EXISTS` on every
open, so one added here reaches an existing index the next time it is opened (as
`aliases_path` did: without it, replacing a note's rows scanned every alias)."""

CREATE_INDEXES = "".join(
    f"CREATE INDEX IF NOT EXISTS {name} ON {table}({columns});\n"
    for name, table, columns in INDEXES
)
SCHEMA = TABLES + totals.TABLES + CREATE_INDEXES + totals.CREATE_TRIGGERS
