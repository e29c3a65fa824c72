"""Tools that create, change and delete single notes (spec §13.3, task_toggle, attachment_put,
vault_create).

Every change goes through `vault_core.edit.apply`: optimistic locking, dry run, a trash
copy before anything is replaced, an atomic write and one attributed commit.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any
from urllib.parse import quote

from vault_core import (
    FrontmatterError,
    NoteNotFoundError,
    VaultExistsError,
    edit,
    frontmatter,
    layouts,
    markdown,
    note,
    paths,
    queries,
    sections,
)
from vault_core.edit import Transform, WriteOp, WriteResult
from vault_core.frontmatter import Frontmatter, alias_values, normalize_tag, tag_values
from vault_node.errors import ArgumentError, ForbiddenError
from vault_node.tools.base import Call, Hints, Tool, choice, flag, integer, mapping, strings, text
from vault_node.tools.common import FRONTMATTER
from vault_node.tools.shape import BOOL, INT, STR, STRS, result_schema, write_schema

PATH = "Note path in the vault, e.g. wiki/rate-limiting.md (.md optional)."
HASH = "content_hash from note_read; refused if the note changed since."
DRY = "Show the change as a diff without writing."
TAKEN = "search first: read it with note_read and extend it, or pass overwrite to replace it"


def apply(
    call: Call,
    path: str,
    transform: Transform,
    *,
    tool: str,
    expected: str | None = None,
    dry_run: bool = False,
    skip_touch: bool = False,
    taken: str | None = None,
) -> WriteResult:
    """One write through the vault's write path, committed as `<tool>: <path>`.

    `taken` makes it a write of a new note only: an existing one is refused with that hint
    before anything of it is read, so the answer never depends on what it holds."""
    rel = call.vault.resolve_note(path).rel
    op = WriteOp(
        rel,
        transform,
        expected_hash=expected or None,
        dry_run=dry_run,
        reason=f"{tool}: {rel}",
        skip_touch=skip_touch,
        only_new=taken is not None,
        exists_hint=taken or "",
    )
    return edit.apply(call.vault, op, call.actor)


def _needs(exists: bool, rel: str) -> None:
    if not exists:
        raise NoteNotFoundError(rel)


def new_note(rel: str, title: str, tags: list[str], content: str | None, **fields: Any) -> str:
    """A note's text: `content` (or `# title`) under frontmatter with title, tags and `fields`."""
    body = content if content is not None and content.strip() else f"# {title}\n"
    split = frontmatter.split(body)
    fm = Frontmatter(split.yaml_text)
    if fm.error:
        raise FrontmatterError(rel, fm.error)
    fm.set("title", title)
    fm.set("tags", list(dict.fromkeys([*tag_values(fm.get("tags")), *clean_tags(tags)])))
    for key, value in fields.items():
        fm.set(key, value)
    body = split.body if split.body.endswith("\n") or not split.body else split.body + "\n"
    return frontmatter.join(fm.render(), body)


def clean_tags(tags: list[str]) -> list[str]:
    return [t for t in (normalize_tag(tag) for tag in tags) if t]


def note_create(call: Call) -> dict[str, Any]:
    args = call.args
    target = call.vault.resolve_note(args["path"])
    if args["overwrite"] and target.abs.is_file():
        call.require("write", displaces=True)
    title = args["title"] or note.stem(target.rel)
    content = new_note(target.rel, title, args["tags"] or [], args["content"])
    result = apply(
        call,
        target.rel,
        lambda current, exists: content,
        tool="note_create",
        dry_run=args["dry_run"],
        taken=None if args["overwrite"] else TAKEN,
    )
    out = result.response()
    if result.changed and not result.dry_run:
        out["hint"] = (
            f"link the new note from a related one (e.g. with note_section_edit), "
            f"as [[{target.rel[:-3]}]]; note_related suggests candidates"
        )
    return out


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

    return apply(
        call,
        args["path"],
        transform,
        tool="note_write",
        expected=args["content_hash"],
        dry_run=args["dry_run"],
    ).response()


def note_edit(call: Call) -> dict[str, Any]:
    args = call.args
    count = [0]

    def transform(current: str, exists: bool) -> str:
        _needs(exists, args["path"])
        changed, count[0] = sections.string_edit(
            current,
            args["old_string"],
            args["new_string"],
            replace_all=args["replace_all"],
            path=args["path"],
        )
        return changed

    result = apply(
        call,
        args["path"],
        transform,
        tool="note_edit",
        expected=args["content_hash"],
        dry_run=args["dry_run"],
    )
    return {**result.response(), "replacements": count[0]}


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

    return apply(
        call,
        args["path"],
        transform,
        tool="note_section_edit",
        expected=args["content_hash"],
        dry_run=args["dry_run"],
    ).response()


def note_frontmatter(call: Call) -> dict[str, Any]:
    args = call.args
    changes = ("set", "unset", "add_tags", "remove_tags", "add_aliases")
    if not any(args[name] for name in changes):
        raise ArgumentError(f"nothing to change: pass at least one of {', '.join(changes)}")

    def transform(current: str, exists: bool) -> str:
        _needs(exists, args["path"])
        return edit.edit_frontmatter(current, args["path"], lambda fm: _change(fm, args))

    result = apply(
        call,
        args["path"],
        transform,
        tool="note_frontmatter",
        expected=args["content_hash"],
        dry_run=args["dry_run"],
    )
    after = Frontmatter(frontmatter.split(result.text).yaml_text).plain()
    return {**result.response(), "frontmatter": after}


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


def note_delete(call: Call) -> dict[str, Any]:
    args = call.args
    assert call.opened is not None
    rel = call.vault.resolve_note(args["path"]).rel
    # Asked before the delete: afterwards the index no longer resolves links to it.
    incoming = queries.backlinks(call.opened.index, rel)["incoming"]
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

    result = apply(call, args["path"], transform, tool="task_toggle", dry_run=args["dry_run"])
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


def attachment_put(call: Call) -> dict[str, Any]:
    args = call.args
    try:
        data = base64.b64decode("".join(args["data"].split()), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ArgumentError(
            "data is not valid base64 (standard alphabet, with = padding); "
            "encode the file's bytes and pass the text"
        ) from exc
    target = call.vault.resolve(args["path"])
    if args["overwrite"] and target.abs.is_file():
        call.require("write", displaces=True)
    written = edit.put_attachment(
        call.vault, args["path"], data, overwrite=args["overwrite"], actor=call.actor
    )
    name = written.rel.rsplit("/", 1)[-1]
    return {
        "vault": call.vault.name,
        "path": written.rel,
        "bytes": len(data),
        "markdown": f"![{name}]({quote(written.rel)})",
    }


def vault_create(call: Call) -> dict[str, Any]:
    args = call.args
    ctx = call.context
    name = paths.check_vault_name(args["name"])
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


CHANGE = Hints(read_only=False, destructive=True, idempotent=False)
ADD = Hints(read_only=False, destructive=False, idempotent=False)
SET = Hints(read_only=False, destructive=True, idempotent=True)
TOGGLE = Hints(read_only=False, destructive=False, idempotent=True)

TOOLS = [
    Tool(
        "note_create",
        "Create a note",
        "Create a new note with a title, tags and Markdown content. It refuses when a note "
        "already exists at the path — that is the point: search first (note_search), and "
        "extend the existing note instead of writing a near-duplicate. Link the new note "
        "from a related one afterwards.",
        {
            "path": text(PATH, required=True),
            "title": text("Title (default: the file name)."),
            "content": text(
                "Markdown body, may open with frontmatter (default: '# <title>').",
                trim=False,
            ),
            "tags": strings('Tags for the frontmatter, e.g. ["project", "ops"].'),
            "overwrite": flag(
                "Replace an existing note (needs delete; the old text goes to the trash).",
                False,
            ),
            "dry_run": flag(DRY, False),
        },
        write_schema(),
        "add",
        CHANGE,
        note_create,
        blind=("vault", "path", "bytes", "content_hash", "created", "dry_run", "hint"),
    ),
    Tool(
        "note_write",
        "Rewrite a note",
        "Replace a note's whole body. Needs the content_hash from note_read so you never "
        "overwrite changes you have not seen. Prefer note_edit (exact replacement) or "
        "note_section_edit (one section) for anything smaller than a rewrite.",
        {
            "path": text(PATH, required=True),
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
        write_schema(),
        "write",
        SET,
        note_write,
    ),
    Tool(
        "note_edit",
        "Edit text in a note",
        "Replace an exact piece of text in a note — the safest way to change a few words or "
        "lines. old_string must match character for character and be unique unless "
        "replace_all is set; copy it from note_read. An empty new_string deletes the text.",
        {
            "path": text(PATH, required=True),
            "old_string": text(
                "The exact text to replace, with enough context to be unique.",
                required=True,
                trim=False,
            ),
            "new_string": text(
                "The replacement text (empty to delete).", required=True, trim=False
            ),
            "replace_all": flag("Replace every occurrence, not exactly one.", False),
            "content_hash": text(HASH),
            "dry_run": flag(DRY, False),
        },
        write_schema({"replacements": INT}),
        "write",
        CHANGE,
        note_edit,
    ),
    Tool(
        "note_section_edit",
        "Edit a section",
        "Change one section of a note by its heading: append, prepend, replace, insert "
        "before/after or delete it, or add text at the start or end of the note. The section "
        "runs to the next heading of the same or a higher level. Call note_outline to see "
        "the headings.",
        {
            "path": text(PATH, required=True),
            "mode": choice(
                "What to do with the section (or the whole note).", sections.MODES, required=True
            ),
            "heading": text(
                "Heading of the section (not needed for append_to_note and "
                "prepend_to_note), e.g. Open questions."
            ),
            "content": text(
                "Markdown to add or put in place (not needed for delete_section).", trim=False
            ),
            "create": flag("Create the note (and heading) if missing.", False),
            "content_hash": text(HASH),
            "dry_run": flag(DRY, False),
        },
        write_schema(),
        "write",
        CHANGE,
        note_section_edit,
    ),
    Tool(
        "note_frontmatter",
        "Edit frontmatter",
        "Set or remove frontmatter fields and add or remove tags and aliases without touching "
        "the body. Tags and aliases are kept as sorted sets; inline #tags in the text are "
        "left alone (use tag_rename for those).",
        {
            "path": text(PATH, required=True),
            "set": mapping('Fields to set, e.g. {"status": "done", "due": "2026-02-01"}.'),
            "unset": strings("Field names to remove."),
            "add_tags": strings("Tags to add."),
            "remove_tags": strings("Tags to remove."),
            "add_aliases": strings("Aliases to add (other names links may use)."),
            "content_hash": text(HASH),
            "dry_run": flag(DRY, False),
        },
        write_schema({"frontmatter": FRONTMATTER}),
        "write",
        SET,
        note_frontmatter,
    ),
    Tool(
        "note_delete",
        "Delete a note",
        "Delete a note. It goes to the vault's trash and stays in history, so note_restore "
        "can bring it back. Check note_backlinks first: the answer lists notes that still "
        "link to it.",
        {
            "path": text(PATH, required=True),
            "content_hash": text(HASH),
            "dry_run": flag(DRY, False),
        },
        write_schema({"still_linked_from": STRS}),
        "delete",
        CHANGE,
        note_delete,
    ),
    Tool(
        "task_toggle",
        "Check or uncheck a task",
        "Check or uncheck one Markdown checkbox, found by its line number (from task_list) or "
        "its exact text. Pass exactly one of the two.",
        {
            "path": text(PATH, required=True),
            "line": integer("Line number of the task in the file, from task_list."),
            "text": text("The task's exact text (instead of line)."),
            "done": flag("true to check, false to uncheck.", True),
            "dry_run": flag(DRY, False),
        },
        write_schema({"task": STR, "done": BOOL}),
        "write",
        TOGGLE,
        task_toggle,
    ),
    Tool(
        "attachment_put",
        "Store an attachment",
        "Store a file (image, PDF, audio, CSV, …; up to 32 MiB) from base64 and get Markdown "
        "to embed it. Extensions: png jpg jpeg gif webp svg pdf txt csv json yaml yml mp3 "
        "m4a wav.",
        {
            "path": text("Path with extension, e.g. attachments/diagram.png.", required=True),
            "data": text("The file as base64.", required=True),
            "overwrite": flag(
                "Replace an existing file (needs delete; the old one goes to the trash).",
                False,
            ),
        },
        result_schema({"vault": STR, "path": STR, "bytes": INT, "markdown": STR}),
        "add",
        SET,
        attachment_put,
        blind=("vault", "path", "bytes", "markdown"),
    ),
    Tool(
        "vault_create",
        "Create a vault",
        "Create a new vault with a layout: wiki-raw (sources in raw/, distilled pages in "
        "wiki/), zettelkasten, para, or empty. Needs the allow_all scope. Vaults are removed "
        "only by the operator, never by a tool.",
        {
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
        result_schema(
            {"vault": STR, "layout": STR, "directories": STRS, "instructions": STR, "message": STR}
        ),
        "vault_create",
        ADD,
        vault_create,
        uses_vault=False,
    ),
]
