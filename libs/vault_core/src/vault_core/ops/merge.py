"""Merging one note into another (`note_merge`, docs/design.md#tools).

The source's text is appended to the target under a heading with a provenance comment, its
title and file name become aliases of the target, the source goes to the trash, and links
to it are re-aimed at the target; one summary commit records it all.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field

from vault_core import edit, frontmatter, scope, sections
from vault_core.edit import Transform, WriteOp, WriteResult
from vault_core.errors import IncompleteError, InvalidArgumentError, VaultError
from vault_core.frontmatter import Frontmatter, alias_values
from vault_core.index.store import Index
from vault_core.note import Note, stem
from vault_core.ops import relink
from vault_core.ops.outcome import Skip
from vault_core.search import answers as queries
from vault_core.vault import Actor, Vault


@dataclass
class Merged:
    """The target's write, how many notes linked to the source, and the links re-aimed."""

    result: WriteResult
    source: str
    backlinks: int
    updates: list[relink.Update] = field(default_factory=list)
    relinked: list[str] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)


def merge_notes(
    vault: Vault,
    index: Index,
    target_path: str,
    source_path: str,
    *,
    heading: str | None = None,
    dry_run: bool = False,
    actor: Actor | None = None,
) -> Merged:
    """Merge `source_path` into `target_path`; IncompleteError if the source stays behind."""
    target, source = vault.read_note(target_path), vault.read_note(source_path)
    if target.path == source.path:
        raise InvalidArgumentError(
            "path and from are the same note; name the note that stays as path "
            "and the one that goes as from"
        )
    for path in (target.path, source.path):  # both change: refused before either does
        scope.check_write(path)
    relink.check_linkers_writable(index, source.path, "merging")
    planned = relink.plan(index, vault, source.path, target.path)
    incoming = queries.backlinks(index, source.path)["incoming"]
    op = WriteOp(
        target.path,
        _merge_into(target, source, heading, vault.now()),
        expected_hash=target.content_hash,
        dry_run=dry_run,
    )
    result = edit.apply(vault, op, actor)
    merged = Merged(
        result,
        source.path,
        backlinks=len({link["path"] for link in incoming}),
        updates=planned.updates,
        skipped=planned.skipped,
    )
    if not dry_run:
        _finish(vault, target, source, merged, actor)
    return merged


def _finish(vault: Vault, target: Note, source: Note, merged: Merged, actor: Actor | None) -> None:
    """Delete the source, re-aim links to it, commit once."""
    touched = [target.path, source.path]
    message = f"{vault.verbs.merge}: {source.path} -> {target.path}"
    try:
        edit.delete(vault, source.path, expected_hash=source.content_hash, reason=None, actor=actor)
    except VaultError as exc:
        edit.commit(vault, message, touched, actor)
        raise IncompleteError(
            f"merged {source.path} into {target.path}, but deleting the source "
            f"failed ({exc.message}); delete it with note_delete",
            exc.code,
        ) from exc
    done = relink.apply_all(vault, merged.updates, actor)
    merged.relinked, merged.skipped = done.written, [*merged.skipped, *done.skipped]
    merged.result.warnings += done.warnings
    merged.result.warnings += edit.commit(vault, message, [*touched, *done.written], actor)


def _merge_into(target: Note, source: Note, heading: str | None, now: dt.datetime) -> Transform:
    """Append the source under a heading with a provenance comment; its names become aliases."""
    block = _merged_block(source, heading or source.title, now.date().isoformat())
    names = [n for n in (source.title, stem(source.path)) if n]

    def transform(current: str, exists: bool) -> str:
        split = frontmatter.split(current)
        body = sections.section_edit(split.body, "append_to_note", heading=None, content=block)
        return edit.edit_frontmatter(
            split.block + body, target.path, lambda fm: _add_aliases(fm, names)
        )

    return transform


def _merged_block(source: Note, heading: str, day: str) -> str:
    body = source.body.lstrip("\n")
    first, _, rest = body.partition("\n")
    if re.match(r"#[ \t]", first):
        body = rest
    return f"## {heading}\n\n<!-- merged from {source.path} on {day} -->\n\n{body.strip()}\n"


def _add_aliases(fm: Frontmatter, names: list[str]) -> None:
    before = alias_values(fm.get("aliases"))
    after = sorted(set(before) | set(names))
    if after != before:
        fm.set("aliases", after)
