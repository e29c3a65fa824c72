"""Planning and applying link rewrites when a note moves or merges (docs/design.md#tools).

A plan is a list of literal replacements per linking note, shown before anything is
written. Only links outside code are touched, and only links that the index says
resolve to the old path; links by title or alias keep working and are left alone. A
linking note that cannot be read or written is skipped and reported, never dropped.
"""

from __future__ import annotations

import posixpath
import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import structlog

from vault_core import edit, frontmatter, markdown, scope
from vault_core.edit import WriteOp
from vault_core.errors import LinksOutsideRulesError, VaultError
from vault_core.index.store import Index
from vault_core.note import stem
from vault_core.ops.outcome import Skip
from vault_core.search import answers as queries
from vault_core.vault import Actor, Vault

log = structlog.get_logger("vault_core")


@dataclass
class Update:
    """The replacements planned for one linking note, each with how often it applies."""

    path: str
    counts: dict[tuple[str, str], int] = field(default_factory=dict)  # (old, new) → count
    error: str = ""

    def rows(self) -> list[dict[str, Any]]:
        extra = {"error": self.error} if self.error else {}
        return [
            {"path": self.path, "from": old, "to": new, "count": count, **extra}
            for (old, new), count in self.counts.items()
        ]


@dataclass
class Plan:
    """The updates that re-aim links at a new path, and the linking notes left out."""

    updates: list[Update] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)


@dataclass
class Relinked:
    """What writing a plan did: the notes rewritten, those that could not be, warnings."""

    written: list[str] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def plan(index: Index, vault: Vault, old: str, new: str) -> Plan:
    """For every note linking to `old`, the literal replacements that make it link to `new`."""
    targets: dict[str, set[str]] = defaultdict(set)
    for row in queries.backlinks(index, old)["incoming"]:
        targets[row["path"]].add(row["target"])
    planned = Plan()
    for src in sorted(targets):
        try:
            found = vault.read_note(src)
        except VaultError as exc:
            planned.skipped.append(Skip.of(src, exc))
            continue
        pairs: dict[tuple[str, str], None] = {}
        for link in found.links:
            if link.target in targets[src]:
                pair = _replacement(src, link, old, new)
                if pair is not None:
                    pairs[pair] = None
        if pairs:
            update = Update(src, dict.fromkeys(pairs, 0))
            rewrite(update)(found.text, True)  # counts the occurrences for the plan
            planned.updates.append(update)
    return planned


def check_linkers_writable(index: Index, rel: str, doing: str) -> None:
    """Refuse a change that would have to rewrite links in notes outside the caller's write
    rules: it is refused, not half done. Only says that there are such notes, never which."""
    rules = scope.current()
    if rules is None:
        return
    with scope.lifted():
        sources = {row["path"] for row in queries.backlinks(index, rel)["incoming"]}
    if any(not rules.writes(src) for src in sources - {rel}):
        raise LinksOutsideRulesError(rel, doing, rules.describe())


def plan_own(index: Index, vault: Vault, old: str, new: str, into: Plan) -> None:
    """Add the moved note's own relative links, re-aimed from its new folder, to a plan."""
    if posixpath.dirname(old) == posixpath.dirname(new):
        return
    resolved = {row["target"]: row["path"] for row in queries.backlinks(index, old)["outgoing"]}
    try:
        found = vault.read_note(old)
    except VaultError as exc:
        into.skipped.append(Skip.of(old, exc))
        return
    pairs: dict[tuple[str, str], int] = {}
    for link in found.links:
        target = resolved.get(link.target)
        relative = not link.wiki or link.target.startswith(("./", "../"))
        if not target or not relative or link.target.startswith("/"):
            continue
        moved = posixpath.relpath(target, posixpath.dirname(new) or ".")
        if link.wiki and not moved.startswith("../"):
            moved = f"./{moved}"
        if not link.target.lower().endswith(".md") and moved.lower().endswith(".md"):
            moved = moved[:-3]
        opener = "[[" if link.wiki else "("
        if moved != link.target:
            pairs[(opener + link.target, opener + moved)] = 0
    if pairs:
        update = Update(new, pairs)
        rewrite(update)(found.text, True)
        into.updates.append(update)


def _replacement(src: str, link: markdown.Link, old: str, new: str) -> tuple[str, str] | None:
    target = link.target
    with_md = target.lower().endswith(".md")
    if not link.wiki:
        beside = posixpath.normpath(posixpath.join(posixpath.dirname(src), target))
        moved = new if beside.lower() != old.lower() else _relative(src, new)
        moved = moved if with_md else moved[:-3]
        return f"({target}", f"({moved}"
    norm = target.replace("\\", "/").lstrip("/")
    if target.startswith(("./", "../")):
        moved = _relative(src, new)
        return f"[[{target}", f"[[{moved if with_md else moved[:-3]}"
    if "/" in norm or norm.lower() in (old.lower(), old[:-3].lower()):
        return f"[[{target}", f"[[{new if with_md else new[:-3]}"
    if norm.lower() in (stem(old).lower(), stem(old).lower() + ".md"):
        if stem(old) == stem(new):
            return None  # the bare name still resolves
        return f"[[{target}", f"[[{stem(new) + '.md' if with_md else stem(new)}"
    return None  # a title or alias: it still resolves to the moved note


def _relative(src: str, new: str) -> str:
    rel = posixpath.relpath(new, posixpath.dirname(src) or ".")
    return rel if rel.startswith("../") else f"./{rel}"


def _pattern(literal: str) -> re.Pattern[str]:
    """The literal as written in a link, followed by what may end a link target."""
    if literal.startswith("[["):
        return re.compile(r"(\[\[)" + re.escape(literal[2:]) + r"(?=\s*(?:\]\]|#|\||\\\|))")
    return re.compile(r"(\(\s*<?)" + re.escape(literal[1:]) + r"(?=[)#\s>])")


def rewrite_outside_code(
    text: str,
    find: Callable[[str], Iterable[re.Match[str]]],
    repl: Callable[[re.Match[str]], str],
) -> tuple[str, int]:
    """Replace what `find` finds in a note's body lines outside fenced code and code spans
    (e.g. `pattern.finditer`) with `repl` of it; the number of replacements made."""
    split = frontmatter.split(text)
    raw = split.body.split("\n")
    count = 0
    for line in markdown.lines(split.body):
        if line.code:
            continue
        masked = markdown.strip_code_spans(line.text)
        hits = list(find(masked))
        if not hits:
            continue
        out = raw[line.number]
        for hit in reversed(hits):
            out = out[: hit.start()] + repl(hit) + out[hit.end() :]
        raw[line.number] = out
        count += len(hits)
    return split.block + "\n".join(raw), count


def rewrite(update: Update) -> Callable[[str, bool], str]:
    """The transform that applies one note's planned replacements (counting them)."""

    def transform(current: str, exists: bool) -> str:
        for old, new in list(update.counts):
            total = 0
            for literal, replacement in dict.fromkeys([(old, new), (_encoded(old), _encoded(new))]):
                tail = replacement[2:] if replacement.startswith("[[") else replacement[1:]
                found = _pattern(literal).finditer
                current, n = rewrite_outside_code(current, found, _keep_opener(tail))
                total += n
            update.counts[(old, new)] = total
        return current

    return transform


def _keep_opener(tail: str) -> Callable[[re.Match[str]], str]:
    def replace(match: re.Match[str]) -> str:
        return match.group(1) + tail

    return replace


def _encoded(literal: str) -> str:
    """`(My Note.md` → `(My%20Note.md`: Markdown links are often percent-encoded."""
    if literal.startswith("("):
        return "(" + quote(literal[1:], safe="/#.-_~")
    return literal


def apply_all(vault: Vault, updates: list[Update], actor: Actor | None) -> Relinked:
    """Write every planned update (no touch, no commit: the operation commits once)."""
    done = Relinked()
    for update in updates:
        try:
            result = edit.apply(
                vault, WriteOp(update.path, rewrite(update), skip_touch=True), actor
            )
        except VaultError as exc:
            update.error = exc.code
            done.skipped.append(Skip.of(update.path, exc))
            log.warning("link_rewrite_failed", vault=vault.name, path=update.path, error=exc.code)
            continue
        done.warnings += result.warnings
        if result.changed:
            done.written.append(update.path)
    return done
