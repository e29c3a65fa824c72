"""Helpers several tool modules share: paths that may name attachments, note views, days."""

from __future__ import annotations

import datetime as dt
from typing import Any

from vault_core import (
    ATTACHMENT_TYPES,
    Note,
    NoteNotFoundError,
    Vault,
    paths,
    sections,
)
from vault_core.search import modified
from vault_node.tools.shape import ANY_OBJ, BOOL, INT, STR, STRS, arr, obj

__all__ = ["modified"]

NOTE_PATH = "Note path, e.g. wiki/x.md (.md optional)."
HASH = "From note_read; refused if the note changed since."
DRY = "Show the diff, write nothing."

HEADING = obj({"level": INT, "text": STR, "line": INT})
LINK = obj({"target": STR, "anchor": STR, "alias": STR, "embed": BOOL, "line": INT})
TASK = obj({"line": INT, "text": STR, "done": BOOL})
LINKED = obj({"path": STR, "title": STR, "target": STR, "anchor": STR})
NOTE_REF = obj({"path": STR, "title": STR})
FRONTMATTER = ANY_OBJ
TAGS = STRS
LINKS_ARR = arr(LINK)


def any_path(vault: Vault, raw: str) -> paths.Resolved:
    """A note path (`.md` optional) or, with an attachment extension, the attachment's path."""
    if raw.strip().lower().endswith(ATTACHMENT_TYPES):
        return vault.resolve(raw)
    return vault.resolve_note(raw)


def check_prefix(vault: Vault, raw: str | None) -> str:
    """A folder prefix, checked like any path (symlinks included); '' is the whole vault."""
    return vault.resolve_folder(raw) if raw and raw.strip() else ""


def headings(note: Note) -> list[dict[str, Any]]:
    return [{"level": h.level, "text": h.text, "line": h.line} for h in note.headings]


def links(note: Note) -> list[dict[str, Any]]:
    return [
        {"target": k.target, "anchor": k.anchor, "alias": k.alias, "embed": k.embed, "line": k.line}
        for k in note.links
    ]


def tasks(note: Note) -> list[dict[str, Any]]:
    return [{"line": t.line, "text": t.text, "done": t.done} for t in note.tasks]


def section_text(note: Note, heading: str) -> str:
    """The text of one section, its heading line included (`note_read` with `section`)."""
    found = sections.find_section(note.body, heading, note.path)
    lines = note.body.split("\n")
    return "\n".join(lines[found.start : found.end]) + "\n"


def read_if_exists(vault: Vault, rel: str) -> Note | None:
    try:
        return vault.read_note(rel)
    except NoteNotFoundError:
        return None


def today(vault: Vault) -> dt.date:
    return vault.now().date()


def note_head(note: Note) -> dict[str, Any]:
    """What every view of a note starts with (no body)."""
    return {
        "path": note.path,
        "title": note.title,
        "content_hash": note.content_hash,
        "bytes": note.size,
        "modified": modified(note.mtime_ns),
        "frontmatter": note.metadata(),
    }
