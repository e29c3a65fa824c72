"""Tools that create, change and delete one note or file (docs/design.md#tools, task_toggle,
attachment_put).

Every change goes through `vault_core.edit.apply`: optimistic locking, dry run, a trash
copy before anything is replaced, an atomic write and one attributed commit.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any
from urllib.parse import quote

from vault_core import (
    ATTACHMENT_LIMIT,
    Edited,
    Frontmatter,
    NoteNotFoundError,
    TooLargeError,
    Transform,
    WriteOp,
    WriteResult,
    alias_values,
    clean_tags,
    edit,
    frontmatter,
    markdown,
    new_note,
    note,
    sections,
    tag_values,
)
from vault_core.search import answers
from vault_node.context import Call
from vault_node.errors import ArgumentError
from vault_node.tools.base import (
    CHANGE,
    SET,
    TOGGLE,
    choice,
    flag,
    integer,
    mapping,
    strings,
    text,
    tool,
)
from vault_node.tools.common import DRY, FRONTMATTER, HASH, NOTE_PATH
from vault_node.tools.shape import BOOL, INT, STR, STRS, result_schema, write_schema

PUT_LIMIT = 6_000_000
"""The most attachment_put stores: its base64 (8,000,000 characters) fits the 8 MiB request
body with room for the call around it, even wrapped in lines of 76 characters."""
PUT_LARGER = (
    f"a request body is at most 8 MiB and base64 adds a third; copy a larger file (up to "
    f"{ATTACHMENT_LIMIT} bytes) into the vault's folder instead"
)
TAKEN = "search first: read it with note_read and extend it, or pass overwrite to replace it"


def _needs(exists: bool, rel: str) -> None:
    if not exists:
        raise NoteNotFoundError(rel)


@tool(
    title="Create a note",
    description=(
        "Create a new note with a title, tags and Markdown content. Refused when a note "
        "exists at the path: search first (note_search) and extend an existing note rather "
        "than write a near-duplicate. Link the new note from a related one."
    ),
    kind="add",
    hints=CHANGE,
    params={
        "path": text(NOTE_PATH, required=True),
        "title": text("Title (default: the file name)."),
        "content": text(
            "Markdown body, may open with frontmatter (default: '# <title>').",
            trim=False,
        ),
        "tags": strings('Tags for the frontmatter, e.g. ["project", "ops"].'),
        "overwrite": flag(
            "Replace an existing note (needs delete; the old one is trashed).",
            False,
        ),
        "dry_run": flag(DRY, False),
    },
    output=write_schema(),
    blind=("vault", "path", "bytes", "content_hash", "created", "dry_run", "hint", "warnings"),
)
def note_create(call: Call) -> dict[str, Any]:
    args = call.args
    target = call.vault.resolve_for_write(args["path"])
    if args["overwrite"] and target.abs.is_file():
        call.require("write", displaces=True)
    title = args["title"] or note.stem(target.rel)
    content = new_note(target.rel, title, args["tags"] or [], args["content"])
    op = WriteOp(
        target.rel,
        lambda current, exists: content,
        dry_run=args["dry_run"],
        commit_as="note_create",
        only_new=not args["overwrite"],
        exists_hint=TAKEN,
    )
    result = edit.apply(call.vault, op, call.actor)
    out = result.response()
    if result.changed and not result.dry_run:
        out["hint"] = (
            f"link the new note from a related one (e.g. with note_section_edit), "
            f"as [[{target.rel[:-3]}]]; note_related suggests candidates"
        )
    return out


@tool(
    title="Rewrite a note",
    description=(
        "Replace a note's whole body. Needs the content_hash from note_read, so you never "
        "overwrite changes you have not seen. For less than a rewrite prefer note_edit or "
        "note_section_edit."
    ),
    kind="write",
    hints=SET,
    params={
        "path": text(NOTE_PATH, required=True),
        "content": text("The complete new body (Markdown).", required=True, trim=False),
        "content_hash": text(
            HASH,
            required=True,
            hint="call note_read first and pass the content_hash it returns",
        ),
        "keep_frontmatter": flag(
            "Keep the existing frontmatter; false writes exactly `content`.",
            True,
        ),
        "dry_run": flag(DRY, False),
    },
    output=write_schema(),
)
def note_write(call: Call) -> dict[str, Any]:
    args = call.args
    if not args["content_hash"]:
        raise ArgumentError(
            "content_hash is required: call note_read first and pass the content_hash it returns"
        )

    def transform(current: str, exists: bool) -> str:
        _needs(exists, args["path"])
        content: str = args["content"]
        if args["keep_frontmatter"] and frontmatter.split(content).yaml_text is None:
            return frontmatter.split(current).block + content
        return content

    return _checked_edit(call, transform, "note_write").response()


@tool(
    title="Edit text in a note",
    description=(
        "Replace an exact piece of text in a note: the safest way to change a few words or "
        "lines. old_string must match exactly and be unique unless replace_all; copy it "
        "from note_read. An empty new_string deletes it."
    ),
    kind="write",
    hints=CHANGE,
    params={
        "path": text(NOTE_PATH, required=True),
        "old_string": text(
            "The exact text to replace, with enough context to be unique.",
            required=True,
            trim=False,
        ),
        "new_string": text("The replacement text (empty to delete).", required=True, trim=False),
        "replace_all": flag("Replace every occurrence, not exactly one.", False),
        "content_hash": text(HASH),
        "dry_run": flag(DRY, False),
    },
    output=write_schema({"replacements": INT}),
)
def note_edit(call: Call) -> dict[str, Any]:
    args = call.args

    def transform(current: str, exists: bool) -> Edited:
        _needs(exists, args["path"])
        changed, count = sections.string_edit(
            current,
            args["old_string"],
            args["new_string"],
            replace_all=args["replace_all"],
            path=args["path"],
        )
        return Edited(changed, {"replacements": count})

    return _checked_edit(call, transform, "note_edit").response()


@tool(
    title="Edit a section",
    description=(
        "Change one section of a note by its heading: append, prepend, replace, insert "
        "before/after or delete it, or add at the note's start or end. A section runs to "
        "the next heading of its level or higher; note_outline shows the headings."
    ),
    kind="write",
    hints=CHANGE,
    params={
        "path": text(NOTE_PATH, required=True),
        "mode": choice(
            "What to do with the section (or the whole note).", sections.MODES, required=True
        ),
        "heading": text("Heading of the section (not for append_to_note, prepend_to_note)."),
        "content": text(
            "Markdown to add or put in place (not needed for delete_section).", trim=False
        ),
        "create": flag("Create the note (and heading) if missing.", False),
        "content_hash": text(HASH),
        "dry_run": flag(DRY, False),
    },
    output=write_schema(),
)
def note_section_edit(call: Call) -> dict[str, Any]:
    args = call.args
    mode, heading, content = args["mode"], args["heading"], args["content"]
    sections.check_mode(mode, heading, content)

    def transform(current: str, exists: bool) -> str:
        if not exists:
            if not args["create"]:
                raise NoteNotFoundError(args["path"])
            stem = note.stem(call.vault.resolve_note(args["path"]).rel)
            current = new_note("", stem, [], sections.scaffold(stem, mode, heading))
        split = frontmatter.split(current)
        body = sections.section_edit(
            split.body, mode, heading=heading, content=content, path=args["path"]
        )
        return split.block + body

    return _checked_edit(call, transform, "note_section_edit").response()


@tool(
    title="Edit frontmatter",
    description=(
        "Set or remove frontmatter fields and add or remove tags and aliases without touching "
        "the body. Tags and aliases are kept as sorted sets; inline #tags in the text are "
        "left alone (use tag_rename for those)."
    ),
    kind="write",
    hints=SET,
    params={
        "path": text(NOTE_PATH, required=True),
        "set": mapping('Fields to set, e.g. {"status": "done", "due": "2026-02-01"}.'),
        "unset": strings("Field names to remove."),
        "add_tags": strings("Tags to add."),
        "remove_tags": strings("Tags to remove."),
        "add_aliases": strings("Aliases to add (other names links may use)."),
        "content_hash": text(HASH),
        "dry_run": flag(DRY, False),
    },
    output=write_schema({"frontmatter": FRONTMATTER}),
)
def note_frontmatter(call: Call) -> dict[str, Any]:
    args = call.args
    changes = ("set", "unset", "add_tags", "remove_tags", "add_aliases")
    if not any(args[name] for name in changes):
        raise ArgumentError(f"nothing to change: pass at least one of {', '.join(changes)}")

    def transform(current: str, exists: bool) -> str:
        _needs(exists, args["path"])
        return edit.edit_frontmatter(current, args["path"], lambda fm: _change(fm, args))

    result = _checked_edit(call, transform, "note_frontmatter")
    after = Frontmatter(frontmatter.split(result.text).yaml_text).plain()
    return {**result.response(), "frontmatter": after}


def _checked_edit(call: Call, transform: Transform, tool: str) -> WriteResult:
    """Change the note at `path` by `transform`: only if it still has `content_hash` (when
    given), as a dry run when asked, committed under the tool's name."""
    op = WriteOp(
        call.args["path"],
        transform,
        expected_hash=call.args["content_hash"],
        dry_run=call.args["dry_run"],
        commit_as=tool,
    )
    return edit.apply(call.vault, op, call.actor)


def _change(fm: Frontmatter, args: dict[str, Any]) -> None:
    for key in sorted(args["set"] or {}):
        fm.set(str(key), args["set"][key])
    for key in args["unset"] or []:
        fm.unset(key)
    if args["add_tags"] or args["remove_tags"]:
        before = tag_values(fm.get("tags"))
        after = sorted(
            (set(before) | set(clean_tags(args["add_tags"] or [])))
            - set(clean_tags(args["remove_tags"] or []))
        )
        if after != before:
            fm.set("tags", after)
    if args["add_aliases"]:
        before = alias_values(fm.get("aliases"))
        after = sorted(set(before) | set(args["add_aliases"]))
        if after != before:
            fm.set("aliases", after)


@tool(
    title="Delete a note",
    description=(
        "Delete a note. It goes to the vault's trash and stays in history, so note_restore "
        "can bring it back. Check note_backlinks first: the answer lists notes that still "
        "link to it."
    ),
    kind="delete",
    hints=CHANGE,
    params={
        "path": text(NOTE_PATH, required=True),
        "content_hash": text(HASH),
        "dry_run": flag(DRY, False),
    },
    output=write_schema({"still_linked_from": STRS}),
)
def note_delete(call: Call) -> dict[str, Any]:
    args = call.args
    assert call.opened is not None
    rel = call.vault.resolve_for_write(args["path"]).rel
    # Asked before the delete: afterwards the index no longer resolves links to it.
    incoming = answers.backlinks(call.opened.index, rel)["incoming"]
    linked = sorted({link["path"] for link in incoming})
    result = edit.delete(
        call.vault,
        rel,
        expected_hash=args["content_hash"] or None,
        dry_run=args["dry_run"],
        actor=call.actor,
    )
    out = result.response()
    if linked:
        out["still_linked_from"] = linked
        out["hint"] = (
            f"{len(linked)} note(s) still link to {result.path}; fix those links with "
            "note_edit, or bring the note back with note_restore"
        )
    return out


@tool(
    title="Check or uncheck a task",
    description=(
        "Check or uncheck one Markdown checkbox, found by its line number (from task_list) or "
        "its exact text. Pass exactly one of the two."
    ),
    kind="write",
    hints=TOGGLE,
    params={
        "path": text(NOTE_PATH, required=True),
        "line": integer("Line number of the task in the file, from task_list."),
        "text": text("The task's exact text (instead of line)."),
        "done": flag("true to check, false to uncheck.", True),
        "dry_run": flag(DRY, False),
    },
    output=write_schema({"task": STR, "done": BOOL}),
)
def task_toggle(call: Call) -> dict[str, Any]:
    args = call.args
    if (args["line"] is None) == (args["text"] is None or args["text"] == ""):
        raise ArgumentError(
            "pass exactly one of line (from task_list) or text (the exact task text)"
        )
    found: dict[str, Any] = {}

    def transform(current: str, exists: bool) -> str:
        _needs(exists, args["path"])
        rel = call.vault.resolve_note(args["path"]).rel
        task = _find_task(rel, current, args["line"], args["text"])
        lines = current.split("\n")
        lines[task.line - 1] = f"{task.indent}- [{'x' if args['done'] else ' '}] {task.text}"
        found["task"] = task.text
        return "\n".join(lines)

    op = WriteOp(args["path"], transform, dry_run=args["dry_run"], commit_as="task_toggle")
    result = edit.apply(call.vault, op, call.actor)
    return {**result.response(), "task": found.get("task", ""), "done": args["done"]}


def _find_task(rel: str, current: str, line: int | None, wanted: str | None) -> markdown.Task:
    parsed = note.parse(rel, current.encode("utf-8"))
    retry = "call task_list for current line numbers"
    if line is not None:
        total = len(current.split("\n")) - (1 if current.endswith("\n") else 0)
        if not 1 <= line <= total:
            raise ArgumentError(f"line {line} is outside {rel} (it has {total} lines); {retry}")
        task = next((t for t in parsed.tasks if t.line == line), None)
        if task is None:
            raise ArgumentError(f"line {line} of {rel} is not a checkbox; {retry}")
        return task
    matches = [t for t in parsed.tasks if t.text.strip() == (wanted or "").strip()]
    if len(matches) != 1:
        what = "no task has" if not matches else f"{len(matches)} tasks have"
        raise ArgumentError(f"{what} exactly this text in {rel}; pass line instead ({retry})")
    return matches[0]


@tool(
    title="Store an attachment",
    description=(
        "Store a file (image, PDF, audio, CSV, …; up to 6,000,000 bytes) from base64 and get "
        "Markdown to embed it. Extensions: png jpg jpeg gif webp svg pdf txt csv json yaml "
        "yml mp3 m4a wav."
    ),
    kind="add",
    hints=SET,
    params={
        "path": text("Path with extension, e.g. attachments/diagram.png.", required=True),
        "data": text("The file as base64.", required=True),
        "overwrite": flag(
            "Replace an existing file (needs delete; the old one is trashed).",
            False,
        ),
    },
    output=result_schema(
        {"vault": STR, "path": STR, "bytes": INT, "markdown": STR}, {"warnings": STRS}
    ),
    blind=("vault", "path", "bytes", "markdown", "warnings"),
)
def attachment_put(call: Call) -> dict[str, Any]:
    args = call.args
    try:
        data = base64.b64decode("".join(args["data"].split()), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ArgumentError(
            "data is not valid base64 (standard alphabet, with = padding); "
            "encode the file's bytes and pass the text"
        ) from exc
    target = call.vault.resolve_for_write(args["path"], note=False)
    if len(data) > PUT_LIMIT:
        raise TooLargeError(target.rel, len(data), PUT_LIMIT, PUT_LARGER)
    if args["overwrite"] and target.abs.is_file():
        call.require("write", displaces=True)
    written, warnings = edit.put_attachment(
        call.vault, args["path"], data, overwrite=args["overwrite"], actor=call.actor
    )
    name = written.rel.rsplit("/", 1)[-1]
    return {
        "vault": call.vault.name,
        "path": written.rel,
        "bytes": len(data),
        "markdown": f"![{name}]({quote(written.rel)})",
        **({"warnings": warnings} if warnings else {}),
    }
