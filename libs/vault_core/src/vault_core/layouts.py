"""Vault layouts: the folders, templates and `instructions.md` a new vault starts with.

The instructions are the vault's conventions for agents; they travel in the
`initialize` answer (docs/design.md#instructions) and can be rewritten by hand at any time.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from vault_core import storage
from vault_core.errors import StorageError, UnknownLayoutError, VaultExistsError
from vault_core.paths import Resolved, check_vault_name
from vault_core.vault import STATE_DIR

INSTRUCTIONS = "instructions.md"

_COMMON = """
## Working in this vault
- Search before you write (note_search, then vault_grep); extend an existing note
  rather than creating a near-duplicate.
- Read before you change, and pass the content_hash you read back with the change.
- Prefer note_section_edit and note_edit over rewriting a whole note with note_write.
- Link related notes with [[wiki links]]; every new note should link to at least one
  existing note and be linked from one.
- Use dry_run for anything that touches more than one note.
- Quick thoughts go to the inbox (inbox_capture); the day's log goes to the daily note
  (daily_note, journal/YYYY/YYYY-MM-DD.md).
"""

_TEMPLATE_NOTE = """---
title: "{{title}}"
tags: []
---
# {{title}}

"""


@dataclass(frozen=True)
class Layout:
    name: str
    summary: str
    directories: tuple[str, ...]
    templates: dict[str, str]

    def instructions(self, vault: str) -> str:
        return f"# Conventions of the vault {vault}\n\n{self.summary}\n{_COMMON}"


LAYOUTS: dict[str, Layout] = {
    "wiki-raw": Layout(
        "wiki-raw",
        "Sources go into raw/ unchanged (articles, transcripts, notes from elsewhere).\n"
        "wiki/ holds the distilled knowledge: one concept per note, written and kept current\n"
        "by agents and people, citing the raw/ notes it came from.",
        ("wiki", "raw", "inbox", "journal", "attachments", "templates"),
        {
            "wiki-page": _TEMPLATE_NOTE + "## Summary\n\n## Details\n\n## Sources\n",
            "source": _TEMPLATE_NOTE + "Captured: {{datetime}}\n\n## Content\n\n## Takeaways\n",
            "meeting": _TEMPLATE_NOTE + "Date: {{date}}\n\n## Attendees\n\n## Notes\n\n"
            "## Actions\n- [ ] \n",
        },
    ),
    "zettelkasten": Layout(
        "zettelkasten",
        "zettel/ holds permanent notes: one idea each, in your own words, densely linked.\n"
        "literature/ holds notes on what you read; fleeting thoughts start in inbox/.",
        ("zettel", "literature", "inbox", "journal", "attachments", "templates"),
        {
            "zettel": _TEMPLATE_NOTE + "\n## Links\n",
            "literature": _TEMPLATE_NOTE + "Source: \n\n## Key ideas\n\n## My thoughts\n",
        },
    ),
    "para": Layout(
        "para",
        "projects/ have a goal and an end date; areas/ are responsibilities kept up over time;\n"
        "resources/ are topics of interest; archive/ holds whatever is no longer active.",
        (
            "projects",
            "areas",
            "resources",
            "archive",
            "inbox",
            "journal",
            "attachments",
            "templates",
        ),
        {
            "project": _TEMPLATE_NOTE + "## Goal\n\n## Deadline\n\n## Tasks\n- [ ] \n\n## Log\n",
            "area": _TEMPLATE_NOTE + "## Standard to keep\n\n## Notes\n",
            "resource": _TEMPLATE_NOTE + "## Summary\n\n## Links\n",
        },
    ),
    "empty": Layout(
        "empty",
        "No folder structure is imposed; organise notes as the vault grows.",
        (),
        {},
    ),
}


@dataclass(frozen=True)
class Created:
    vault: str
    layout: str
    root: Path
    directories: list[str]
    files: list[str]
    instructions: str


def create(data_dir: Path, name: str, layout: str = "wiki-raw") -> Created:
    """Create a vault directory with its layout; refuses an existing one."""
    check_vault_name(name)
    chosen = LAYOUTS.get(layout.strip())
    if chosen is None:
        raise UnknownLayoutError(layout, LAYOUTS)
    root = data_dir / name
    try:
        root.mkdir(parents=True, exist_ok=False)
    except FileExistsError as exc:
        raise VaultExistsError(name) from exc
    except OSError as exc:
        raise StorageError(name, exc.strerror or "cannot create the vault folder") from exc
    files = []
    for directory in chosen.directories:
        files.append(_write(root, f"{directory}/.gitkeep", ""))
    for template, text in chosen.templates.items():
        files.append(_write(root, f"templates/{template}.md", text))
    instructions = chosen.instructions(name)
    _write(root, f"{STATE_DIR}/{INSTRUCTIONS}", instructions)
    return Created(name, chosen.name, root, list(chosen.directories), files, instructions)


def read_instructions(root: Path) -> str:
    """The vault's `.secondbrain/instructions.md`, or '' when absent or unreadable."""
    path = root / STATE_DIR / INSTRUCTIONS
    try:
        if not path.is_file():
            return ""  # a pipe in its place would hold every initialize
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def _write(root: Path, rel: str, text: str) -> str:
    target = root.joinpath(*rel.split("/"))
    storage.write_atomic(Resolved(rel, target), text.encode(), trash_from=None, state_dir=root)
    return rel
