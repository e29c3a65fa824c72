"""MCP prompts: a few starting points a person picks in their client (a slash command, a menu),
each gathered through the very tool calls an agent would make, so every permission, vault and
audit rule of the tools holds for them too. A token without `read` is offered none.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from vault_node import dispatch
from vault_node.context import Context
from vault_node.errors import INVALID_PARAMS, InsufficientPermissionError, ProtocolError
from vault_node.tools.base import suggest
from vault_node.uris import uri_of

NOTE_TEXT = 8_000  # characters of each note a prompt carries; the model reads on with note_read
Build = Callable[[Context, dict[str, str]], Awaitable[list[dict[str, Any]]]]


@dataclass(frozen=True)
class Argument:
    name: str
    description: str
    required: bool = False


@dataclass(frozen=True)
class Prompt:
    name: str
    title: str
    description: str
    arguments: tuple[Argument, ...]
    build: Build

    def listed(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "arguments": [
                {"name": a.name, "description": a.description, "required": a.required}
                for a in self.arguments
            ],
        }


VAULT = Argument("vault", "Vault name (default: the node's default vault).")


async def _tool(ctx: Context, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One tool call's structured result; its error becomes the prompt's error."""
    result = await dispatch.call_tool(ctx, name, {k: v for k, v in arguments.items() if v})
    if result["isError"]:
        code = result["_meta"]["secondbrain/error"]["code"]
        raise ProtocolError(INVALID_PARAMS, code, result["content"][0]["text"])
    found: dict[str, Any] = result["structuredContent"]
    return found


def _text(text: str) -> dict[str, Any]:
    return {"role": "user", "content": {"type": "text", "text": text}}


def _embedded(vault: str, path: str, text: str) -> dict[str, Any]:
    if len(text) > NOTE_TEXT:
        text = text[:NOTE_TEXT] + "\n…[cut: read the rest with note_read]"
    resource = {"uri": uri_of(vault, path), "mimeType": "text/markdown", "text": text}
    return {"role": "user", "content": {"type": "resource", "resource": resource}}


def _hit_lines(hits: list[dict[str, Any]]) -> str:
    return "\n".join(f"- {h['path']} — {h['title']}" for h in hits) or "- (none)"


async def daily_review(ctx: Context, args: dict[str, str]) -> list[dict[str, Any]]:
    day = args.get("date") or "today"
    vault = args.get("vault", "")
    if day != "today" and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", day):
        raise ProtocolError(
            INVALID_PARAMS,
            "invalid_params",
            f"argument 'date' must be YYYY-MM-DD or today, got {day[:40]!r}",
        )
    journal = await _tool(ctx, "daily_range", {"from": day, "to": day, "vault": vault})
    date, name = journal["from"], journal["vault"]
    changed = await _tool(ctx, "note_search", {"modified_after": date, "limit": 25, "vault": vault})
    open_tasks = await _tool(ctx, "task_list", {"limit": 50, "vault": vault})
    tasks = "\n".join(f"- [ ] {t['text']} ({t['path']}:{t['line']})" for t in open_tasks["tasks"])
    messages = [
        _text(
            f"Review my day, {date}, in vault {name}. Summarise what happened and what I "
            "worked on, list what is still open and suggest what to carry over to tomorrow; "
            "offer to append the review to the daily note with daily_note (append).\n\n"
            f"Notes changed since {date}:\n{_hit_lines(changed['hits'])}\n\n"
            f"Open tasks:\n{tasks or '- (none)'}"
        )
    ]
    messages += [
        _embedded(name, d["path"], d["content"]) for d in journal["days"] if d.get("content")
    ]
    return messages


async def meeting_capture(ctx: Context, args: dict[str, str]) -> list[dict[str, Any]]:
    title, vault = args["title"], args.get("vault", "")
    related = await _tool(ctx, "note_search", {"query": title, "limit": 5, "vault": vault})
    attendees = f"Attendees: {args['attendees']}\n" if args.get("attendees") else ""
    return [
        _text(
            f"Capture the meeting “{title}” into the inbox of vault {related['vault']}.\n"
            "Call inbox_capture once with title 'Meeting: "
            f"{title}' and tags meeting, and as text: the attendees, a short summary, the "
            "decisions, and the action items as Markdown tasks (- [ ] who: what), then a "
            "Related section with [[wiki links]] to the notes below that it concerns. "
            "Afterwards link the new note from the most related note with note_section_edit."
            f"\n\nPossibly related notes:\n{_hit_lines(related['hits'])}\n\n"
            f"{attendees}Raw notes:\n{args['notes']}"
        )
    ]


async def what_do_i_know(ctx: Context, args: dict[str, str]) -> list[dict[str, Any]]:
    topic, vault = args["topic"], args.get("vault", "")
    found = await _tool(ctx, "note_search", {"query": topic, "limit": 8, "vault": vault})
    name = found["vault"]
    notes = [
        await _tool(ctx, "note_read", {"path": hit["path"], "with_metadata": False, "vault": name})
        for hit in found["hits"][:3]
    ]
    messages = [
        _text(
            f"What do I know about “{topic}”? Answer from the notes of vault {name} below, "
            "citing each claim's note path, and say plainly what the notes do not cover. "
            "For more, read the other hits with note_read or follow note_related.\n\n"
            f"Search hits:\n{_hit_lines(found['hits'])}"
        )
    ]
    return messages + [_embedded(name, note["path"], note["content"]) for note in notes]


PROMPTS: dict[str, Prompt] = {
    prompt.name: prompt
    for prompt in (
        Prompt(
            "daily_review",
            "Daily review",
            "Review a day: its daily note, the notes changed since and the open tasks.",
            (Argument("date", "The day as YYYY-MM-DD (default today)."), VAULT),
            daily_review,
        ),
        Prompt(
            "meeting_capture",
            "Capture a meeting",
            "Turn raw meeting notes into an inbox note with decisions, tasks and links to "
            "related notes.",
            (
                Argument("title", "What the meeting was about.", required=True),
                Argument("notes", "The raw notes, as typed during the meeting.", required=True),
                Argument("attendees", "Who took part, comma-separated."),
                VAULT,
            ),
            meeting_capture,
        ),
        Prompt(
            "what_do_i_know",
            "What do I know about…",
            "Search the vault for a topic and read the best notes, to answer from them.",
            (Argument("topic", "The topic or question.", required=True), VAULT),
            what_do_i_know,
        ),
    )
}


def listing(ctx: Context) -> dict[str, Any]:
    """`prompts/list`: all of them for a token that reads, none for a blind one."""
    shown = [prompt.listed() for prompt in PROMPTS.values()] if ctx.sees_content else []
    return {"prompts": shown}


async def get(ctx: Context, params: Any) -> dict[str, Any]:
    """`prompts/get`: the prompt's messages, gathered now."""
    name = params.get("name") if isinstance(params, dict) else None
    raw = params.get("arguments") or {} if isinstance(params, dict) else {}
    if not isinstance(name, str) or not isinstance(raw, dict):
        raise ProtocolError(
            INVALID_PARAMS,
            "invalid_params",
            'prompts/get needs {"name": string, "arguments": object}',
        )
    prompt = PROMPTS.get(name)
    if prompt is None:
        raise ProtocolError(
            INVALID_PARAMS,
            "invalid_params",
            f"unknown prompt: {name[:80]!r}{suggest(name, list(PROMPTS))}; call prompts/list",
        )
    if not ctx.sees_content:
        raise InsufficientPermissionError({"read"}, ctx.ticket.permissions, tool=name)
    args = _arguments(prompt, raw)
    return {"description": prompt.description, "messages": await prompt.build(ctx, args)}


def _arguments(prompt: Prompt, raw: dict[str, Any]) -> dict[str, str]:
    known = {a.name for a in prompt.arguments}
    problems = [f"unknown argument {k!r}{suggest(k, list(known))}" for k in raw if k not in known]
    problems += [
        f"argument {k!r} must be a string" for k, v in raw.items() if not isinstance(v, str)
    ]
    problems += [
        f"missing required argument {a.name!r}"
        for a in prompt.arguments
        if a.required and not str(raw.get(a.name) or "").strip()
    ]
    if problems:
        raise ProtocolError(
            INVALID_PARAMS,
            "invalid_params",
            f"invalid arguments for {prompt.name}: " + "; ".join(problems),
        )
    return {k: v.strip() for k, v in raw.items() if isinstance(v, str)}
