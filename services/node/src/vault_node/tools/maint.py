"""Tools that reshape a vault (spec §13.3 note_move, §13.5, §13.7): moves, merges, splits,
renames and replacements across notes, and the review that finds what needs them.

Each plans everything before it writes, writes through the one write path without
touching `updated`, and ends with a single summary commit.
"""

from __future__ import annotations

import datetime as dt
import posixpath
import re
from typing import Any

import structlog

from vault_core import (
    FrontmatterError,
    HashMismatchError,
    NoteExistsError,
    VaultError,
    deadline,
    diff,
    edit,
    frontmatter,
    markdown,
    queries,
    search,
    sections,
    templates,
)
from vault_core.edit import Transform, WriteOp
from vault_core.frontmatter import Frontmatter, alias_values, normalize_tag, tag_values
from vault_core.note import Note, stem
from vault_node import grammar
from vault_node.errors import ArgumentError, ToolError
from vault_node.tools import links
from vault_node.tools.base import READS, Call, Hints, Tool, choice, flag, integer, text
from vault_node.tools.common import check_prefix
from vault_node.tools.read import STATS
from vault_node.tools.shape import BOOL, INT, STR, STRS, arr, obj, result_schema, write_schema
from vault_node.tools.write import new_note

log = structlog.get_logger("vault_node")


def note_move(call: Call) -> dict[str, Any]:
    args = call.args
    assert call.opened is not None
    vault = call.vault
    src, dst = edit.move(vault, args["path"], args["to"], overwrite=args["overwrite"], dry_run=True)
    if dst.abs.is_file():
        call.require("write", displaces=True)
    updates = []
    if args["update_links"]:
        updates = links.plan(call.opened.index, vault, src.rel, dst.rel)
        own = links.plan_own(call.opened.index, vault, src.rel, dst.rel)
        updates += [own] if own is not None else []
    if args["dry_run"]:
        return {
            "vault": vault.name,
            "from": src.rel,
            "to": dst.rel,
            "dry_run": True,
            "link_updates": _rows(updates),
            "message": f"dry run: nothing was written; {src.rel} would move to {dst.rel} "
            f"and links in {len(updates)} note(s) would be updated",
        }
    edit.move(vault, src.rel, dst.rel, overwrite=args["overwrite"])
    written = links.apply_all(vault, updates, call.actor)
    vault.commit(f"note_move: {src.rel} -> {dst.rel}", [src.rel, dst.rel, *written], call.actor)
    return {
        "vault": vault.name,
        "from": src.rel,
        "to": dst.rel,
        "notes_updated": len(written),
        "link_updates": _rows(updates),
    }


def _rows(updates: list[links.Update]) -> list[dict[str, Any]]:
    return [row for update in updates for row in update.rows()]


def note_merge(call: Call) -> dict[str, Any]:
    args = call.args
    assert call.opened is not None
    vault = call.vault
    target, source = vault.read_note(args["path"]), vault.read_note(args["from"])
    if target.path == source.path:
        raise ArgumentError(
            "path and from are the same note; name the note that stays as path "
            "and the one that goes as from"
        )
    updates = links.plan(call.opened.index, vault, source.path, target.path)
    incoming = queries.backlinks(call.opened.index, source.path)["incoming"]
    op = WriteOp(
        target.path,
        _merge_into(target, source, args["heading"], vault.now()),
        expected_hash=target.content_hash,
        dry_run=args["dry_run"],
    )
    result = edit.apply(vault, op, call.actor)
    out = {
        **result.response(),
        "merged_from": source.path,
        "backlinks_to_source": len({link["path"] for link in incoming}),
    }
    if args["dry_run"]:
        out["message"] = (
            f"dry run: nothing was written; {source.path} would be appended to "
            f"{target.path}, then deleted, and links in {len(updates)} note(s) updated"
        )
        return {**out, "links_updated": 0}
    return {**out, "links_updated": _finish_merge(call, target, source, updates)}


def _finish_merge(call: Call, target: Note, source: Note, updates: list[links.Update]) -> int:
    """Delete the source, rewrite links to it, commit once; returns the notes relinked."""
    vault = call.vault
    touched = [target.path, source.path]
    message = f"note_merge: {source.path} -> {target.path}"
    try:
        edit.delete(
            vault, source.path, expected_hash=source.content_hash, reason=None, actor=call.actor
        )
    except VaultError as exc:
        vault.commit(message, touched, call.actor)
        raise ToolError(
            f"merged {source.path} into {target.path}, but deleting the source "
            f"failed ({exc.message}); delete it with note_delete",
            exc.code,
        ) from exc
    relinked = links.apply_all(vault, updates, call.actor)
    vault.commit(message, [*touched, *relinked], call.actor)
    return len(relinked)


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


def note_split(call: Call) -> dict[str, Any]:
    args = call.args
    vault = call.vault
    source = vault.read_note(args["path"])
    folder = check_prefix(vault, args["dir"]) if args["dir"] else posixpath.dirname(source.path)
    pieces = _pieces(source, args["level"], folder)
    if args["dry_run"]:
        return {
            "vault": vault.name,
            "path": source.path,
            "dry_run": True,
            "would_create": [rel for _, rel, _ in pieces],
            "message": f"dry run: nothing was written; {len(pieces)} note(s) would be "
            f"split out of {source.path}",
        }
    created = []
    for section, rel, body in pieces:
        text = new_note(rel, section.text, source.tags, body, source_note=source.path)
        try:
            edit.apply(vault, WriteOp(rel, _only_new(rel, text)), call.actor)
        except (NoteExistsError, VaultError) as exc:
            log.warning("split_piece_failed", vault=vault.name, path=rel, error=exc.code)
            continue
        created.append((section, rel))
    op = WriteOp(
        source.path,
        lambda current, exists: _replace_sections(current, created),
        expected_hash=source.content_hash,
    )
    result = edit.apply(vault, op, call.actor)
    paths = [source.path, *(rel for _, rel in created)]
    vault.commit(f"note_split: {source.path}", paths, call.actor)
    return {
        **result.response(),
        "created": [rel for _, rel in created],
        "notes_created": len(created),
    }


def _pieces(source: Note, level: int, folder: str) -> list[tuple[sections.Section, str, str]]:
    found = [s for s in sections.headings(source.body) if s.level == level]
    if not found:
        raise ToolError(
            f"no level-{level} heading in {source.path}; call note_outline to see "
            "its headings and pick a level",
            "not_found",
        )
    lines = source.body.split("\n")
    pieces = []
    for section in found:
        rel = posixpath.join(folder, templates.slug(section.text) + ".md")
        if rel == source.path:
            rel = posixpath.join(folder, templates.slug(section.text) + "-1.md")
        body = "\n".join(lines[section.start + 1 : section.end]).strip("\n")
        back = f"Split from [[{source.path[:-3]}]]."
        pieces.append((section, rel, f"{body}\n\n{back}\n" if body else f"{back}\n"))
    return pieces


def _only_new(rel: str, text: str) -> edit.Transform:
    def transform(current: str, exists: bool) -> str:
        if exists:
            raise NoteExistsError(rel, "a split piece is skipped rather than overwritten")
        return text

    return transform


def _replace_sections(current: str, created: list[tuple[sections.Section, str]]) -> str:
    split = frontmatter.split(current)
    lines = split.body.split("\n")
    for section, rel in sorted(created, key=lambda c: -c[0].start):
        lines[section.start : section.end] = [f"See [[{rel[:-3]}|{section.text}]].", ""]
    return split.block + sections.collapse_blank_lines("\n".join(lines))


def tag_rename(call: Call) -> dict[str, Any]:
    args = call.args
    assert call.opened is not None
    old, new = normalize_tag(args["from"]), normalize_tag(args["to"])
    if not old or not new:
        raise ArgumentError("from and to must name tags, e.g. project or #project")
    if old == new:
        raise ArgumentError(f"from and to are the same tag ({old}); nothing would change")
    if not markdown.TAG.fullmatch("#" + new):
        raise ArgumentError(
            f"{new!r} is not a valid tag: start with a letter, then letters, digits, _, - or /"
        )
    hits = search.search(call.opened.index, "", search.Filters(tags=[old]), limit=1_000_000)
    inline = re.compile(r"(?<![\w`#/])#" + re.escape(old) + r"(?![\w-])", re.IGNORECASE)
    notes, written = [], []
    for hit in sorted(hits.hits, key=lambda h: h.path):
        op = WriteOp(hit.path, _retag(old, new, inline), dry_run=args["dry_run"], skip_touch=True)
        result = edit.apply(call.vault, op, call.actor)
        if result.changed:
            notes.append(
                {"path": hit.path, "diff": result.diff} if args["dry_run"] else {"path": hit.path}
            )
            written.append(hit.path)
    if written and not args["dry_run"]:
        call.vault.commit(f"tag_rename: #{old} -> #{new}", written, call.actor)
    verb = "would change" if args["dry_run"] else "changed"
    return {
        "vault": call.vault.name,
        "from": old,
        "to": new,
        "dry_run": args["dry_run"],
        "notes": notes,
        "count": len(notes),
        "message": f"{verb} {len(notes)} note(s)"
        + ("; nothing was written (pass dry_run: false to apply)" if args["dry_run"] else ""),
    }


def _retag(old: str, new: str, inline: re.Pattern[str]) -> edit.Transform:
    def rename(tag: str) -> str:
        return new + tag[len(old) :] if tag == old or tag.startswith(old + "/") else tag

    def change(fm: Frontmatter) -> None:
        for key in ("tags", "tag"):
            before = tag_values(fm.get(key))
            after = list(dict.fromkeys(rename(t) for t in before))
            if after != before:
                fm.set(key, after)

    def transform(current: str, exists: bool) -> str:
        try:
            text = edit.edit_frontmatter(current, "note", change)
        except FrontmatterError:
            text = current  # an unreadable block is left as it is; inline tags still change
        text, _ = links.rewrite_outside_code(text, inline, lambda m: "#" + new)
        return text

    return transform


def vault_replace(call: Call) -> dict[str, Any]:
    args = call.args
    vault = call.vault
    replace = _replacer(args)
    planned = []
    for entry in deadline.checked(vault.notes(check_prefix(vault, args["prefix"]))):
        try:
            found = vault.read_note(entry.rel)
        except VaultError:
            continue
        new_text, count = replace(found.text)
        if count:
            planned.append((found, new_text, count))
    if len(planned) > args["limit"]:
        raise ToolError(
            f"{len(planned)} notes would change, more than limit {args['limit']}; "
            "nothing was written. Narrow it with prefix, or raise limit deliberately "
            "(at most 500) after a dry run",
            "too_large",
        )
    rows: list[dict[str, Any]] = []
    written: list[str] = []
    for found, new_text, count in planned:
        rows.append(_replace_one(call, found, new_text, count, written))
    if written and not args["dry_run"]:
        vault.commit(f"vault_replace: {len(written)} notes", written, call.actor)
    verb = "would change" if args["dry_run"] else "changed"
    return {
        "vault": vault.name,
        "dry_run": args["dry_run"],
        "notes": rows,
        "notes_affected": len(planned),
        "occurrences": sum(c for _, _, c in planned),
        "message": f"{verb} {len(planned)} note(s)"
        + ("; nothing was written (pass dry_run: false to apply)" if args["dry_run"] else ""),
    }


def _replacer(args: dict[str, Any]) -> Any:
    if args["regex"]:
        regex = grammar.compile_regex(args["pattern"])
        return lambda text: regex.subn(lambda m: grammar.expand_dollars(args["replace"], m), text)
    if not args["pattern"]:
        raise ArgumentError("pattern is empty; pass the text to replace")
    return lambda text: (
        text.replace(args["pattern"], args["replace"]),
        text.count(args["pattern"]),
    )


def _replace_one(
    call: Call, found: Note, new_text: str, count: int, written: list[str]
) -> dict[str, Any]:
    if call.args["dry_run"]:
        return {
            "path": found.path,
            "matches": count,
            "diff": diff.unified(found.text, new_text, found.path),
        }
    op = WriteOp(
        found.path,
        lambda current, exists: new_text,
        expected_hash=found.content_hash,
        skip_touch=True,
    )
    try:
        result = edit.apply(call.vault, op, call.actor)
    except (HashMismatchError, VaultError) as exc:
        return {"path": found.path, "matches": count, "error": exc.message}
    written.append(found.path)
    return {"path": found.path, "matches": count, "content_hash": result.content_hash}


def vault_review(call: Call) -> dict[str, Any]:
    args = call.args
    assert call.opened is not None
    if not grammar.is_span(args["stale_after"]):
        raise ArgumentError(
            f"stale_after {args['stale_after']!r} is not a span; use e.g. 365d, 12w, 6m or 1y"
        )
    cutoff = call.vault.now() - grammar.parse_span(args["stale_after"])
    call.opened.fresh()
    items = queries.review(
        call.opened.index,
        stale_before_ns=int(cutoff.timestamp() * 1e9),
        limit=args["limit"],
        only=args["only"],
    )
    return {
        "vault": call.vault.name,
        "stats": queries.stats(call.opened.index),
        "items": items,
        "count": sum(len(found) for found in items.values()),
    }


PATH = "Note path in the vault, e.g. wiki/rate-limiting.md (.md optional)."
DRY_TRUE = "Only show the changes (default); pass false to write."
UPDATE_ROW = obj({"path": STR, "from": STR, "to": STR, "count": INT}, {"error": STR})
NOTE_SCHEMA_REVIEW = obj({"path": STR, "title": STR, "reason": STR, "detail": STR})
MOVE = Hints(read_only=False, destructive=True, idempotent=False)

TOOLS = [
    Tool(
        "note_move",
        "Move or rename a note",
        "Move or rename a note and rewrite the links that point to it, so nothing breaks. "
        "Run it with dry_run first to see every link that would change.",
        {
            "path": text(PATH, required=True),
            "to": text("New path, e.g. wiki/archive/old-plan.md.", required=True),
            "update_links": flag("Rewrite links in other notes.", True),
            "overwrite": flag(
                "Replace a note at `to` (needs delete; it goes to the trash).",
                False,
            ),
            "dry_run": flag("Show the move and link updates without writing.", False),
        },
        result_schema(
            {"vault": STR, "from": STR, "to": STR, "link_updates": arr(UPDATE_ROW)},
            {"dry_run": BOOL, "message": STR, "notes_updated": INT},
        ),
        "write",
        MOVE,
        note_move,
    ),
    Tool(
        "note_merge",
        "Merge two notes",
        "Merge one note (`from`) into another (`path`): its text is appended under a heading, "
        "its title and file name become aliases of the target, it is deleted (to the trash) "
        "and links to it are rewritten. Use it to clean up duplicates; try dry_run first.",
        {
            "path": text("The note that stays, e.g. wiki/rate-limiting.md.", required=True),
            "from": text("The note that is merged in and then deleted.", required=True),
            "heading": text("Heading for the merged text (default: the title of `from`)."),
            "dry_run": flag("Show the result without writing.", False),
        },
        write_schema({"merged_from": STR, "backlinks_to_source": INT, "links_updated": INT}),
        "delete",
        MOVE,
        note_merge,
    ),
    Tool(
        "note_split",
        "Split a note",
        "Split a long note into one note per heading of a level: each section becomes its own "
        "note (with the source's tags and a link back) and is replaced in the original by a "
        "link to it. Use dry_run to see the notes it would create.",
        {
            "path": text(PATH, required=True),
            "level": integer("Heading level to split at (1-6).", 2, clamp=(1, 6)),
            "dir": text("Folder for the new notes (default: the folder of the note)."),
            "dry_run": flag("Only list the notes it would create.", False),
        },
        result_schema(
            {"vault": STR, "path": STR},
            {
                **write_schema()["properties"],
                "would_create": STRS,
                "created": STRS,
                "notes_created": INT,
            },
        ),
        "write",
        MOVE,
        note_split,
    ),
    Tool(
        "tag_rename",
        "Rename a tag",
        "Rename a tag everywhere: frontmatter tags and inline #tags (subtags follow: "
        "#old/x becomes #new/x). Renaming to an existing tag merges the two. Runs as a dry "
        "run unless you pass dry_run: false.",
        {
            "from": text("The tag to rename, with or without #.", required=True),
            "to": text("The new tag name, with or without #.", required=True),
            "dry_run": flag(DRY_TRUE, True),
        },
        result_schema(
            {
                "vault": STR,
                "from": STR,
                "to": STR,
                "dry_run": BOOL,
                "notes": arr(obj({"path": STR}, {"diff": STR})),
                "count": INT,
                "message": STR,
            }
        ),
        "write",
        MOVE,
        tag_rename,
    ),
    Tool(
        "vault_replace",
        "Replace across notes",
        "Find and replace text in every note under a folder (frontmatter included), literally "
        "or by regular expression. Writes nothing when more than `limit` notes would change. "
        "A dry run unless you pass dry_run: false — review the diffs first.",
        {
            "pattern": text(
                "Text to find (or a regular expression when regex is true).", required=True
            ),
            "replace": text(
                "Replacement; with regex, $1 or ${name} insert groups.", required=True, trim=False
            ),
            "regex": flag("Treat pattern as a regular expression.", False),
            "prefix": text("Only notes under this folder (default: the whole vault)."),
            "limit": integer(
                "Refuse when more notes than this would change (1-500).",
                50,
                clamp=(1, 500),
            ),
            "dry_run": flag(DRY_TRUE, True),
        },
        result_schema(
            {
                "vault": STR,
                "dry_run": BOOL,
                "notes": arr(
                    obj(
                        {"path": STR, "matches": INT},
                        {"diff": STR, "content_hash": STR, "error": STR},
                    )
                ),
                "notes_affected": INT,
                "occurrences": INT,
                "message": STR,
            }
        ),
        "write",
        MOVE,
        vault_replace,
    ),
    Tool(
        "vault_review",
        "Review a vault",
        "A maintenance to-do list: stubs, orphans (no links in or out), broken links, stale "
        "notes, open tasks and files the node skips (reason code, detail says the fix). Use it "
        "to decide what to merge, link, update or finish.",
        {
            "stale_after": text(
                "Age after which a note is stale, as a span: 365d, 12w, 6m, 1y.",
                default="365d",
            ),
            "limit": integer("Items per category (1-100).", 15, clamp=(1, 100)),
            "only": choice("Just one category.", queries.REVIEW_CATEGORIES),
        },
        result_schema(
            {
                "vault": STR,
                "stats": STATS,
                "items": {"type": "object", "additionalProperties": arr(NOTE_SCHEMA_REVIEW)},
                "count": INT,
            }
        ),
        "read",
        READS,
        vault_review,
    ),
]
