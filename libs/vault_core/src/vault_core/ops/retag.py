"""Renaming a tag everywhere (`tag_rename`): frontmatter tags and inline #tags.

Subtags follow (`#old/x` becomes `#new/x`); renaming to a tag that exists merges the two.
An inline tag is what the index reads as one (`markdown.tag_matches`), outside code. A note
that cannot be changed is skipped and reported; the rest are committed once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from vault_core import edit, markdown
from vault_core.edit import WriteOp
from vault_core.errors import FrontmatterError, InvalidArgumentError, VaultError
from vault_core.frontmatter import Frontmatter, normalize_tag, tag_values
from vault_core.index.store import Index
from vault_core.ops import relink
from vault_core.ops.outcome import Skip
from vault_core.search import fts as search
from vault_core.vault import Actor, Vault


@dataclass
class Retagged:
    """The notes changed (with their diffs for a dry run), those skipped, and warnings."""

    old: str
    new: str
    dry_run: bool
    changed: list[tuple[str, str]] = field(default_factory=list)  # (path, diff)
    skipped: list[Skip] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def rename_tag(
    vault: Vault,
    index: Index,
    old: str,
    new: str,
    *,
    dry_run: bool = True,
    actor: Actor | None = None,
) -> Retagged:
    """Rename tag `old` to `new` (with or without `#`) in every note that carries it."""
    old, new = _checked(old, new)
    hits = search.search(index, "", search.Filters(tags=[old]), limit=1_000_000)
    done = Retagged(old, new, dry_run)
    for path in sorted(hit.path for hit in hits.hits):
        op = WriteOp(path, _retag(old, new), dry_run=dry_run, skip_touch=True)
        try:
            result = edit.apply(vault, op, actor)
        except VaultError as exc:
            done.skipped.append(Skip.of(path, exc))
            continue
        done.warnings += result.warnings
        if result.changed:
            done.changed.append((path, result.diff))
    if done.changed and not dry_run:
        written = [path for path, _ in done.changed]
        done.warnings += edit.commit(
            vault, f"{vault.verbs.retag}: #{old} -> #{new}", written, actor
        )
    return done


def _checked(old: str, new: str) -> tuple[str, str]:
    before, after = normalize_tag(old), normalize_tag(new)
    if not before or not after:
        raise InvalidArgumentError("from and to must name tags, e.g. project or #project")
    if before == after:
        raise InvalidArgumentError(f"from and to are the same tag ({before}); nothing would change")
    if not markdown.TAG.fullmatch("#" + after):
        raise InvalidArgumentError(
            f"{after!r} is not a valid tag: start with a letter, then letters, digits, _, - or /"
        )
    return before, after


def _retag(old: str, new: str) -> edit.Transform:
    def rename(tag: str) -> str:
        lowered = tag.lower()
        if lowered == old or lowered.startswith(old + "/"):
            return new + tag[len(old) :]
        return tag

    def change(fm: Frontmatter) -> None:
        for key in ("tags", "tag"):
            before = tag_values(fm.get(key))
            after = list(dict.fromkeys(rename(t) for t in before))
            if after != before:
                fm.set(key, after)

    def inline(match: re.Match[str]) -> str:
        return "#" + rename(match.group(1))

    def transform(current: str, exists: bool) -> str:
        try:
            text = edit.edit_frontmatter(current, "note", change)
        except FrontmatterError:
            text = current  # an unreadable block is left as it is; inline tags still change
        text, _ = relink.rewrite_outside_code(text, markdown.tag_matches, inline)
        return text

    return transform
