"""The vault's totals kept beside the rows they count, so `vault_stats` reads a few rows.

Triggers on notes, links, tasks and tags update them in the same write transaction as
the rows, so they can never disagree with what a query over the tables would count. An
empty index being filled drops the triggers and counts once at the end (`recount`).
"""

from __future__ import annotations

import sqlite3
from typing import Any

TABLES = """
CREATE TABLE IF NOT EXISTS totals (
    id INTEGER PRIMARY KEY CHECK (id = 0),
    notes INTEGER NOT NULL, attachments INTEGER NOT NULL, words INTEGER NOT NULL,
    bytes INTEGER NOT NULL, links INTEGER NOT NULL, broken INTEGER NOT NULL,
    open_tasks INTEGER NOT NULL, linked INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS tag_totals (tag TEXT PRIMARY KEY, notes INTEGER NOT NULL)
    WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS degrees (path TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;
"""
# `degrees`: the resolved links between two notes each path is an end of; `linked`: the
# notes whose degree is above 0 (the others are orphans, `vault_stats`).

_A_NOTE = "EXISTS (SELECT 1 FROM notes WHERE path = {p} AND is_note = 1)"
_LINKS = "(SELECT 1 FROM degrees WHERE path = {p} AND n > 0)"
_JOINS = "{r}.resolved NOT IN ('', {r}.src)"


def _notes(sign: str, row: str) -> str:
    linked = f"({row}.is_note = 1 AND EXISTS {_LINKS.format(p=row + '.path')})"
    return (
        f"UPDATE totals SET notes = notes {sign} {row}.is_note,"
        f" attachments = attachments {sign} (1 - {row}.is_note),"
        f" words = words {sign} {row}.words, bytes = bytes {sign} {row}.size,"
        f" linked = linked {sign} {linked} WHERE id = 0;"
    )


def _links(sign: str, row: str) -> str:
    ends = f"SELECT {row}.src AS p WHERE {_JOINS.format(r=row)}"
    ends += f" UNION ALL SELECT {row}.resolved WHERE {_JOINS.format(r=row)}"
    counted = (
        f"UPDATE totals SET links = links {sign} 1,"
        f" broken = broken {sign} ({row}.resolved = '') WHERE id = 0;"
    )
    if sign == "+":
        degree = (
            f"INSERT INTO degrees (path, n) SELECT p, 1 FROM ({ends})"
            " WHERE true ON CONFLICT (path) DO UPDATE SET n = n + 1;"
        )
    else:
        degree = f"UPDATE degrees SET n = n - 1 WHERE path IN ({ends});"
    return counted + degree


def _tasks(sign: str, row: str) -> str:
    return f"UPDATE totals SET open_tasks = open_tasks {sign} ({row}.done = 0) WHERE id = 0;"


def _tags(sign: str, row: str) -> str:
    if sign == "+":
        return (
            f"INSERT INTO tag_totals (tag, notes) VALUES ({row}.tag, 1)"
            " ON CONFLICT (tag) DO UPDATE SET notes = notes + 1;"
        )
    return (
        f"UPDATE tag_totals SET notes = notes - 1 WHERE tag = {row}.tag;"
        f" DELETE FROM tag_totals WHERE tag = {row}.tag AND notes <= 0;"
    )


def _triggers() -> list[tuple[str, str]]:
    made = []
    for table, body in (("notes", _notes), ("links", _links), ("tasks", _tasks), ("tags", _tags)):
        made += [
            (f"{table}_counted_in", f"AFTER INSERT ON {table} BEGIN {body('+', 'new')} END"),
            (f"{table}_counted_out", f"AFTER DELETE ON {table} BEGIN {body('-', 'old')} END"),
            (
                f"{table}_counted_change",
                f"AFTER UPDATE ON {table} BEGIN {body('-', 'old')} {body('+', 'new')} END",
            ),
        ]
    a_note = _A_NOTE.format(p="new.path")
    made += [
        (
            "degrees_counted_in",
            "AFTER INSERT ON degrees BEGIN UPDATE totals SET linked = linked + 1"
            f" WHERE id = 0 AND new.n > 0 AND {a_note}; END",
        ),
        (
            "degrees_counted_change",
            "AFTER UPDATE OF n ON degrees WHEN (old.n > 0) != (new.n > 0) BEGIN"
            " UPDATE totals SET linked = linked + (CASE WHEN new.n > 0 THEN 1 ELSE -1 END)"
            f" WHERE id = 0 AND {a_note}; END",
        ),
    ]
    return made


TRIGGERS = _triggers()
"""Every trigger that keeps the totals: name, definition after `CREATE TRIGGER name`."""

CREATE_TRIGGERS = "".join(
    f"CREATE TRIGGER IF NOT EXISTS {name} {body};\n" for name, body in TRIGGERS
)
DROP_TRIGGERS = "".join(f"DROP TRIGGER IF EXISTS {name};\n" for name, _body in TRIGGERS)

_RECOUNT = f"""
DELETE FROM totals; DELETE FROM tag_totals; DELETE FROM degrees;
INSERT INTO tag_totals (tag, notes) SELECT tag, count(*) FROM tags GROUP BY tag;
INSERT INTO degrees (path, n) SELECT p, count(*) FROM (
    SELECT src AS p FROM links WHERE {_JOINS.format(r="links")}
    UNION ALL SELECT resolved FROM links WHERE {_JOINS.format(r="links")}
) GROUP BY p;
INSERT INTO totals SELECT 0,
    (SELECT coalesce(sum(is_note), 0) FROM notes),
    (SELECT coalesce(sum(1 - is_note), 0) FROM notes),
    (SELECT coalesce(sum(words), 0) FROM notes),
    (SELECT coalesce(sum(size), 0) FROM notes),
    (SELECT count(*) FROM links),
    (SELECT count(*) FROM links WHERE resolved = ''),
    (SELECT count(*) FROM tasks WHERE done = 0),
    (SELECT count(*) FROM degrees d JOIN notes n ON n.path = d.path
        WHERE d.n > 0 AND n.is_note = 1);
"""


def recount(conn: sqlite3.Connection) -> None:
    """Count the totals from the tables (inside the caller's write transaction)."""
    for statement in _RECOUNT.split(";"):
        if statement.strip():
            conn.execute(statement)


def missing(conn: sqlite3.Connection) -> bool:
    """True when the totals were never counted (an index made before they existed)."""
    return conn.execute("SELECT 1 FROM totals WHERE id = 0").fetchone() is None


def read(conn: sqlite3.Connection, top: int = 10) -> dict[str, Any]:
    """The totals as `vault_stats` names them, with the `top` tags (most notes first)."""
    row = conn.execute(
        "SELECT notes, attachments, words, bytes, links, broken, open_tasks, linked"
        " FROM totals WHERE id = 0"
    ).fetchone()
    notes, attachments, words, size, links, broken, open_tasks, linked = row or (0,) * 8
    (tags,) = conn.execute("SELECT count(*) FROM tag_totals").fetchone()
    tops = conn.execute(
        "SELECT tag, notes FROM tag_totals ORDER BY notes DESC, tag LIMIT ?", (top,)
    ).fetchall()
    return {
        "notes": notes,
        "attachments": attachments,
        "words": words,
        "bytes": size,
        "tags": tags,
        "links": links,
        "broken_links": broken,
        "orphans": notes - linked,
        "open_tasks": open_tasks,
        "top_tags": [f"{tag} ({count})" for tag, count in tops],
    }
