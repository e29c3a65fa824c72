"""One `tools/call`, from its name to its MCP result, the same way for every tool.

For all of them: the permission check, argument checking, vault resolution, running the
handler in a worker thread under the call's deadline, error mapping to registry codes,
blind answers for write-only callers, honest truncation and one audit line. Which tools
there are is `vault_node.registry`; what each does is its handler in `vault_node.tools`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import structlog

from tickets import InsufficientScopeError, Ticket, TokenError
from vault_core import NotFoundError, OpenVault, VaultError, deadline, scope
from vault_node import uris
from vault_node.context import Call, Context
from vault_node.errors import (
    METHOD_NOT_FOUND,
    ArgumentError,
    AuthFailure,
    InsufficientPermissionError,
    ProtocolError,
    ToolError,
    UnknownVaultError,
)
from vault_node.registry import BLIND, REGISTRY, params_of
from vault_node.tools.base import Tool, check_arguments, suggest
from vault_node.tools.shape import encode_bytes, fit, primary_count

log = structlog.get_logger("vault_node")

WORKERS = ThreadPoolExecutor(max_workers=40, thread_name_prefix="tool")
"""Handlers block on files, SQLite and git, so they run here, off the event loop. A plain
executor: an anyio worker-thread hop costs about a tenth of a millisecond more
per call (bench/bench_node.py measures the whole layer)."""
AUDITED_ARGS = ("path", "to", "from", "template", "revision", "name", "layout", "date", "dry_run")


async def call_tool(ctx: Context, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """Run one tool call and return its MCP result (isError for every tool-level failure).

    Raises ProtocolError for an unknown tool, InsufficientPermissionError (403) when the token lacks
    a permission, AuthFailure (401) when only a stale revocation snapshot withholds it.
    """
    tool = REGISTRY.get(name)
    if tool is None:
        raise ProtocolError(
            METHOD_NOT_FOUND,
            "unknown_tool",
            f"unknown tool: {name!r}{suggest(name, list(REGISTRY))}; call tools/list",
        )
    try:
        _permit(ctx.ticket, tool)
    except InsufficientPermissionError:
        if ctx.metrics is not None:
            ctx.metrics.tool(tool.name, "denied", 0.0)
        raise
    audit = _Audit(tool, ctx)
    try:
        payload, blocks = await _execute(tool, ctx, arguments, audit)
        result = _success(payload, ctx, audit, blocks)
    except (InsufficientPermissionError, AuthFailure) as exc:
        audit.emit(error=getattr(exc, "code", "unauthorized"))
        raise
    except (ToolError, VaultError) as exc:
        result = _failure(exc.code, exc.message)
        audit.emit(error=exc.code)
    except Exception as exc:  # noqa: BLE001 — the tool dispatch boundary: one answer, one log line
        # No traceback and no message: either may quote note content (docs/design.md#tool-call-log).
        log.error("tool_failed", tool=tool.name, error_type=type(exc).__name__, where=_where(exc))  # noqa: TRY400
        result = _failure(
            "internal",
            f"{tool.name} failed inside the node; the failure is "
            "logged. Retry once; if it fails again, report it",
        )
        audit.emit(error="internal")
    else:
        audit.emit()
    return result


def _permit(ticket: Ticket, tool: Tool) -> None:
    try:
        ticket.require(tool.kind)
    except InsufficientScopeError as exc:
        raise _refusal(tool, exc) from exc
    except TokenError as exc:
        raise AuthFailure(exc.reason) from exc


def _refusal(tool: Tool, exc: InsufficientScopeError) -> InsufficientPermissionError:
    return InsufficientPermissionError(exc.needed, exc.held, tool=tool.name, blind=BLIND)


async def _execute(
    tool: Tool, ctx: Context, raw: Mapping[str, Any], audit: _Audit
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The handler's result and the content blocks it adds after the text (an image)."""
    args, problems = check_arguments(params_of(tool), raw)
    audit.arguments(args)
    if problems:
        raise ArgumentError(f"invalid arguments for {tool.name}: " + "; ".join(problems))
    vault = args.pop("vault", None)
    call = Call(args, ctx)
    # A thread cannot be killed: the handler's reads look at this deadline and stop there.
    limit = deadline.Limit(ctx.config.durations.tool_timeout)
    try:
        payload = await asyncio.get_running_loop().run_in_executor(
            WORKERS, _handle, tool, call, vault, limit, audit
        )
    except InsufficientScopeError as exc:
        raise _refusal(tool, exc) from exc
    except TokenError as exc:
        raise AuthFailure(exc.reason) from exc
    return payload, call.content


def _handle(
    tool: Tool, call: Call, vault: str | None, limit: deadline.Limit, audit: _Audit
) -> dict[str, Any]:
    """The handler, in a worker thread, under the call's deadline and path rules. The vault
    is looked up here too: one still being opened is waited for (briefly) off the loop."""
    with limit.active():
        if tool.uses_vault:
            call.opened = _vault(call.context, vault)
            audit.fields["vault"] = call.opened.name
        rules = call.context.ticket.reach(call.opened.name) if call.opened is not None else None
        replicator = call.context.replicator
        held = None
        if replicator is not None and call.opened is not None and tool.kind != "read":
            held = replicator.before_write(
                call.opened.name
            )  # docs/design.md#replication-between-nodes
        with scope.applied(rules):
            payload = tool.handler(call)
        if held is not None and replicator is not None and call.opened is not None:
            replicator.after_write(call.opened, held)
        return payload


def _vault(ctx: Context, name: str | None) -> OpenVault:
    """The vault a call names; unknown and forbidden vaults get the very same answer."""
    name = name or ctx.config.default_vault
    if not ctx.ticket.allows_vault(name):
        raise UnknownVaultError(name)
    try:
        return ctx.library.get(name)
    except NotFoundError as exc:
        raise UnknownVaultError(name) from exc


def _success(
    payload: dict[str, Any], ctx: Context, audit: _Audit, blocks: list[dict[str, Any]]
) -> dict[str, Any]:
    if not ctx.sees_content:  # blind: only what follows from the call itself
        payload = {key: payload[key] for key in audit.tool.blind if key in payload}
    body = encode_bytes(payload)
    payload, truncated = fit(payload, ctx.config.max_response_bytes, len(body))
    if truncated:
        body = encode_bytes(payload)
    audit.results(primary_count(payload), len(body), truncated)
    if ctx.sees_content and (link := _resource_link(payload)):
        blocks = [*blocks, link]
    return {
        "content": [{"type": "text", "text": body.decode("utf-8", "surrogatepass")}, *blocks],
        "structuredContent": payload,
        "isError": False,
    }


def _resource_link(payload: dict[str, Any]) -> dict[str, Any] | None:
    """A link to the note or attachment a result is about (its `vault` and `path`), so a
    client can show or attach it; none for a dry run or a deletion, which leave nothing."""
    vault, path = payload.get("vault"), payload.get("path")
    if not (isinstance(vault, str) and isinstance(path, str) and path):
        return None
    if payload.get("dry_run") is True or payload.get("deleted") is True:
        return None
    return uris.link(vault, path)


def _failure(code: str, message: str) -> dict[str, Any]:
    return {
        "content": [{"type": "text", "text": message}],
        "isError": True,
        "_meta": {"secondbrain/error": {"code": code}},
    }


def _where(exc: BaseException) -> str:
    """Where it failed, as file:line of the innermost frame (no message: it may hold content)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None:
        return ""
    return f"{tb.tb_frame.f_code.co_filename.rsplit('/', 1)[-1]}:{tb.tb_lineno}"


class _Audit:
    """The one `tool_call` line per call (docs/design.md#tool-call-log): what was touched, never
    what is in it.

    Tool metrics are counted here too, so a metric can never contradict the audit log.
    """

    def __init__(self, tool: Tool, ctx: Context) -> None:
        self.started = time.perf_counter()
        self.tool = tool
        self.metrics = ctx.metrics
        self.fields: dict[str, Any] = {"tool": tool.name, "user": ctx.ticket.principal}
        if ctx.ticket.grant_id:
            self.fields["grant"] = ctx.ticket.grant_id

    def arguments(self, args: Mapping[str, Any]) -> None:
        for name in AUDITED_ARGS:
            value = args.get(name)
            if isinstance(value, str | bool) and value != "":
                self.fields[name] = value[:200] if isinstance(value, str) else value

    def results(self, count: int | None, size: int, truncated: bool) -> None:
        self.fields.update(results=count, bytes=size)
        if truncated:
            self.fields["truncated"] = True

    def emit(self, error: str | None = None) -> None:
        seconds = time.perf_counter() - self.started
        self.fields["duration_ms"] = round(seconds * 1000, 1)
        if error is not None:
            self.fields["error"] = error
            self.fields.pop("results", None)
            self.fields.pop("bytes", None)
        log.info("tool_call", **self.fields)
        if self.metrics is not None:
            self._count(seconds, error)

    def _count(self, seconds: float, error: str | None) -> None:
        assert self.metrics is not None
        outcome = "ok" if error is None else "denied" if error == "forbidden" else "error"
        self.metrics.tool(self.tool.name, outcome, seconds, self.fields.get("bytes"))
        if error is None and self.tool.kind != "read":
            self.metrics.write(
                dry_run=self.fields.get("dry_run") is True, truncated="truncated" in self.fields
            )
        elif error is None and "truncated" in self.fields:
            self.metrics.truncated.inc()
