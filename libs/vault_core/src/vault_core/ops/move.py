"""Moving a note and re-aiming every link to it (`note_move`, docs/design.md#tools).

The plan is made before anything moves: which notes link to the note, and how each link
must read afterwards (and the moved note's own relative links, seen from its new folder).
Then the rename, the link rewrites, and one summary commit of everything touched.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from vault_core import edit
from vault_core.index.store import Index
from vault_core.ops import relink
from vault_core.ops.outcome import Skip
from vault_core.vault import Actor, Vault


@dataclass
class Moved:
    """A move as done (or, for a dry run, as it would be done)."""

    source: str
    target: str
    dry_run: bool
    updates: list[relink.Update] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def move_note(
    vault: Vault,
    index: Index,
    source: str,
    target: str,
    *,
    update_links: bool = True,
    overwrite: bool = False,
    dry_run: bool = False,
    actor: Actor | None = None,
) -> Moved:
    """Move `source` to `target`; an overwritten target goes to the trash first."""
    src, dst = edit.move(vault, source, target, overwrite=overwrite, dry_run=True)
    planned = relink.Plan()
    if update_links:
        relink.check_linkers_writable(index, src.rel, "moving")
        planned = relink.plan(index, vault, src.rel, dst.rel)
        relink.plan_own(index, vault, src.rel, dst.rel, planned)
    moved = Moved(src.rel, dst.rel, dry_run, planned.updates, skipped=planned.skipped)
    if dry_run:
        return moved
    edit.move(vault, src.rel, dst.rel, overwrite=overwrite)
    moved.warnings += edit.reindex(vault, [src.rel, dst.rel])
    done = relink.apply_all(vault, planned.updates, actor)
    moved.written, moved.skipped = done.written, [*moved.skipped, *done.skipped]
    moved.warnings += done.warnings
    touched = [src.rel, dst.rel, *done.written]
    moved.warnings += edit.commit(
        vault, f"{vault.verbs.move}: {src.rel} -> {dst.rel}", touched, actor
    )
    return moved
