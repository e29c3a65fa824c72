"""Checking a vault without an index: every note parsed, what needs a person listed.

What `secondbrain vault check` prints: counts of notes, attachments, links and tags, and
each note that cannot be read (not UTF-8, too large, not a regular file) or whose
frontmatter is not valid YAML, with a reason code and a message.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from vault_core.errors import VaultError
from vault_core.vault import Vault


@dataclass
class Report:
    """What a check found: counts and the notes that need a person's attention."""

    vault: str
    notes: int = 0
    attachments: int = 0
    links: int = 0
    tags: set[str] = field(default_factory=set)
    problems: list[dict[str, str]] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {
            "vault": self.vault,
            "notes": self.notes,
            "attachments": self.attachments,
            "links": self.links,
            "tags": len(self.tags),
            "problems": self.problems,
        }


def check_vault(vault: Vault) -> Report:
    """Parse every note; report invalid frontmatter, non-UTF-8 and oversized files."""
    report = Report(vault.name)
    for entry in vault.walk():
        if not entry.rel.lower().endswith(".md"):
            report.attachments += 1
            continue
        report.notes += 1
        try:
            note = vault.read_note(entry.rel)
        except VaultError as exc:
            report.problems.append({"path": entry.rel, "code": exc.code, "problem": exc.message})
            continue
        report.links += len(note.links)
        report.tags.update(note.tags)
        if note.frontmatter_error:
            report.problems.append(
                {"path": entry.rel, "code": "invalid_argument", "problem": note.frontmatter_error}
            )
    return report
