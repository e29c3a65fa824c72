"""Planning and applying link rewrites when a note moves or merges (spec §13.3 note_move).

A plan is a list of literal replacements per linking note, shown before anything is
written. Only links outside code are touched, and only links that the index says
resolve to the old path; links by title or alias keep working and are left alone.
"""

from __future__ import annotations

import posixpath
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import structlog

from vault_core import Index, Vault, VaultError, edit, frontmatter, markdown, queries
from vault_core.edit import WriteOp
from vault_core.note import stem

log = structlog.get_logger("vault_node")


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


def plan(index: Index, vault: Vault, old: str, new: str) -> list[Update]:
    """For every note linking to `old`, the literal replacements that make it link to `new`."""
    targets: dict[str, set[str]] = defaultdict(set)
    for row in queries.backlinks(index, old)["incoming"]:
        targets[row["path"]].add(row["target"])
    updates = []
    for src in sorted(targets):
        try:
            found = vault.read_note(src)
        except VaultError:
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
            updates.append(update)
    return updates


def plan_own(index: Index, vault: Vault, old: str, new: str) -> Update | None:
    """The moved note's own relative links, re-aimed from its new folder (None if none)."""
    if posixpath.dirname(old) == posixpath.dirname(new):
        return None
    resolved = {row["target"]: row["path"] for row in queries.backlinks(index, old)["outgoing"]}
    try:
        found = vault.read_note(old)
    except VaultError:
        return None
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
    if not pairs:
        return None
    update = Update(new, pairs)
    rewrite(update)(found.text, True)
    return update


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
    text: str, pattern: re.Pattern[str], repl: Callable[[re.Match[str]], str]
) -> tuple[str, int]:
    """Apply `pattern` → `repl` to a note's body lines outside fenced code and code spans."""
    split = frontmatter.split(text)
    raw = split.body.split("\n")
    count = 0
    for line in markdown.lines(split.body):
        if line.code:
            continue
        masked = markdown.strip_code_spans(line.text)
        hits = list(pattern.finditer(masked))
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
                current, n = rewrite_outside_code(current, _pattern(literal), _keep_opener(tail))
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


def apply_all(vault: Vault, updates: list[Update], actor: Any) -> list[str]:
    """Write every planned update (no touch, no commit); returns the paths written."""
    written = []
    for update in updates:
        try:
            result = edit.apply(
                vault, WriteOp(update.path, rewrite(update), skip_touch=True), actor
            )
        except VaultError as exc:
            update.error = exc.code
            log.warning("link_rewrite_failed", vault=vault.name, path=update.path, error=exc.code)
            continue
        if result.changed:
            written.append(update.path)
    return written
