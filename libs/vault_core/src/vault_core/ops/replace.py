"""Find and replace across the notes under a folder (`vault_replace`,
docs/design.md#tools).

Everything is planned first — which notes change, how often — and nothing is written when
more notes would change than the caller allows. A note that cannot be read is skipped and
reported, one that changed between the plan and its write keeps its change and says why it
was not written; the rest are committed once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from vault_core import deadline, diff, edit, scope
from vault_core.edit import WriteOp
from vault_core.errors import TooManyNotesError, VaultError
from vault_core.note import Note
from vault_core.ops.outcome import Skip
from vault_core.vault import Actor, Vault

Replacer = Callable[[str], tuple[str, int]]
"""A note's text → the new text and how many replacements were made in it."""


@dataclass(frozen=True)
class Change:
    """One planned note: the diff (dry run), the new content hash (written), or why its
    write failed (it changed since the plan, say)."""

    path: str
    matches: int
    diff: str = ""
    content_hash: str = ""
    error: str = ""


@dataclass
class Replaced:
    """Every planned note, the notes that could not be read, and warnings."""

    dry_run: bool
    changes: list[Change] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def occurrences(self) -> int:
        return sum(change.matches for change in self.changes)


def replace_text(
    vault: Vault,
    replace: Replacer,
    *,
    prefix: str = "",
    limit: int = 50,
    dry_run: bool = True,
    actor: Actor | None = None,
) -> Replaced:
    """Apply `replace` to every note under `prefix`; TooManyNotesError over `limit` notes."""
    done = Replaced(dry_run)
    planned: list[tuple[Note, str, int]] = []
    for entry in deadline.checked(vault.notes(prefix)):
        try:
            found = vault.read_note(entry.rel)
        except VaultError as exc:
            done.skipped.append(Skip.of(entry.rel, exc))
            continue
        new_text, count = replace(found.text)
        if count:
            planned.append((found, new_text, count))
    if len(planned) > limit:
        raise TooManyNotesError(
            f"{len(planned)} notes would change, more than limit {limit}; nothing was "
            "written. Narrow it with prefix, or raise limit deliberately (at most 500) "
            "after a dry run"
        )
    for found, new_text, count in planned:
        done.changes.append(_replace_one(vault, found, new_text, count, done, actor=actor))
    written = [change.path for change in done.changes if change.content_hash]
    if written:
        done.warnings += edit.commit(
            vault, f"{vault.verbs.replace}: {len(written)} notes", written, actor
        )
    return done


def _replace_one(
    vault: Vault, found: Note, new_text: str, count: int, done: Replaced, *, actor: Actor | None
) -> Change:
    try:
        scope.check_write(found.path)  # a dry run says already what the write would refuse
    except VaultError as exc:
        return Change(found.path, count, error=exc.message)
    if done.dry_run:
        return Change(found.path, count, diff=diff.unified(found.text, new_text, found.path))
    op = WriteOp(
        found.path,
        lambda current, exists: new_text,
        expected_hash=found.content_hash,
        skip_touch=True,
    )
    try:
        result = edit.apply(vault, op, actor)
    except VaultError as exc:
        return Change(found.path, count, error=exc.message)
    done.warnings += result.warnings
    return Change(found.path, count, content_hash=result.content_hash)
