"""Notes and attachments as MCP resources, named `secondbrain://VAULT/PATH` (path segments
percent-encoded), under the tools' rules: a token without `read` sees none and reads none,
and a vault the token may not use does not exist for it.

The node is stateless, so there are no subscriptions and no change notifications.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
from collections.abc import Callable
from typing import Any, TypeVar

import structlog

from vault_core import NotFoundError, OpenVault, VaultError, VaultOpeningError, deadline, scope
from vault_core.search import answers
from vault_node.context import Context
from vault_node.dispatch import WORKERS
from vault_node.errors import INVALID_PARAMS, InsufficientPermissionError, ProtocolError
from vault_node.tools.attachments import load
from vault_node.uris import TEMPLATE, mime_of, parse_uri, uri_of

log = structlog.get_logger("vault_node")

PAGE = 100
NOT_FOUND = -32002  # the MCP spec's code for an unknown resource
TEMPLATES = [
    {
        "uriTemplate": TEMPLATE,
        "name": "note",
        "title": "A note or attachment",
        "description": "A note (text/markdown) or attachment in a vault, by its vault-relative "
        "path, e.g. secondbrain://default/wiki/rate-limiting.md.",
        "mimeType": "text/markdown",
    }
]
T = TypeVar("T")


async def run(ctx: Context, work: Callable[..., T], *args: Any) -> T:
    """Blocking work off the event loop, under the per-call deadline, like a tool handler.
    The work applies the caller's path rules per vault it looks into (`in_reach`)."""
    limit = deadline.Limit(ctx.config.durations.tool_timeout)
    return await asyncio.get_running_loop().run_in_executor(WORKERS, limit.run, work, *args)


def in_reach(ctx: Context, vault: str) -> contextlib.AbstractContextManager[None]:
    """The caller's path rules in `vault` over the block (vault_core.scope)."""
    return scope.applied(ctx.ticket.reach(vault))


def visible_vaults(ctx: Context) -> list[str]:
    return sorted(name for name in ctx.library.names() if ctx.ticket.allows_vault(name))


def opened(ctx: Context, vault: str) -> OpenVault | None:
    """The open vault, if the caller may use it; never waits on the event loop for one
    still being opened (a tool call opens a vault folder that appeared since start)."""
    return ctx.library.ready(vault) if ctx.ticket.allows_vault(vault) else None


async def listing(ctx: Context, params: Any) -> dict[str, Any]:
    """`resources/list`: every note and attachment of the visible vaults, by vault then path,
    PAGE at a time; `nextCursor` continues after the last one."""
    if not ctx.sees_content:
        return {"resources": []}  # blind: nothing of what is there
    after = _cursor(params.get("cursor") if isinstance(params, dict) else None)
    elsewhere = ctx.vaults_elsewhere() if ctx.remote is not None else []
    if elsewhere:
        found = await _page_everywhere(ctx, after, elsewhere)
    else:
        found = await run(ctx, _page, ctx, after)
    result: dict[str, Any] = {"resources": found}
    if len(found) == PAGE:
        last = parse_uri(found[-1]["uri"])
        result["nextCursor"] = _encode_cursor(last)
    return result


def _page(ctx: Context, after: tuple[str, str]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for vault in visible_vaults(ctx):
        if vault < after[0]:
            continue
        start = after[1] if vault == after[0] else ""
        found += _vault_page(ctx, vault, start, PAGE - len(found))
        if len(found) == PAGE:
            break
    return found


def _vault_page(ctx: Context, vault: str, start: str, limit: int) -> list[dict[str, Any]]:
    """Up to `limit` entries of `vault` after the path `start`."""
    if (open_vault := opened(ctx, vault)) is None:
        return []
    with in_reach(ctx, vault):
        entries = answers.entries_after(open_vault.index, start, limit)
    return [_entry(vault, entry) for entry in entries]


async def _page_everywhere(
    ctx: Context, after: tuple[str, str], elsewhere: list[str]
) -> list[dict[str, Any]]:
    """A page over this node's vaults and those other nodes hold (docs/design.md#one-address),
    in one order whichever node answers: a remote vault's part comes from its node."""
    assert ctx.remote is not None
    here = set(visible_vaults(ctx))
    found: list[dict[str, Any]] = []
    for vault in sorted(here | set(elsewhere)):
        if vault < after[0]:
            continue
        start, want = after[1] if vault == after[0] else "", PAGE - len(found)
        if vault in here:
            found += await run(ctx, _vault_page, ctx, vault, start, want)
        else:
            asked = {"cursor": _encode_cursor((vault, start))}
            result = await ctx.remote(vault, {"method": "resources/list", "params": asked})
            found += _of_vault(result, vault)[:want]
        if len(found) == PAGE:
            break
    return found


def _of_vault(result: dict[str, Any], vault: str) -> list[dict[str, Any]]:
    """The leading entries of a remote page that belong to `vault` (the page goes on into
    the other vaults that node holds)."""
    entries = result.get("resources")
    kept: list[dict[str, Any]] = []
    for entry in entries if isinstance(entries, list) else []:
        uri = entry.get("uri") if isinstance(entry, dict) else None
        if not isinstance(uri, str) or parse_uri(uri)[0] != vault:
            break
        kept.append(entry)
    return kept


def _entry(vault: str, entry: answers.Entry) -> dict[str, Any]:
    return {
        "uri": uri_of(vault, entry.path),
        "name": entry.path,
        "title": entry.title or entry.path.rsplit("/", 1)[-1],
        "mimeType": "text/markdown" if entry.is_note else mime_of(entry.path),
        "size": entry.size,
    }


def _cursor(raw: Any) -> tuple[str, str]:
    if raw is None:
        return "", ""
    try:
        vault, rel = json.loads(base64.urlsafe_b64decode(str(raw).encode("ascii")))
        if isinstance(vault, str) and isinstance(rel, str):
            return vault, rel
    except (ValueError, TypeError, binascii.Error, UnicodeError):
        pass
    raise ProtocolError(
        INVALID_PARAMS, "invalid_params", "unknown cursor; pass the nextCursor of the last page"
    )


def _encode_cursor(last: tuple[str, str]) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(last)).encode()).decode("ascii")


async def read(ctx: Context, params: Any) -> dict[str, Any]:
    """`resources/read`: a note as text/markdown (frontmatter included), an attachment as a
    base64 blob of its MIME type, each within `max_response_bytes`."""
    uri = params.get("uri") if isinstance(params, dict) else None
    if not isinstance(uri, str):
        raise ProtocolError(
            INVALID_PARAMS, "invalid_params", 'resources/read needs {"uri": string}'
        )
    if not ctx.sees_content:
        raise InsufficientPermissionError({"read"}, ctx.ticket.permissions, tool="resources/read")
    vault, rel = parse_uri(uri)
    open_vault = opened(ctx, vault)
    if open_vault is None and ctx.ticket.allows_vault(vault) and vault in ctx.library.opening():
        raise ProtocolError(INVALID_PARAMS, "timeout", VaultOpeningError(vault).message)
    if open_vault is None:
        raise _unknown(uri)
    try:
        content = await run(ctx, _content, ctx, open_vault, rel, uri)
    except NotFoundError as exc:
        raise _unknown(uri) from exc
    except VaultError as exc:
        raise ProtocolError(INVALID_PARAMS, exc.code, exc.message) from exc
    log.info("resource_read", vault=vault, path=content.pop("_path"), user=ctx.ticket.principal)
    return {"contents": [content]}


def _content(ctx: Context, open_vault: OpenVault, rel: str, uri: str) -> dict[str, Any]:
    with in_reach(ctx, open_vault.name):
        return _read_content(ctx, open_vault, rel, uri)


def _read_content(ctx: Context, open_vault: OpenVault, rel: str, uri: str) -> dict[str, Any]:
    limit = ctx.config.max_response_bytes
    if rel.lower().endswith(".md"):
        note = open_vault.vault.read_note(rel)
        _fits(note.path, note.size, limit, "note_outline, then note_read with a heading")
        return {"uri": uri, "mimeType": "text/markdown", "text": note.text, "_path": note.path}
    path, data, _ = load(open_vault.vault, rel)
    _fits(path, len(data) * 4 // 3, limit, "attachment_read (images downscaled, PDF text)")
    blob = base64.b64encode(data).decode("ascii")
    return {"uri": uri, "mimeType": mime_of(path), "blob": blob, "_path": path}


def _fits(path: str, size: int, limit: int, instead: str) -> None:
    if size > limit:
        raise ProtocolError(
            INVALID_PARAMS,
            "too_large",
            f"{path} is {size} bytes as a resource, over this node's limit of {limit}; "
            f"use {instead}",
        )


def _unknown(uri: str) -> ProtocolError:
    return ProtocolError(
        NOT_FOUND, "not_found", f"no such resource: {uri[:200]}; resources/list shows them"
    )
