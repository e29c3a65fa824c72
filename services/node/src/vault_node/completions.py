"""`completion/complete`: suggestions for the arguments of the prompts and of the note
template, so a client can offer vault names, recent days and the paths under a prefix.

Only for a token that reads (a path is something in the vault); a vault the token may not
use is never suggested and its paths never listed.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from vault_core.search import answers
from vault_node.context import Context
from vault_node.errors import INVALID_PARAMS, InsufficientPermissionError, ProtocolError
from vault_node.prompts import PROMPTS
from vault_node.resources import in_reach, opened, run, visible_vaults
from vault_node.uris import TEMPLATE

MAX_VALUES = 100  # the most the MCP spec lets one answer hold
RECENT_DAYS = 14


async def complete(ctx: Context, params: Any) -> dict[str, Any]:
    """The values that start with what the caller typed, best first (at most 100)."""
    ref, argument, context = _read(params)
    if not ctx.sees_content:
        raise InsufficientPermissionError(
            {"read"}, ctx.ticket.permissions, tool="completion/complete"
        )
    name, typed = argument["name"], argument["value"]
    if ref.get("type") == "ref/prompt":
        prompt = PROMPTS.get(str(ref.get("name")))
        if prompt is None or name not in {a.name for a in prompt.arguments}:
            raise _bad(f"no prompt {ref.get('name')!r} with an argument {name!r}; prompts/list")
        found = _prompt_values(ctx, name, typed)
    elif ref.get("type") == "ref/resource":
        if ref.get("uri") != TEMPLATE or name not in ("vault", "path"):
            raise _bad(f"no template {ref.get('uri')!r} with {name!r}; resources/templates/list")
        found = await _template_values(ctx, name, typed, context)
    else:
        raise _bad('ref.type must be "ref/prompt" or "ref/resource"')
    shown = found[:MAX_VALUES]
    return {
        "completion": {"values": shown, "total": len(found), "hasMore": len(found) > len(shown)}
    }


def _read(params: Any) -> tuple[dict[str, Any], dict[str, str], dict[str, str]]:
    ref = params.get("ref") if isinstance(params, dict) else None
    argument = params.get("argument") if isinstance(params, dict) else None
    if not (
        isinstance(ref, dict)
        and isinstance(argument, dict)
        and isinstance(argument.get("name"), str)
        and isinstance(argument.get("value"), str)
    ):
        raise _bad('completion/complete needs {"ref": object, "argument": {"name", "value"}}')
    context = params.get("context") or {}
    given = context.get("arguments") if isinstance(context, dict) else None
    named = {k: v for k, v in (given or {}).items() if isinstance(v, str)}
    return ref, argument, named


def _prompt_values(ctx: Context, name: str, typed: str) -> list[str]:
    if name == "vault":
        return [v for v in _vault_names(ctx) if v.startswith(typed)]
    if name == "date":
        today = _today(ctx)
        days = [(today - dt.timedelta(days=n)).isoformat() for n in range(RECENT_DAYS)]
        return [day for day in ["today", *days] if day.startswith(typed)]
    return []  # free text: a topic, a title, the notes of a meeting


def _vault_names(ctx: Context) -> list[str]:
    """The vaults the caller may use, here and on the deployment's other nodes (a path under
    one held elsewhere is completed there: the request is forwarded)."""
    return sorted({*visible_vaults(ctx), *ctx.vaults_elsewhere()})


def _today(ctx: Context) -> dt.date:
    default = opened(ctx, ctx.config.default_vault)
    return default.vault.now().date() if default is not None else dt.datetime.now(dt.UTC).date()


async def _template_values(
    ctx: Context, name: str, typed: str, context: dict[str, str]
) -> list[str]:
    if name == "vault":
        return [v for v in _vault_names(ctx) if v.startswith(typed)]
    open_vault = opened(ctx, context.get("vault") or ctx.config.default_vault)
    if open_vault is None:
        return []

    def paths() -> list[str]:
        with in_reach(ctx, open_vault.name):
            return answers.paths_starting(open_vault.index, typed, MAX_VALUES + 1)

    return await run(ctx, paths)


def _bad(message: str) -> ProtocolError:
    return ProtocolError(INVALID_PARAMS, "invalid_params", message)
