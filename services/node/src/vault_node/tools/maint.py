"""Tools that change many notes at once, or the vault itself (docs/design.md#tools): moves,
merges, splits, renames and replacements across notes, and vault_create.

Each change across notes plans everything before it writes, writes through the one write
path without touching `updated`, and ends with a single summary commit.
"""

from __future__ import annotations

from typing import Any

from vault_core import VaultExistsError, layouts, paths
from vault_core.ops import Skip, merge, move, relink, replace, retag, split
from vault_node import grammar
from vault_node.context import Call
from vault_node.errors import ArgumentError, ForbiddenError
from vault_node.tools.base import ADD, CHANGE, choice, flag, integer, text, tool
from vault_node.tools.common import NOTE_PATH, check_prefix
from vault_node.tools.shape import BOOL, INT, STR, STRS, arr, obj, result_schema, write_schema

DRY_TRUE = "Only show the changes (default); pass false to write."

UPDATE_ROW = obj({"path": STR, "from": STR, "to": STR, "count": INT}, {"error": STR})
SKIPPED = {"skipped": arr(obj({"path": STR, "code": STR, "reason": STR}))}
"""The notes an operation over many notes left alone, each with the reason."""


@tool(
    title="Move or rename a note",
    description=(
        "Move or rename a note and rewrite the links that point to it, so nothing breaks. "
        "Run it with dry_run first to see every link that would change."
    ),
    kind="write",
    hints=CHANGE,
    params={
        "path": text(NOTE_PATH, required=True),
        "to": text("New path, e.g. wiki/archive/old-plan.md.", required=True),
        "update_links": flag("Rewrite links in other notes.", True),
        "overwrite": flag(
            "Replace a note at `to` (needs delete; it goes to the trash).",
            False,
        ),
        "dry_run": flag("Show the move and link updates without writing.", False),
    },
    output=result_schema(
        {"vault": STR, "from": STR, "to": STR, "link_updates": arr(UPDATE_ROW)},
        {"dry_run": BOOL, "message": STR, "notes_updated": INT, "warnings": STRS, **SKIPPED},
    ),
)
def note_move(call: Call) -> dict[str, Any]:
    args = call.args
    assert call.opened is not None
    if args["overwrite"] and call.vault.resolve_for_write(args["to"]).abs.is_file():
        call.require("write", displaces=True)
    moved = move.move_note(
        call.vault,
        call.opened.index,
        args["path"],
        args["to"],
        update_links=args["update_links"],
        overwrite=args["overwrite"],
        dry_run=args["dry_run"],
        actor=call.actor,
    )
    out: dict[str, Any] = {
        "vault": call.vault.name,
        "from": moved.source,
        "to": moved.target,
        "link_updates": _rows(moved.updates),
    }
    if moved.dry_run:
        out["dry_run"] = True
        out["message"] = (
            f"dry run: nothing was written; {moved.source} would move to {moved.target} "
            f"and links in {len(moved.updates)} note(s) would be updated"
        )
    else:
        out["notes_updated"] = len(moved.written)
    return _reported(out, moved.skipped, moved.warnings)


def _rows(updates: list[relink.Update]) -> list[dict[str, Any]]:
    return [row for update in updates for row in update.rows()]


def _reported(out: dict[str, Any], skipped: list[Skip], warnings: list[str]) -> dict[str, Any]:
    """A result with the notes the operation left alone and what did not follow its writes."""
    if skipped:
        out["skipped"] = [skip.row() for skip in skipped]
    if warnings:
        out["warnings"] = [*out.get("warnings", []), *warnings]
    return out


@tool(
    title="Merge two notes",
    description=(
        "Merge note `from` into `path`: its text appended under a heading, its title and "
        "name made aliases, it is trashed and links to it rewritten. For duplicates; try "
        "dry_run first."
    ),
    kind="delete",
    hints=CHANGE,
    params={
        "path": text("The note that stays, e.g. wiki/rate-limiting.md.", required=True),
        "from": text("The note that is merged in and then deleted.", required=True),
        "heading": text("Heading for the merged text (default: the title of `from`)."),
        "dry_run": flag("Show the result without writing.", False),
    },
    output=write_schema(
        {"merged_from": STR, "backlinks_to_source": INT, "links_updated": INT, **SKIPPED}
    ),
)
def note_merge(call: Call) -> dict[str, Any]:
    args = call.args
    assert call.opened is not None
    merged = merge.merge_notes(
        call.vault,
        call.opened.index,
        args["path"],
        args["from"],
        heading=args["heading"],
        dry_run=args["dry_run"],
        actor=call.actor,
    )
    out = {
        **merged.result.response(),
        "merged_from": merged.source,
        "backlinks_to_source": merged.backlinks,
        "links_updated": len(merged.relinked),
    }
    if args["dry_run"]:
        out["message"] = (
            f"dry run: nothing was written; {merged.source} would be appended to "
            f"{merged.result.path}, then deleted, and links in {len(merged.updates)} "
            "note(s) updated"
        )
    return _reported(out, merged.skipped, [])


@tool(
    title="Split a note",
    description=(
        "Split a long note, one note per heading of a level: each section becomes a note (the "
        "source's tags, a link back), replaced in the original by a link. Try dry_run first."
    ),
    kind="write",
    hints=CHANGE,
    params={
        "path": text(NOTE_PATH, required=True),
        "level": integer("Heading level to split at (1-6).", 2, clamp=(1, 6)),
        "dir": text("Folder for the new notes (default: the folder of the note)."),
        "dry_run": flag("Only list the notes it would create.", False),
    },
    output=result_schema(
        {"vault": STR, "path": STR},
        {
            **write_schema()["properties"],
            "would_create": STRS,
            "created": STRS,
            "notes_created": INT,
            **SKIPPED,
        },
    ),
)
def note_split(call: Call) -> dict[str, Any]:
    args = call.args
    folder = check_prefix(call.vault, args["dir"]) if args["dir"] else None
    done = split.split_note(
        call.vault,
        args["path"],
        level=args["level"],
        folder=folder,
        dry_run=args["dry_run"],
        actor=call.actor,
    )
    if done.result is None:
        return {
            "vault": call.vault.name,
            "path": done.source,
            "dry_run": True,
            "would_create": done.planned,
            "message": f"dry run: nothing was written; {len(done.planned)} note(s) would be "
            f"split out of {done.source}",
        }
    out = {
        **done.result.response(),
        "created": done.created,
        "notes_created": len(done.created),
    }
    return _reported(out, done.skipped, [])


@tool(
    title="Rename a tag",
    description=(
        "Rename a tag everywhere: frontmatter tags and inline #tags (subtags follow: "
        "#old/x becomes #new/x). Renaming to an existing tag merges the two. Runs as a dry "
        "run unless you pass dry_run: false."
    ),
    kind="write",
    hints=CHANGE,
    params={
        "from": text("The tag to rename, with or without #.", required=True),
        "to": text("The new tag name, with or without #.", required=True),
        "dry_run": flag(DRY_TRUE, True),
    },
    output=result_schema(
        {
            "vault": STR,
            "from": STR,
            "to": STR,
            "dry_run": BOOL,
            "notes": arr(obj({"path": STR}, {"diff": STR})),
            "count": INT,
            "message": STR,
        },
        {"warnings": STRS, **SKIPPED},
    ),
)
def tag_rename(call: Call) -> dict[str, Any]:
    args = call.args
    assert call.opened is not None
    dry = args["dry_run"]
    done = retag.rename_tag(
        call.vault, call.opened.index, args["from"], args["to"], dry_run=dry, actor=call.actor
    )
    notes = [{"path": path, "diff": diff} if dry else {"path": path} for path, diff in done.changed]
    verb = "would change" if dry else "changed"
    out = {
        "vault": call.vault.name,
        "from": done.old,
        "to": done.new,
        "dry_run": dry,
        "notes": notes,
        "count": len(notes),
        "message": f"{verb} {len(notes)} note(s)"
        + ("; nothing was written (pass dry_run: false to apply)" if dry else ""),
    }
    return _reported(out, done.skipped, done.warnings)


@tool(
    title="Replace across notes",
    description=(
        "Find and replace text (or a regex) in every note under a folder, frontmatter "
        "included. Writes nothing when over `limit` notes would change. A dry run unless "
        "dry_run: false; review the diffs first."
    ),
    kind="write",
    hints=CHANGE,
    params={
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
    output=result_schema(
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
        },
        {"warnings": STRS, **SKIPPED},
    ),
)
def vault_replace(call: Call) -> dict[str, Any]:
    args = call.args
    done = replace.replace_text(
        call.vault,
        _replacer(args),
        prefix=check_prefix(call.vault, args["prefix"]),
        limit=args["limit"],
        dry_run=args["dry_run"],
        actor=call.actor,
    )
    verb = "would change" if done.dry_run else "changed"
    out = {
        "vault": call.vault.name,
        "dry_run": done.dry_run,
        "notes": [_change_row(change) for change in done.changes],
        "notes_affected": len(done.changes),
        "occurrences": done.occurrences,
        "message": f"{verb} {len(done.changes)} note(s)"
        + ("; nothing was written (pass dry_run: false to apply)" if done.dry_run else ""),
    }
    return _reported(out, done.skipped, done.warnings)


def _change_row(change: replace.Change) -> dict[str, Any]:
    row: dict[str, Any] = {"path": change.path, "matches": change.matches}
    for key in ("diff", "content_hash", "error"):
        if value := getattr(change, key):
            row[key] = value
    return row


def _replacer(args: dict[str, Any]) -> replace.Replacer:
    if args["regex"]:
        regex = grammar.compile_regex(args["pattern"])
        return lambda text: regex.subn(lambda m: grammar.expand_dollars(args["replace"], m), text)
    if not args["pattern"]:
        raise ArgumentError("pattern is empty; pass the text to replace")
    return lambda text: (
        text.replace(args["pattern"], args["replace"]),
        text.count(args["pattern"]),
    )


@tool(
    title="Create a vault",
    description=(
        "Create a new vault with a layout: wiki-raw (sources in raw/, distilled pages in "
        "wiki/), zettelkasten, para, or empty. Needs the allow_all scope. Vaults are removed "
        "only by the operator, never by a tool."
    ),
    kind="vault_create",
    hints=ADD,
    params={
        "name": text(
            "Vault name: 1-64 of a-z, 0-9, _, -; first a letter or digit.",
            required=True,
        ),
        "layout": choice(
            "Folder layout.",
            tuple(layouts.LAYOUTS),
            "wiki-raw",
        ),
    },
    output=result_schema(
        {"vault": STR, "layout": STR, "directories": STRS, "instructions": STR, "message": STR}
    ),
    uses_vault=False,
)
def vault_create(call: Call) -> dict[str, Any]:
    args = call.args
    ctx = call.context
    name = paths.check_vault_name(args["name"])
    if ctx.ticket.paths:
        raise ForbiddenError(
            "vault_create needs a token without path rules: yours reaches only some folders "
            f"of {', '.join(sorted(ctx.ticket.paths.vaults))}; ask the vault's owner"
        )
    if not ctx.ticket.allows_vault(name):
        raise ForbiddenError(
            f"your token may not use the vault name {name}; pick a name your "
            "grant covers or ask for access"
        )
    if name in ctx.library.names():
        raise VaultExistsError(name)
    opened = ctx.library.create(name, args["layout"], call.actor)
    chosen = layouts.LAYOUTS[args["layout"]]
    return {
        "vault": name,
        "layout": chosen.name,
        "directories": list(chosen.directories),
        "instructions": layouts.read_instructions(opened.vault.root),
        "message": f"created vault {name} with layout {chosen.name}; pass vault={name!r} "
        "to the other tools",
    }
