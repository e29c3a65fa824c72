"""Splitting a note into one note per heading of a level (`note_split`).

Each section becomes a note of its own (the source's tags, a link back) and is replaced in
the source by a link to it. A piece whose path is taken, or that cannot be written, is
skipped and reported, and its section stays in the source.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field

import structlog

from vault_core import edit, frontmatter, sections, templates
from vault_core.edit import WriteOp, WriteResult
from vault_core.errors import NoteExistsError, NotFoundError, VaultError
from vault_core.note import Note
from vault_core.ops.outcome import Skip
from vault_core.vault import Actor, Vault

log = structlog.get_logger("vault_core")


@dataclass(frozen=True)
class Piece:
    """One section and the note it becomes."""

    section: sections.Section
    path: str
    text: str


@dataclass
class Split:
    """The source's write (None for a dry run), the pieces planned, created and skipped."""

    source: str
    planned: list[str]
    result: WriteResult | None = None
    created: list[str] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)


def split_note(
    vault: Vault,
    path: str,
    *,
    level: int = 2,
    folder: str | None = None,
    dry_run: bool = False,
    actor: Actor | None = None,
) -> Split:
    """Split `path` at every heading of `level`, the new notes in `folder` (default: its own)."""
    source = vault.read_note(path)
    pieces = _pieces(source, level, posixpath.dirname(source.path) if folder is None else folder)
    split = Split(source.path, [piece.path for piece in pieces])
    if dry_run:
        return split
    made: list[Piece] = []
    for piece in pieces:
        try:
            edit.apply(vault, WriteOp(piece.path, _only_new(piece.path, piece.text)), actor)
        except VaultError as exc:
            log.warning("split_piece_failed", vault=vault.name, path=piece.path, error=exc.code)
            split.skipped.append(Skip.of(piece.path, exc))
            continue
        made.append(piece)
    op = WriteOp(
        source.path,
        lambda current, exists: _replace_sections(current, made),
        expected_hash=source.content_hash,
    )
    split.result = edit.apply(vault, op, actor)
    split.created = [piece.path for piece in made]
    touched = [source.path, *split.created]
    split.result.warnings += edit.commit(
        vault, f"{vault.verbs.split}: {source.path}", touched, actor
    )
    return split


def _pieces(source: Note, level: int, folder: str) -> list[Piece]:
    found = [s for s in sections.headings(source.body) if s.level == level]
    if not found:
        raise NotFoundError(
            f"no level-{level} heading in {source.path}; call note_outline to see "
            "its headings and pick a level"
        )
    lines = source.body.split("\n")
    pieces = []
    for section in found:
        rel = posixpath.join(folder, templates.slug(section.text) + ".md")
        if rel == source.path:
            rel = posixpath.join(folder, templates.slug(section.text) + "-1.md")
        body = "\n".join(lines[section.start + 1 : section.end]).strip("\n")
        back = f"Split from [[{source.path[:-3]}]]."
        body = f"{body}\n\n{back}\n" if body else f"{back}\n"
        text = templates.new_note(rel, section.text, source.tags, body, source_note=source.path)
        pieces.append(Piece(section, rel, text))
    return pieces


def _only_new(rel: str, text: str) -> edit.Transform:
    def transform(current: str, exists: bool) -> str:
        if exists:
            raise NoteExistsError(rel, "a split piece is skipped rather than overwritten")
        return text

    return transform


def _replace_sections(current: str, made: list[Piece]) -> str:
    split = frontmatter.split(current)
    lines = split.body.split("\n")
    for piece in sorted(made, key=lambda p: -p.section.start):
        lines[piece.section.start : piece.section.end] = [
            f"See [[{piece.path[:-3]}|{piece.section.text}]].",
            "",
        ]
    return split.block + sections.collapse_blank_lines("\n".join(lines))
