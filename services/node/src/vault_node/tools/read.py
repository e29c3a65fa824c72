"""Tools that read one note or file and change nothing (docs/design.md#tools): a note, its outline,
its links in and out, the notes related to it, an attachment, the daily notes of a range.

They read from disk (`note_read`, `attachment_read`, `daily_range`) or ask the index about
one note (`note_backlinks`, `note_related`). Looking across a vault is `tools/find`.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from vault_core import templates
from vault_core.search import answers
from vault_node import grammar
from vault_node.context import Call
from vault_node.errors import ArgumentError
from vault_node.tools.attachments import IMAGE_BYTES, read_attachment
from vault_node.tools.base import READS, flag, integer, text, tool
from vault_node.tools.common import (
    FRONTMATTER,
    HEADING,
    LINK,
    LINKED,
    NOTE_PATH,
    TASK,
    any_path,
    headings,
    links,
    note_head,
    read_if_exists,
    section_text,
    tasks,
    today,
)
from vault_node.tools.shape import BOOL, INT, NUM, STR, STRS, arr, obj, result_schema

PATH = NOTE_PATH


NOTE_HEAD = {
    "vault": STR,
    "path": STR,
    "title": STR,
    "content_hash": STR,
    "bytes": INT,
    "modified": STR,
    "frontmatter": FRONTMATTER,
}


@tool(
    title="Read a note",
    description=(
        "Read a note's text (without frontmatter), content_hash, frontmatter and structure; "
        "`heading` reads one section. Keep the content_hash: change tools take it so you "
        "edit what you read. For a long note call note_outline first."
    ),
    kind="read",
    hints=READS,
    params={
        "path": text(PATH, required=True),
        "heading": text(
            "Read only the section under this heading (exact, then "
            "case-insensitive, then prefix match), e.g. Open questions."
        ),
        "with_metadata": flag("Also return headings, tags, links and tasks (default true).", True),
    },
    output=result_schema(
        {**NOTE_HEAD, "content": STR},
        {
            "headings": arr(HEADING),
            "tags": STRS,
            "links": arr(LINK),
            "tasks": arr(TASK),
            "frontmatter_error": STR,
        },
    ),
)
def note_read(call: Call) -> dict[str, Any]:
    note = call.vault.read_note(call.args["path"])
    result = {"vault": call.vault.name, **note_head(note)}
    result["content"] = (
        section_text(note, call.args["heading"]) if call.args["heading"] else note.body
    )
    if call.args["with_metadata"]:
        result.update(headings=headings(note), tags=note.tags, links=links(note))
        if note.tasks:
            result["tasks"] = tasks(note)
    if note.frontmatter_error:
        result["frontmatter_error"] = note.frontmatter_error
    return result


@tool(
    title="Outline a note",
    description=(
        "The shape of a note without its text: headings, tags, links in and out, open tasks, "
        "size and hash. Use it before reading a long note, then note_read with a heading."
    ),
    kind="read",
    hints=READS,
    params={"path": text(PATH, required=True)},
    output=result_schema(
        {
            **NOTE_HEAD,
            "words": INT,
            "headings": arr(HEADING),
            "tags": STRS,
            "outgoing": STRS,
            "incoming": STRS,
            "open_tasks": INT,
        }
    ),
)
def note_outline(call: Call) -> dict[str, Any]:
    assert call.opened is not None
    note = call.vault.read_note(call.args["path"])
    graph = answers.backlinks(call.opened.index, note.path)
    return {
        "vault": call.vault.name,
        **note_head(note),
        "words": note.words,
        "headings": headings(note),
        "tags": note.tags,
        "outgoing": list(dict.fromkeys(link["path"] for link in graph["outgoing"])),
        "incoming": list(dict.fromkeys(link["path"] for link in graph["incoming"])),
        "open_tasks": sum(1 for t in note.tasks if not t.done),
    }


@tool(
    title="Links of a note",
    description=(
        "Which notes link to this one and where it links to, broken links included. From "
        "the index: the note need not exist (who links to a note never written). Use "
        "before moving, merging or deleting."
    ),
    kind="read",
    hints=READS,
    params={"path": text(PATH + " An attachment path works too.", required=True)},
    output=result_schema(
        {"vault": STR, "path": STR, "incoming": arr(LINKED), "outgoing": arr(LINKED)},
        {"broken": arr(obj({"target": STR, "anchor": STR})), "hint": STR},
    ),
)
def note_backlinks(call: Call) -> dict[str, Any]:
    assert call.opened is not None
    rel = any_path(call.vault, call.args["path"]).rel
    call.opened.fresh()
    graph = answers.backlinks(call.opened.index, rel)
    result: dict[str, Any] = {
        "vault": call.vault.name,
        "path": rel,
        "incoming": graph["incoming"],
        "outgoing": graph["outgoing"],
    }
    if graph["broken"]:
        result["broken"] = graph["broken"]
        result["hint"] = (
            f"{len(graph['broken'])} link(s) of this note point nowhere; create the missing "
            "notes with note_create or fix the links with note_edit"
        )
    return result


@tool(
    title="Related notes",
    description=(
        "Notes related to this one by rare shared tags, direct links, shared link targets "
        "and closeness in meaning, best first. Use it to find what to link from a note or "
        "what to read next."
    ),
    kind="read",
    hints=READS,
    params={
        "path": text(PATH, required=True),
        "limit": integer(
            "How many related notes (default 10, clamped to 1-100).", 10, clamp=(1, 100)
        ),
    },
    output=result_schema(
        {
            "vault": STR,
            "path": STR,
            "related": arr(
                obj(
                    {
                        "path": STR,
                        "title": STR,
                        "score": NUM,
                        "tags": STRS,
                        "modified": STR,
                        "bytes": INT,
                    }
                )
            ),
        }
    ),
)
def note_related(call: Call) -> dict[str, Any]:
    assert call.opened is not None
    note = call.vault.read_note(call.args["path"])
    vectors = call.opened.vectors
    near = vectors.similar(note.path, 50) if vectors is not None else []
    related = answers.related(
        call.opened.index, note.path, call.args["limit"], [(m.path, m.score) for m in near]
    )
    return {"vault": call.vault.name, "path": note.path, "related": [vars(r) for r in related]}


@tool(
    title="Read daily notes",
    description=(
        "The daily notes (journal/YYYY/YYYY-MM-DD.md) of a range of days with their text: a "
        "week in review, what happened since a date. To write today's note use daily_note."
    ),
    kind="read",
    hints=READS,
    params={
        "from": text(
            "First day: YYYY-MM-DD, today, or a span back from `to` like 7d or 2w "
            "(default six days before `to`)."
        ),
        "to": text("Last day: YYYY-MM-DD or today (default today)."),
        "empty": flag("Also list days without a note.", False),
    },
    output=result_schema(
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
)
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


@tool(
    title="Read an attachment",
    description=(
        "Look at an attachment: an image as an image (downscaled), a PDF as text with page "
        "numbers, a text file (csv, json, …) as text, audio as type, size and date. Paths "
        "from attachment_list; for notes use note_read."
    ),
    kind="read",
    hints=READS,
    params={
        "path": text("Attachment path, e.g. attachments/diagram.png.", required=True),
        "first_page": integer("PDF: first page to read (from 1).", 1, clamp=(1, 10**6)),
        "pages": integer("PDF: how many pages (1-50).", 20, clamp=(1, 50)),
    },
    output=result_schema(
        {"vault": STR, "path": STR, "kind": STR, "mime": STR, "bytes": INT, "modified": STR},
        {
            "width": INT,
            "height": INT,
            "shown": STR,
            "page_count": INT,
            "pages": arr(obj({"page": INT, "text": STR})),
            "next_page": INT,
            "text": STR,
            "hint": STR,
        },
    ),
)
def attachment_read(call: Call) -> dict[str, Any]:
    args = call.args
    budget = min(IMAGE_BYTES, call.context.config.max_response_bytes * 3 // 4 - 4096)
    read = read_attachment(call.vault, args["path"], args["first_page"], args["pages"], budget)
    if read.image is not None:
        call.content.append(read.image)
    return {**read.facts, "pages": read.pages} if read.facts["kind"] == "pdf" else read.facts
