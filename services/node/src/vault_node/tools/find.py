"""Tools that look across a vault and change nothing (docs/design.md#tools): the vaults, their
counts and review, listing and searching notes, grep, tags, tasks, attachments.

Most answer from the index; `note_list` and `vault_grep` walk the disk. Reading one note or
file is `tools/read`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from vault_core import NOTE_LIMIT, VaultError, deadline, layouts, scope, search
from vault_core.search import answers, hybrid, passages
from vault_node import grammar
from vault_node.context import Call
from vault_node.errors import ArgumentError
from vault_node.tools.base import READS, choice, flag, integer, strings, text, tool
from vault_node.tools.common import (
    check_prefix,
    modified,
)
from vault_node.tools.shape import BOOL, INT, NUM, STR, STRS, arr, obj, result_schema

VAULT_ROW = obj(
    {"name": STR, "is_default": BOOL},
    {
        "notes": INT,
        "attachments": INT,
        "words": INT,
        "bytes": INT,
        "last_modified": STR,
        "versioned": BOOL,
        "has_instructions": BOOL,
        "opening": BOOL,
        "remote": BOOL,
    },
)
STATS = obj(
    {
        "notes": INT,
        "attachments": INT,
        "words": INT,
        "bytes": INT,
        "tags": INT,
        "links": INT,
        "broken_links": INT,
        "orphans": INT,
        "open_tasks": INT,
        "last_modified": STR,
        "top_tags": STRS,
        "skipped": INT,
    }
)
SKIPPED = obj({"path": STR, "reason": STR})
SKIPPED_SHOWN = 100  # vault_stats lists this many skipped files; `stats.skipped` counts all


HIT = obj(
    {
        "path": STR,
        "title": STR,
        "score": NUM,
        "snippet": STR,
        "tags": STRS,
        "modified": STR,
        "bytes": INT,
        "matched": STRS,
        "section": STR,
        "kind": STR,
    }
)

TIME = obj(
    {"phrase": STR, "applied": BOOL, "dates": STR},
    {"modified_after": STR, "modified_before": STR},
)
EMBEDDING = obj({"model": STR, "embedded": INT, "total": INT, "done": BOOL})

PASSAGE = obj(
    {
        "path": STR,
        "title": STR,
        "section": STR,
        "text": STR,
        "tokens": INT,
        "why": STR,
        "cut": STR,
    }
)

ENTRY = obj({"path": STR, "bytes": INT, "modified": STR})


REVIEWED = obj({"path": STR, "title": STR, "reason": STR, "detail": STR})
LIMIT_OFFSET = "Skip this many results first, to page (default 0)."


@tool(
    title="List vaults",
    description=(
        "List the vaults you can use: note counts, size, last change, versioning, "
        "instructions, the default. Call it first when you do not know which vault holds "
        "what; other tools take the name as `vault`. A vault still opening shows "
        "opening: true; calls to it say to retry; remote: true, on another node."
    ),
    kind="read",
    hints=READS,
    params={},
    output=result_schema({"vaults": arr(VAULT_ROW), "default_vault": STR}),
    uses_vault=False,
)
def vault_list(call: Call) -> dict[str, Any]:
    ctx = call.context
    rows = []
    for name in ctx.library.names():
        if not ctx.ticket.allows_vault(name):
            continue
        opened = ctx.library.ready(name)
        if opened is None:  # its first index is being built: listed, not waited for
            rows.append(
                {"name": name, "is_default": name == ctx.config.default_vault, "opening": True}
            )
            continue
        with scope.applied(ctx.ticket.reach(name)):  # counts of what the caller may see
            stats = answers.stats(opened.index)
        rows.append(
            {
                "name": name,
                "notes": stats["notes"],
                "attachments": stats["attachments"],
                "words": stats["words"],
                "bytes": stats["bytes"],
                "last_modified": stats["last_modified"],
                "is_default": name == ctx.config.default_vault,
                "versioned": opened.git is not None,
                "has_instructions": bool(layouts.read_instructions(opened.vault.root).strip()),
            }
        )
    default = ctx.config.default_vault
    rows += [  # a call naming one is forwarded there (docs/design.md#one-address)
        {"name": name, "is_default": name == default, "remote": True}
        for name in ctx.vaults_elsewhere()
    ]
    rows.sort(key=lambda row: str(row["name"]))
    return {"vaults": rows, "default_vault": default}


@tool(
    title="Vault statistics",
    description=(
        "Counts for one vault: notes, attachments, words, tags, links, broken links, orphans, "
        "open tasks, last change, top tags, and the files the node skips with a reason code. "
        "Cheap. For a to-do list of problems use vault_review."
    ),
    kind="read",
    hints=READS,
    params={},
    output=result_schema(
        {"vault": STR, "stats": STATS, "skipped": arr(SKIPPED)}, {"embedding": EMBEDDING}
    ),
)
def vault_stats(call: Call) -> dict[str, Any]:
    assert call.opened is not None
    index = call.opened.index
    skipped = answers.skipped(index, SKIPPED_SHOWN)
    found = {"vault": call.vault.name, "stats": answers.stats(index), "skipped": skipped}
    if call.opened.embedding is not None and scope.current() is None:
        # Progress counts every note of the vault: not shown to a caller with path rules.
        found["embedding"] = call.opened.embedding.progress().as_dict()
    return found


@tool(
    title="List files",
    description=(
        "List files (notes and attachments) under a folder, sorted and paged. Use it to browse "
        "a folder or find a path by name pattern; to find notes by what they say, use "
        "note_search instead."
    ),
    kind="read",
    hints=READS,
    params={
        "prefix": text("Folder to list, e.g. wiki or projects/alpha; omit for the whole vault."),
        "glob": text(
            "Path pattern; * and ? stay within one folder, e.g. wiki/*.md or journal/2026/*.md."
        ),
        "sort": choice(
            "Order: modified (newest first, default), path or size (largest first).",
            ("modified", "path", "size"),
            "modified",
        ),
        "limit": integer(
            "How many entries to return (default 100, clamped to 1-500).", 100, clamp=(1, 500)
        ),
        "offset": integer(LIMIT_OFFSET, 0, clamp=(0, 10**9)),
    },
    output=result_schema({"vault": STR, "total": INT, "returned": INT, "entries": arr(ENTRY)}),
)
def note_list(call: Call) -> dict[str, Any]:
    args = call.args
    prefix = check_prefix(call.vault, args["prefix"])
    pattern = grammar.glob_regex(args["glob"]) if args["glob"] else None
    walked = deadline.checked(call.vault.walk(prefix))
    entries = [e for e in walked if pattern is None or pattern.fullmatch(e.rel)]
    if args["sort"] == "path":
        entries.sort(key=lambda e: e.rel)
    elif args["sort"] == "size":
        entries.sort(key=lambda e: (-e.size, e.rel))
    else:
        entries.sort(key=lambda e: (-e.mtime_ns, e.rel))
    page = entries[args["offset"] : args["offset"] + args["limit"]]
    return {
        "vault": call.vault.name,
        "total": len(entries),
        "returned": len(page),
        "entries": [
            {"path": e.rel, "bytes": e.size, "modified": modified(e.mtime_ns)} for e in page
        ],
    }


@tool(
    title="Search notes",
    description=(
        "Search titles and bodies in plain words or a question, any language (ranked; word "
        "forms and CJK match), filtered by tags, folder, path or time. The first "
        "tool for finding anything; search before you create a note. Without a query: the "
        "newest notes matching the filters. For exact strings or regexes use vault_grep."
    ),
    kind="read",
    hints=READS,
    params={
        "query": text(
            'What to find, e.g. how do I rotate the API key? ("quoted words" together, '
            "word* a prefix; since last week and such filter by date); empty to filter only."
        ),
        "mode": choice(
            "hybrid (default once vectors are made): words and meaning; keyword: words "
            "only; semantic: meaning only.",
            hybrid.MODES,
        ),
        "syntax": choice(
            "natural (default): any words, never an error; fts: SQLite FTS5 (AND, OR, NOT, "
            "NEAR, column:; all words must occur).",
            search.SYNTAXES,
            "natural",
        ),
        "tags": strings(
            'Only notes with all these tags (or subtags), e.g. ["project", "ops"] or "project,ops".'
        ),
        "prefix": text("Only notes under this folder, e.g. wiki."),
        "glob": text("Only paths matching this pattern, e.g. wiki/*.md."),
        "modified_after": text(
            "Only notes changed since (frontmatter updated, else the file): YYYY-MM-DD, "
            "YYYY-MM, yesterday, last week, in March, 7d, 12h."
        ),
        "modified_before": text("Only notes changed before this (same forms)."),
        "limit": integer(
            "How many hits (default 25; values <= 0 or > 200 mean 25).", 25, reset=(1, 200)
        ),
        "offset": integer(LIMIT_OFFSET, 0, clamp=(0, 10**9)),
        "max_tokens": integer(
            "Also the best passages (note, section, why) in about this many tokens (default 0:"
            " none).",
            0,
            clamp=(0, 100_000),
        ),
    },
    output=result_schema(
        {"vault": STR, "mode": STR, "total": INT, "returned": INT, "hits": arr(HIT)},
        {"hint": STR, "embedding": EMBEDDING, "passages": arr(PASSAGE), "time": TIME},
    ),
)
def note_search(call: Call) -> dict[str, Any]:
    args = call.args
    assert call.opened is not None
    if args["glob"]:
        grammar.glob_regex(args["glob"])  # refuse a malformed pattern with a clear message
    now = call.vault.now()
    after, before = (
        grammar.parse_time(args[name], now, name) if args[name] else None
        for name in ("modified_after", "modified_before")
    )
    query = args["query"] or ""
    asked = None
    if after is None and before is None and args["syntax"] == "natural":
        asked = grammar.question_time(query, now)
    if asked is not None:
        query, after, before = asked.rest, asked.after, asked.before
    filters = search.Filters(
        tags=args["tags"] or (),
        prefix=check_prefix(call.vault, args["prefix"]),
        glob=args["glob"] or "",
        modified_after_ns=_ns(after),
        modified_before_ns=_ns(before),
        dated_by=asked.dated_by if asked is not None else "updated",
    )
    call.opened.fresh()
    answer = _find(call, query, filters)
    applied = asked is not None
    if asked is not None and asked.rest and answer.results.total == 0:
        # Nothing changed in that time matches: the words may name the subject, not a time.
        applied, query = False, args["query"] or ""
        answer = _find(call, query, replace(filters, modified_after_ns=None,
                                            modified_before_ns=None))  # fmt: skip
    found = answer.results
    result: dict[str, Any] = {
        "vault": call.vault.name,
        "mode": answer.mode,
        "total": found.total,
        "returned": len(found.hits),
        "hits": [vars(hit) for hit in found.hits],
    }
    if answer.embedding is not None:
        result["embedding"] = answer.embedding
    elif call.opened.vectors is not call.opened.embedding and call.opened.embedding is not None:
        # Ranked with the bundled model while the configured one is being made: how far.
        result["embedding"] = call.opened.embedding.progress().as_dict()
    if asked is not None:
        result["time"] = _time(asked, applied=applied)
    if args["max_tokens"] and query:
        chosen = passages.best(found.hits, query, args["max_tokens"], _body(call))
        result["passages"] = [vars(passage) for passage in chosen]
    hint = _hint(found.total, asked, applied=applied, filters=filters)
    if hint:
        result["hint"] = hint
    return result


def _hint(
    total: int, asked: grammar.QuestionTime | None, *, applied: bool, filters: search.Filters
) -> str:
    """What to tell of an empty answer, or of one found only without the question's time."""
    if asked is not None and not applied and total:
        return (
            f"nothing {_DONE[asked.dated_by]} {asked.phrase!r} matches; these hits are from "
            "any time (pass modified_after or modified_before to set the time yourself)"
        )
    if total:
        return ""
    if asked is not None and not asked.rest:
        others = filters.tags or filters.prefix or filters.glob
        return f"no note {_DONE[asked.dated_by]} {asked.phrase!r}" + (
            " under these filters" if others else ""
        )
    return (
        "nothing found; try fewer or other words, drop a filter, or use vault_grep for "
        "exact text and regular expressions"
    )


def _find(call: Call, query: str, filters: search.Filters) -> hybrid.Found:
    assert call.opened is not None
    args = call.args
    return hybrid.find(
        call.opened.index,
        call.opened.vectors,
        query,
        filters,
        limit=args["limit"],
        offset=args["offset"],
        mode=args["mode"],
        syntax=args["syntax"],
    )


_DONE = {"updated": "changed", "created": "created"}


def _ns(moment: dt.datetime | None) -> int | None:
    """A moment in ns since the epoch; SQLite integers end at 2**63-1 (year 2262), so a
    later date simply finds nothing new."""
    return None if moment is None else min(int(moment.timestamp() * 1_000_000_000), 2**63 - 1)


def _time(asked: grammar.QuestionTime, *, applied: bool) -> dict[str, Any]:
    """What `time` tells of a time read from the question."""
    told: dict[str, Any] = {"phrase": asked.phrase, "applied": applied, "dates": asked.dated_by}
    for name, moment in (("modified_after", asked.after), ("modified_before", asked.before)):
        if moment is not None:
            told[name] = moment.isoformat()
    return told


def _body(call: Call) -> Callable[[str], str | None]:
    def body(path: str) -> str | None:
        try:
            return call.vault.read_note(path).body
        except VaultError:  # gone, or changed into what is no note, since it was indexed
            return None

    return body


@tool(
    title="Grep notes",
    description=(
        "Scan every note for a regular expression; matching lines with context. For exact "
        "strings, code, URLs or patterns; for topics and words prefer note_search (ranked, "
        "faster)."
    ),
    kind="read",
    hints=READS,
    params={
        "pattern": text(
            "RE2 (Go) regular expression, no backreferences or lookaround, "
            "e.g. TODO|FIXME or \\bv[0-9]+\\.[0-9]+\\b.",
            required=True,
            trim=False,
        ),
        "case_sensitive": flag("Match case exactly (default false: case is ignored).", False),
        "prefix": text("Only notes under this folder, e.g. wiki."),
        "context": integer(
            "Lines of context around each match (default 1, clamped to 0-5).", 1, clamp=(0, 5)
        ),
        "limit": integer(
            "Stop after this many matches (default 50, clamped to 1-300).", 50, clamp=(1, 300)
        ),
        "include_content": flag(
            "Ignored (compatibility): the line is always returned.",
            False,
        ),
    },
    output=result_schema(
        {
            "vault": STR,
            "matches": arr(obj({"path": STR, "line": INT, "text": STR, "context": STRS})),
            "notes_scanned": INT,
            "truncated": BOOL,
        }
    ),
)
def vault_grep(call: Call) -> dict[str, Any]:
    args = call.args
    regex = grammar.compile_regex(args["pattern"], case_sensitive=args["case_sensitive"])
    span, limit = args["context"], args["limit"]
    matches: list[dict[str, Any]] = []
    scanned = 0
    for entry in deadline.checked(call.vault.notes(check_prefix(call.vault, args["prefix"]))):
        if entry.size > NOTE_LIMIT:
            continue
        try:
            lines = call.vault.read_note(entry.rel).text.split("\n")
        except VaultError:
            continue  # unreadable (not UTF-8, vanished): grep skips it like the index does
        scanned += 1
        for number, line in enumerate(lines):
            if regex.search(line) is None:
                continue
            if len(matches) >= limit:
                return _grep_result(call, matches, scanned, truncated=True)
            around = [
                f"{n + 1}: {lines[n][:500]}"
                for n in range(max(0, number - span), min(len(lines), number + span + 1))
                if n != number
            ]
            matches.append(
                {"path": entry.rel, "line": number + 1, "text": line[:1000], "context": around}
            )
    return _grep_result(call, matches, scanned, truncated=False)


def _grep_result(
    call: Call, matches: list[dict[str, Any]], scanned: int, *, truncated: bool
) -> dict[str, Any]:
    return {
        "vault": call.vault.name,
        "matches": matches,
        "notes_scanned": scanned,
        "truncated": truncated,
    }


@tool(
    title="List tags",
    description=(
        "Every tag with the number of notes carrying it, most used first (frontmatter and "
        "inline #tags merged, lowercase). Check it before inventing a new tag."
    ),
    kind="read",
    hints=READS,
    params={
        "prefix": text("Only tags starting with this, e.g. project/ (a leading # is ignored)."),
        "limit": integer("How many tags (default 200, clamped to 1-1000).", 200, clamp=(1, 1000)),
    },
    output=result_schema(
        {"vault": STR, "tags": arr(obj({"tag": STR, "notes": INT})), "count": INT}
    ),
)
def tag_list(call: Call) -> dict[str, Any]:
    assert call.opened is not None
    found = answers.tag_list(call.opened.index, call.args["prefix"] or "", call.args["limit"])
    return {"vault": call.vault.name, "tags": found, "count": len(found)}


@tool(
    title="List tasks",
    description=(
        "Markdown checkboxes (- [ ] …) across the vault, sorted by path and line. The line "
        "numbers are what task_toggle takes."
    ),
    kind="read",
    hints=READS,
    params={
        "include_done": flag("Also list checked tasks (default false).", False),
        "prefix": text("Only tasks in notes under this folder, e.g. projects."),
        "contains": text("Only tasks whose text contains this (case-insensitive)."),
        "limit": integer(
            "How many tasks (default 100; values <= 0 or > 500 mean 100).", 100, reset=(1, 500)
        ),
    },
    output=result_schema(
        {
            "vault": STR,
            "tasks": arr(
                obj({"path": STR, "line": INT, "text": STR, "done": BOOL, "note_title": STR})
            ),
            "count": INT,
        }
    ),
)
def task_list(call: Call) -> dict[str, Any]:
    assert call.opened is not None
    args = call.args
    found = answers.tasks(
        call.opened.index,
        include_done=args["include_done"],
        prefix=check_prefix(call.vault, args["prefix"]),
        contains=args["contains"] or "",
        limit=args["limit"],
    )
    return {"vault": call.vault.name, "tasks": found, "count": len(found)}


@tool(
    title="List attachments",
    description=(
        "Attachments (images, PDFs, …) under a folder, with how many notes link to each. "
        "Use it to find unused attachments or the path to embed."
    ),
    kind="read",
    hints=READS,
    params={
        "prefix": text(
            'Folder to list (default attachments; pass "" for the whole vault).',
            default="attachments",
        ),
        "limit": integer("How many (default 100, clamped to 1-500).", 100, clamp=(1, 500)),
    },
    output=result_schema(
        {
            "vault": STR,
            "attachments": arr(
                obj({"path": STR, "bytes": INT, "modified": STR, "references": INT})
            ),
            "count": INT,
        }
    ),
)
def attachment_list(call: Call) -> dict[str, Any]:
    assert call.opened is not None
    prefix = check_prefix(call.vault, call.args["prefix"])
    found = answers.attachments(call.opened.index, prefix, call.args["limit"])
    return {"vault": call.vault.name, "attachments": found, "count": len(found)}


@tool(
    title="Review a vault",
    description=(
        "A maintenance to-do list: stubs, orphans, broken links, stale notes, open tasks and "
        "skipped files (reason code, the fix in detail): what to merge, link, update or finish."
    ),
    kind="read",
    hints=READS,
    params={
        "stale_after": text(
            "Age after which a note is stale, as a span: 365d, 12w, 6m, 1y.",
            default="365d",
        ),
        "limit": integer("Items per category (1-100).", 15, clamp=(1, 100)),
        "only": choice("Just one category.", answers.REVIEW_CATEGORIES),
    },
    output=result_schema(
        {
            "vault": STR,
            "stats": STATS,
            "items": {"type": "object", "additionalProperties": arr(REVIEWED)},
            "count": INT,
        }
    ),
)
def vault_review(call: Call) -> dict[str, Any]:
    args = call.args
    assert call.opened is not None
    if not grammar.is_span(args["stale_after"]):
        raise ArgumentError(
            f"stale_after {args['stale_after']!r} is not a span; use e.g. 365d, 12w, 6m or 1y"
        )
    cutoff = call.vault.now() - grammar.parse_span(args["stale_after"])
    call.opened.fresh()
    items = answers.review(
        call.opened.index,
        stale_before_ns=int(cutoff.timestamp() * 1e9),
        limit=args["limit"],
        only=args["only"],
    )
    return {
        "vault": call.vault.name,
        "stats": answers.stats(call.opened.index),
        "items": items,
        "count": sum(len(found) for found in items.values()),
    }
