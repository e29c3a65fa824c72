"""Tools that capture quickly (spec §13.4): the daily note, the inbox, notes from templates,
and reading a range of daily notes back.

Captures never lose anything: the inbox picks a free name instead of failing, and a
daily note is created on first use.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from vault_core import (
    NoteExistsError,
    TemplateNotFoundError,
    Vault,
    edit,
    frontmatter,
    note,
    sections,
    templates,
)
from vault_core.errors import HeadingNotFoundError
from vault_core.frontmatter import Rfc3339, tag_values
from vault_core.vault import rfc3339
from vault_node import grammar
from vault_node.errors import ArgumentError
from vault_node.tools.base import READS, Call, Tool, flag, strings, text
from vault_node.tools.common import read_if_exists, today
from vault_node.tools.shape import BOOL, INT, STR, STRS, arr, obj, result_schema, write_schema
from vault_node.tools.write import ADD, DRY, apply, clean_tags, new_note


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
    result = apply(
        call,
        target,
        lambda current, exists: rendered,
        tool="note_from_template",
        dry_run=args["dry_run"],
        taken="pass another path",
    )
    return {**result.response(), "template": source}


def _templates(vault: Vault) -> dict[str, Any]:
    if not (vault.root / templates.TEMPLATE_DIR).is_dir():
        return {
            "vault": vault.name,
            "templates": [],
            "message": "this vault has no templates/ folder; create notes with note_create",
        }
    names = sorted(note.stem(e.rel) for e in vault.notes(templates.TEMPLATE_DIR))
    return {"vault": vault.name, "templates": names}


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

    result = apply(call, rel, transform, tool="daily_note", dry_run=args["dry_run"])
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
            return apply(
                call, rel, lambda current, exists: content, tool="inbox_capture", taken=""
            ).response()
        except NoteExistsError:
            continue
    raise ArgumentError("too many captures with this title this minute; pass another title")


def daily_range(call: Call) -> dict[str, Any]:
    args = call.args
    now = today(call.vault)
    end = grammar.parse_day(args["to"], now, "to") if args["to"] else now
    if not args["from"]:
        start = end - dt.timedelta(days=6)
    elif grammar.is_span(args["from"]):
        start = end - grammar.parse_span(args["from"])
    else:
        start = grammar.parse_day(args["from"], now, "from")
    start, end = min(start, end), max(start, end)
    if (end - start).days + 1 > 366:
        raise ArgumentError(
            f"the range {start}..{end} is longer than 366 days; ask for a shorter one"
        )
    days = [_day(call, start + dt.timedelta(days=n)) for n in range((end - start).days + 1)]
    shown = days if args["empty"] else [d for d in days if d["exists"]]
    return {
        "vault": call.vault.name,
        "from": start.isoformat(),
        "to": end.isoformat(),
        "days_with_notes": sum(1 for d in days if d["exists"]),
        "days": shown,
    }


def _day(call: Call, day: dt.date) -> dict[str, Any]:
    rel = templates.daily_path(day)
    note = read_if_exists(call.vault, rel)
    found: dict[str, Any] = {"date": day.isoformat(), "exists": note is not None, "path": rel}
    if note is not None:
        found.update(content=note.body, content_hash=note.content_hash)
    return found


TOOLS = [
    Tool(
        "note_from_template",
        "Note from a template",
        "Create a note from one of the vault's templates (templates/*.md), filling in "
        "{{title}}, {{date}}, {{time}}, {{datetime}}, {{year}}, {{month}}, {{day}} and "
        "{{slug}}. Call it without `template` to list the templates.",
        {
            "template": text("Template name, e.g. meeting (omit to list the templates)."),
            "path": text("Where to write (default inbox/YYYY-MM-DD-<slug>.md)."),
            "title": text("Title (default: the template name)."),
            "tags": strings("Tags to add to the template's own."),
            "dry_run": flag(DRY, False),
        },
        result_schema(
            {"vault": STR}, {**write_schema()["properties"], "templates": STRS, "template": STR}
        ),
        "write",
        ADD,
        note_from_template,
    ),
    Tool(
        "daily_note",
        "Daily note",
        "Today's (or a given day's) journal note at journal/YYYY/YYYY-MM-DD.md. Without "
        "`append` it returns the note (creating it if missing); with `append` it adds the "
        "text under a heading (default: the current time HH:MM). The place for a log of "
        "what happened; for loose ideas use inbox_capture.",
        {
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
        result_schema(
            {"vault": STR, "path": STR, "date": STR},
            {**write_schema()["properties"], "content": STR, "existed": BOOL},
        ),
        "add",
        ADD,
        daily_note,
        blind=("vault", "path", "date", "created", "existed", "dry_run"),
    ),
    Tool(
        "inbox_capture",
        "Capture to inbox",
        "Save a thought, link or snippet immediately as a new note in inbox/, to be sorted "
        "later. Never fails on a name clash and has no dry run: it exists so that nothing "
        "gets lost.",
        {
            "text": text("What to capture (Markdown).", required=True, trim=False),
            "title": text("Title (default: the first line, up to 60 characters)."),
            "tags": strings("Tags besides inbox, which is always added."),
            "source": text("Where it came from (a URL, a chat), kept in the frontmatter."),
        },
        write_schema(),
        "add",
        ADD,
        inbox_capture,
        blind=("vault", "path", "bytes", "content_hash", "created"),
    ),
    Tool(
        "daily_range",
        "Read daily notes",
        "The daily notes (journal/YYYY/YYYY-MM-DD.md) of a range of days with their text: a "
        "week in review, what happened since a date. To write today's note use daily_note.",
        {
            "from": text(
                "First day: YYYY-MM-DD, today, or a span back from `to` like 7d or 2w "
                "(default six days before `to`)."
            ),
            "to": text("Last day: YYYY-MM-DD or today (default today)."),
            "empty": flag("Also list days without a note.", False),
        },
        result_schema(
            {
                "vault": STR,
                "from": STR,
                "to": STR,
                "days_with_notes": INT,
                "days": arr(
                    obj(
                        {"date": STR, "exists": BOOL, "path": STR},
                        {"content": STR, "content_hash": STR},
                    )
                ),
            }
        ),
        "read",
        READS,
        daily_range,
    ),
]
