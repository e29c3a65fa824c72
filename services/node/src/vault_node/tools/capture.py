"""Tools that capture quickly (docs/design.md#tools): the daily note, the inbox, templates.
(Reading a range of daily notes back, daily_range, is a read: `vault_node.tools.read`.)

Captures never lose anything: the inbox picks a free name instead of failing, and a
daily note is created on first use.
"""

from __future__ import annotations

from typing import Any

from vault_core import (
    HeadingNotFoundError,
    NoteExistsError,
    PathNotFoundError,
    Rfc3339,
    TemplateNotFoundError,
    Vault,
    WriteOp,
    clean_tags,
    edit,
    frontmatter,
    new_note,
    note,
    rfc3339,
    sections,
    tag_values,
    templates,
)
from vault_node.context import Call
from vault_node.errors import ArgumentError
from vault_node.tools.base import ADD, flag, strings, text, tool
from vault_node.tools.common import DRY, read_if_exists, today
from vault_node.tools.shape import BOOL, STR, STRS, result_schema, write_schema


@tool(
    title="Note from a template",
    description=(
        "Create a note from one of the vault's templates (templates/*.md), filling in "
        "{{title}}, {{date}}, {{time}}, {{datetime}}, {{year}}, {{month}}, {{day}} and "
        "{{slug}}. Call it without `template` to list the templates."
    ),
    kind="write",
    hints=ADD,
    params={
        "template": text("Template name, e.g. meeting (omit to list the templates)."),
        "path": text("Where to write (default inbox/YYYY-MM-DD-<slug>.md)."),
        "title": text("Title (default: the template name)."),
        "tags": strings("Tags to add to the template's own."),
        "dry_run": flag(DRY, False),
    },
    output=result_schema(
        {"vault": STR}, {**write_schema()["properties"], "templates": STRS, "template": STR}
    ),
)
def note_from_template(call: Call) -> dict[str, Any]:
    args = call.args
    if not args["template"]:
        return _templates(call.vault)
    source = templates.template_path(args["template"])
    found = read_if_exists(call.vault, source)
    if found is None:
        raise TemplateNotFoundError(args["template"])
    title = args["title"] or note.stem(source)
    now = call.vault.now()
    rendered = templates.render(found.text, title, now)
    if args["tags"]:
        extra = clean_tags(args["tags"])
        rendered = edit.edit_frontmatter(
            rendered,
            source,
            lambda fm: fm.set("tags", list(dict.fromkeys([*tag_values(fm.get("tags")), *extra]))),
        )
    target = args["path"] or templates.default_template_target(title, now)
    op = WriteOp(
        target,
        lambda current, exists: rendered,
        dry_run=args["dry_run"],
        commit_as="note_from_template",
        only_new=True,
        exists_hint="pass another path",
    )
    result = edit.apply(call.vault, op, call.actor)
    return {**result.response(), "template": source}


def _templates(vault: Vault) -> dict[str, Any]:
    names = sorted(note.stem(e.rel) for e in vault.notes(templates.TEMPLATE_DIR))
    if names or _sees_folder(vault, templates.TEMPLATE_DIR):
        return {"vault": vault.name, "templates": names}
    # A templates/ folder the caller's path rules hide answers as one that is not there.
    return {
        "vault": vault.name,
        "templates": [],
        "message": "this vault has no templates/ folder; create notes with note_create",
    }


def _sees_folder(vault: Vault, rel: str) -> bool:
    try:
        return vault.resolve(rel).abs.is_dir()
    except PathNotFoundError:
        return False


@tool(
    title="Daily note",
    description=(
        "Today's (or a given day's) journal note, journal/YYYY/YYYY-MM-DD.md: returned "
        "(created if missing), or with `append` the text added under a heading. For a log "
        "of what happened; for loose ideas use inbox_capture."
    ),
    kind="add",
    hints=ADD,
    params={
        "date": text("The day as YYYY-MM-DD (default today)."),
        "append": text(
            "Markdown to add; omit to read the note (needs read).",
            trim=False,
        ),
        "heading": text(
            "Heading to add under (default: the time, HH:MM); an existing one is extended."
        ),
        "dry_run": flag(DRY, False),
    },
    output=result_schema(
        {"vault": STR, "path": STR, "date": STR},
        {**write_schema()["properties"], "content": STR, "existed": BOOL},
    ),
    blind=("vault", "path", "date", "created", "existed", "dry_run", "warnings"),
)
def daily_note(call: Call) -> dict[str, Any]:
    args = call.args
    day = templates.parse_day(args["date"]) if args["date"] else today(call.vault)
    rel = templates.daily_path(day)
    if args["append"] is None:
        call.require("read")  # without `append` it is a read (and a write-only caller is blind)
        existing = read_if_exists(call.vault, rel)
        if existing is not None:
            return {
                "vault": call.vault.name,
                "path": rel,
                "date": day.isoformat(),
                "content": existing.body,
                "content_hash": existing.content_hash,
                "existed": True,
            }
    heading = args["heading"] or call.vault.now().strftime("%H:%M")

    def transform(current: str, exists: bool) -> str:
        if not exists:
            current = new_note(
                rel, day.isoformat(), ["journal"], f"# {templates.daily_heading(day)}\n", date=day
            )
        if args["append"] is None:
            return current
        split = frontmatter.split(current)
        return split.block + _append_under(split.body, heading, args["append"], rel)

    op = WriteOp(rel, transform, dry_run=args["dry_run"], commit_as="daily_note")
    result = edit.apply(call.vault, op, call.actor)
    return {**result.response(), "date": day.isoformat(), "existed": not result.created}


def _append_under(body: str, heading: str, addition: str, rel: str) -> str:
    try:
        sections.find_section(body, heading, rel)
    except HeadingNotFoundError:
        block = f"## {heading.strip().lstrip('#').strip()}\n\n{addition}"
        return sections.section_edit(body, "append_to_note", heading=None, content=block)
    return sections.section_edit(
        body, "append_to_section", heading=heading, content=addition, path=rel
    )


@tool(
    title="Capture to inbox",
    description=(
        "Save a thought, link or snippet immediately as a new note in inbox/, to be sorted "
        "later. Never fails on a name clash and has no dry run, so nothing gets lost."
    ),
    kind="add",
    hints=ADD,
    params={
        "text": text("What to capture (Markdown).", required=True, trim=False),
        "title": text("Title (default: the first line, up to 60 characters)."),
        "tags": strings("Tags besides inbox, which is always added."),
        "source": text("Where it came from (a URL, a chat), kept in the frontmatter."),
    },
    output=write_schema(),
    blind=("vault", "path", "bytes", "content_hash", "created", "warnings"),
)
def inbox_capture(call: Call) -> dict[str, Any]:
    args = call.args
    if not args["text"].strip():
        raise ArgumentError("text is empty; pass what you want to capture")
    title = args["title"] or templates.capture_title(args["text"])
    now = call.vault.now()
    fields: dict[str, Any] = {"captured": Rfc3339(rfc3339(now))}
    if args["source"]:
        fields["source"] = args["source"]
    content = new_note("", title, ["inbox", *(args["tags"] or [])], args["text"], **fields)
    base = templates.inbox_path(title, now)
    for attempt in range(1, 100):
        rel = base if attempt == 1 else templates.numbered(base, attempt)
        try:
            op = WriteOp(
                rel, lambda current, exists: content, commit_as="inbox_capture", only_new=True
            )
            return edit.apply(call.vault, op, call.actor).response()
        except NoteExistsError:
            continue
    raise ArgumentError("too many captures with this title this minute; pass another title")
