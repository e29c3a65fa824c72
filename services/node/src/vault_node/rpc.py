"""MCP over Streamable HTTP, hand-written: JSON-RPC 2.0 on `POST /mcp`
(docs/design.md#mcp-transport).

Stateless: no `Mcp-Session-Id` is ever issued (one sent by a client is ignored), GET is
405, DELETE is 204. Order of checks on POST: Origin (403), bearer token (401), the
`MCP-Protocol-Version` header (400), body size (413), JSON (-32700), then each message.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib.metadata import version as package_version
from typing import Any
from urllib.parse import urlsplit

import orjson
import structlog
from fastapi import APIRouter, Request
from fastapi.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from tickets import Ticket
from vault_node import completions, dispatch, forward, instructions, prompts, registry, resources
from vault_node.auth import authenticate, forbidden, unauthorized
from vault_node.config import NodeConfig
from vault_node.context import Context, Remote
from vault_node.errors import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    SERVER_ERROR,
    AuthFailure,
    InsufficientPermissionError,
    ProtocolError,
)
from vault_node.ratelimit import Buckets, retry_after
from vault_node.tools.write import PUT_LIMIT

log = structlog.get_logger("vault_node")

SUPPORTED_VERSIONS = ("2025-11-25", "2025-06-18")  # newest first
HEADER_DEFAULT_VERSION = "2025-06-18"
MAX_BODY = 8 * 1024 * 1024
MAX_BATCH = 100
NOTIFICATIONS = ("notifications/initialized", "notifications/cancelled")
NO_STORE = {"Cache-Control": "no-store"}
VERSION = package_version("secondbrain")  # read once: each metadata lookup costs 0.2 ms


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(
        _dumps(body),
        status_code=status,
        media_type="application/json",
        headers={**NO_STORE, **(headers or {})},
    )


def _dumps(body: Any) -> bytes:
    """Compact UTF-8 JSON; what orjson refuses (a lone surrogate a client sent as
    `\\ud800` and a tool echoes) is written with escapes, still valid JSON."""
    try:
        return orjson.dumps(body)
    except (orjson.JSONEncodeError, TypeError):
        return json.dumps(body).encode("ascii")


def rpc_error(ident: Any, rpc_code: int, code: str, message: str, **data: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": ident,
        "error": {"code": rpc_code, "message": message, "data": {"code": code, **data}},
    }


def transport_error(status: int, error: str, message: str, **headers: str) -> Response:
    """A refusal before any JSON-RPC message: `{"error","status"}` (docs/design.md#errors)."""
    return json_response({"error": error, "status": status, "message": message}, status, headers)


router = APIRouter()


class PostEndpoint:
    """`POST /mcp` as bare ASGI, inside the CORS middleware but past FastAPI's routing,
    exception and dependency layers: on a call that itself takes a few hundred
    microseconds, those layers cost as much again (bench/bench_node.py measures it).
    Everything else (GET/DELETE /mcp, health, metadata) goes on to the router."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and scope["path"] == "/mcp":
            response = await post_mcp(Request(scope, receive))
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


async def post_mcp(request: Request) -> Response:
    node = request.app.state.node
    config: NodeConfig = node.config
    try:
        if refusal := origin_refusal(request, config):
            return refusal
        ticket = await authenticate(request, node.verifier)
        key = f"principal:{ticket.principal}"
        if (wait := node.buckets.check(key)) > 0:  # refused before the body is even read
            return _too_many(key, wait)
        announced = request.headers.get("mcp-protocol-version", HEADER_DEFAULT_VERSION)
        if announced not in SUPPORTED_VERSIONS:
            return charged(node.buckets, key, 1) or json_response(
                rpc_error(
                    None,
                    INVALID_REQUEST,
                    "unsupported_protocol_version",
                    f"Unsupported MCP-Protocol-Version: {announced[:40]}; this server speaks "
                    f"{' and '.join(SUPPORTED_VERSIONS)} (initialize negotiates one)",
                ),
                400,
            )
        body = await read_body(request)
        if body is None:
            return charged(node.buckets, key, 1) or transport_error(
                413,
                "payload_too_large",
                f"the request body is over {MAX_BODY} bytes (attachment_put takes files of up to "
                f"{PUT_LIMIT} bytes)",
            )
        known = node.directory if node.forwarder.deployment else None
        remote = None
        if known is not None and not request.headers.get(forward.FORWARDED):
            remote = asking(request, ticket, config)
        ctx = Context(node.library, config, ticket, node.metrics, node.replicator, known, remote)
        limit = lambda size: charged(node.buckets, key, size)  # noqa: E731
        try:
            message = json.loads(body)
        except (ValueError, RecursionError):
            return await handle(ctx, body, limit)
        if isinstance(message, dict):
            passed = await routed(request, ctx, body, message, limit)
            if passed is not None:
                return passed
        return await handle_message(ctx, message, limit, request)
    except AuthFailure as exc:
        log.info("auth_failed", reason=exc.reason)
        return unauthorized(config, exc.reason, node.metadata_url(request))
    except InsufficientPermissionError as exc:
        log.info("permission_denied", needed=sorted(exc.needed))
        return forbidden(config, exc.needed, str(exc), exc.request_id, node.metadata_url(request))
    except Exception as exc:  # noqa: BLE001 — the HTTP boundary: one generic answer, logged
        log.error("request_failed", error_type=type(exc).__name__)  # noqa: TRY400
        return json_response(rpc_error(None, -32603, "internal", "internal error"), 500)


def rate_limited(buckets: Buckets, key: str) -> Response | None:
    """429 with Retry-After when this key has used up its calls for now."""
    wait = buckets.take(key)
    return None if wait <= 0 else _too_many(key, wait)


def charged(buckets: Buckets, key: str, size: int) -> Response | None:
    """Take the `size` calls of one request (a batch is one call per message): all of them,
    or none and 429 with the Retry-After after which all fit. A batch larger than the whole
    limit could never fit: 400, for the price of one call."""
    if size > buckets.capacity:
        if (wait := buckets.take(key)) > 0:
            return _too_many(key, wait)
        return json_response(
            rpc_error(
                None,
                INVALID_REQUEST,
                "invalid_request",
                f"this batch holds {size} calls but this node allows {int(buckets.capacity)} "
                "a minute; send smaller batches",
            ),
            400,
        )
    wait = buckets.take(key, size)
    return None if wait <= 0 else _too_many(key, wait, size)


def _too_many(key: str, wait: float, calls: int = 1) -> Response:
    log.warning("rate_limited", key=key.split(":", 1)[0], calls=calls)
    message = "too many calls; retry after the pause"
    if calls > 1:
        message = f"too many calls: none of this batch of {calls} ran; retry it after the pause"
    return transport_error(429, "rate_limited", message, **{"Retry-After": retry_after(wait)})


def _client_key(request: Request) -> str:
    return f"ip:{request.client.host if request.client else 'unknown'}"


@router.get("/mcp")
async def get_mcp(request: Request) -> Response:
    """No server-initiated stream: there is nothing to send (docs/design.md#mcp-transport)."""
    if limited := rate_limited(request.app.state.node.buckets, _client_key(request)):
        return limited
    return transport_error(
        405, "method_not_allowed", "use POST for MCP messages", Allow="POST, DELETE"
    )


@router.delete("/mcp")
async def delete_mcp(request: Request) -> Response:
    """There is no session to end; a client that tidies up gets what it expects."""
    if limited := rate_limited(request.app.state.node.buckets, _client_key(request)):
        return limited
    return Response(status_code=204, headers=NO_STORE)


def origin_refusal(request: Request, config: NodeConfig) -> Response | None:
    """403 for a browser Origin outside `allowed_origins` (only checked when that is set)."""
    origin = request.headers.get("origin")
    if not config.allowed_origins or origin is None:
        return None
    own = {_origin(config.public_url), _origin(config.issuer)}
    allowed = {o.rstrip("/") for o in config.allowed_origins} | own
    if "*" in allowed or origin.rstrip("/") in allowed:
        return None
    log.warning("origin_refused", origin=origin[:200])
    return transport_error(403, "forbidden_origin", "this Origin may not use this node")


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme else ""


async def read_body(request: Request) -> bytes | None:
    """The body, or None when it is (or turns out to be) over MAX_BODY."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY:
        return None
    chunks, total = [], 0
    async for chunk in request.stream():
        total += len(chunk)
        if total > MAX_BODY:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


async def routed(
    request: Request,
    ctx: Context,
    body: bytes,
    message: dict[str, Any],
    limit: Callable[[int], Response | None] = lambda size: None,
) -> Response | None:
    """The answer of the node holding the vault `message` names, passed back unchanged
    (docs/design.md#one-address); None when this node answers it itself."""
    node = request.app.state.node
    forwarder: forward.Forwarder = node.forwarder
    forwarded = bool(request.headers.get(forward.FORWARDED))
    plan = forwarder.plan(
        message,
        ctx.config,
        ctx.ticket,
        node.holds,
        forwarded=forwarded,
        primary_here=node.is_primary,
    )
    if plan is None:
        return None
    if plan.local and not forwarder.may_pass(request, ctx.ticket, plan):
        return None  # a replica held here answers what it may not pass on
    if not plan.local and (limited := limit(1)):  # charged here as well as there: each node
        return limited  # counts what it sees (a replica's own answer is charged as its own)
    if refused := forwarder.refusal(request, ctx.ticket, plan):
        return json_response(forward.error_reply(message, *refused))
    answer = await forwarder.send(request, body, plan, ctx.config.resource)
    if answer is None and plan.local:
        return None
    if answer is None:
        return json_response(forward.error_reply(message, *forward.unavailable(plan)))
    return forward.passed_back(answer)


def asking(request: Request, ticket: Ticket, config: NodeConfig) -> Remote:
    """`Context.remote` for this request: one request for a vault, run where it lives."""
    node = request.app.state.node
    forwarder: forward.Forwarder = node.forwarder

    async def ask(vault: str, call: dict[str, Any]) -> dict[str, Any]:
        entry = node.directory.get(vault)
        plan = forward.Plan(vault, False, entry.nodes if entry is not None else ())
        problem = forwarder.refusal(request, ticket, plan) if plan.targets else None
        answer = None
        if plan.targets and problem is None:
            message = {"jsonrpc": "2.0", "id": 1, **call}
            answer = await forwarder.send(request, _dumps(message), plan, config.resource)
        if problem is not None or answer is None:
            code, text = problem or forward.unavailable(plan)
            raise ProtocolError(SERVER_ERROR, code, text)
        reply = forward.reply_of_body(answer.status_code, answer.content, {"id": 1})
        if not reply or not isinstance(result := reply.get("result"), dict):
            raise ProtocolError(SERVER_ERROR, *forward.unavailable(plan))
        return result

    return ask


async def routed_item(
    request: Request, ctx: Context, item: dict[str, Any]
) -> tuple[bool, dict[str, Any] | None]:
    """One message of a batch that another node answers: (True, its reply); (False, None)
    when this node answers it itself."""
    passed = await routed(request, ctx, _dumps(item), item)
    if passed is None:
        return False, None
    return True, forward.reply_of_body(passed.status_code, bytes(passed.body), item)


async def handle(
    ctx: Context, body: bytes, limit: Callable[[int], Response | None] = lambda size: None
) -> Response:
    """Answer one message or a batch; notifications alone get 202 and no body. `limit`
    charges the request's calls to the rate limit (one per message, one for a body that
    holds none): a refusal it returns is the answer, and nothing runs."""
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return limit(1) or json_response(
            rpc_error(None, PARSE_ERROR, "parse_error", "the body is not valid JSON"), 400
        )
    return await handle_message(ctx, message, limit)


async def handle_message(
    ctx: Context,
    message: Any,
    limit: Callable[[int], Response | None] = lambda size: None,
    request: Request | None = None,
) -> Response:
    """`handle` for a parsed body; with `request`, a batch's messages for vaults other
    nodes hold are forwarded one by one."""
    if isinstance(message, list):
        if not message or len(message) > MAX_BATCH:
            return limit(1) or json_response(
                rpc_error(
                    None,
                    INVALID_REQUEST,
                    "invalid_request",
                    f"a batch holds 1 to {MAX_BATCH} messages",
                ),
                400,
            )
        if refused := limit(len(message)):
            return refused
        replies = [reply for item in message if (reply := await batch_reply(ctx, item, request))]
        return json_response(replies) if replies else Response(status_code=202, headers=NO_STORE)
    if refused := limit(1):
        return refused
    if not isinstance(message, dict):
        return json_response(
            rpc_error(None, INVALID_REQUEST, "invalid_request", "a JSON-RPC message is an object"),
            400,
        )
    reply = await answer(ctx, message, False)
    return json_response(reply) if reply else Response(status_code=202, headers=NO_STORE)


async def batch_reply(ctx: Context, item: Any, request: Request | None) -> dict[str, Any] | None:
    if request is not None and isinstance(item, dict):
        passed, reply = await routed_item(request, ctx, item)
        if passed:
            return reply
    return await answer(ctx, item, True)


def _valid_id(ident: Any) -> bool:
    return isinstance(ident, str) or (isinstance(ident, int) and not isinstance(ident, bool))


async def answer(ctx: Context, message: Any, in_batch: bool) -> dict[str, Any] | None:
    """The reply to one message, or None for notifications and client responses."""
    if not isinstance(message, dict):
        return rpc_error(
            None, INVALID_REQUEST, "invalid_request", "a JSON-RPC message is an object"
        )
    if "method" not in message and ("result" in message or "error" in message):
        return None  # a response to a request we never send: accepted, ignored
    ident = message.get("id")
    problem = _shape_problem(message)
    if problem:
        return rpc_error(
            ident if _valid_id(ident) else None, INVALID_REQUEST, "invalid_request", problem
        )
    if "id" not in message:
        return None  # a notification: never answered (docs/design.md#methods)
    try:
        result = await run_method(ctx, message["method"], message.get("params") or {})
    except ProtocolError as exc:
        return rpc_error(ident, exc.rpc_code, exc.code, exc.message)
    except (InsufficientPermissionError, AuthFailure) as exc:
        if not in_batch:
            if isinstance(exc, InsufficientPermissionError):
                exc.request_id = ident  # the 403's JSON-RPC body answers this request
            raise
        code = "forbidden" if isinstance(exc, InsufficientPermissionError) else "unauthorized"
        return rpc_error(
            ident,
            SERVER_ERROR,
            code,
            str(exc) if code == "forbidden" else "the token does not allow this call now",
        )
    return {"jsonrpc": "2.0", "id": ident, "result": result}


def _shape_problem(message: dict[str, Any]) -> str | None:
    if message.get("jsonrpc") != "2.0":
        return 'jsonrpc must be "2.0"'
    if not isinstance(message.get("method"), str) or not message["method"]:
        return "method must be a non-empty string"
    if "id" in message and not _valid_id(message["id"]):
        return "id must be a string or an integer"
    if "params" in message and not isinstance(message["params"], dict | list):
        return "params must be an object"
    return None


async def run_method(ctx: Context, method: str, params: Any) -> dict[str, Any]:
    """Run one request method (docs/design.md#methods)."""
    if method == "initialize":
        return initialize(ctx, params)
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": registry.listing(ctx.ticket)}
    if method == "tools/call":
        if (
            not isinstance(params, dict)
            or not isinstance(params.get("name"), str)
            or not isinstance(params.get("arguments", {}), dict)
        ):
            raise ProtocolError(
                INVALID_PARAMS,
                "invalid_params",
                'tools/call needs params {"name": string, "arguments": object}',
            )
        return await dispatch.call_tool(ctx, params["name"], params.get("arguments") or {})
    if method == "resources/list":
        return await resources.listing(ctx, params)
    if method == "resources/read":
        return await resources.read(ctx, params)
    if method == "resources/templates/list":
        return {"resourceTemplates": resources.TEMPLATES if ctx.sees_content else []}
    if method == "prompts/list":
        return prompts.listing(ctx)
    if method == "prompts/get":
        return await prompts.get(ctx, params)
    if method == "completion/complete":
        return await completions.complete(ctx, params)
    if method in NOTIFICATIONS:
        return {}
    raise ProtocolError(METHOD_NOT_FOUND, "method_not_found", f"unknown method: {method[:80]}")


def initialize(ctx: Context, params: Any) -> dict[str, Any]:
    """Negotiate the version: echo one we speak, else offer the newest (spec 2025-06-18)."""
    asked = params.get("protocolVersion") if isinstance(params, dict) else None
    chosen = asked if asked in SUPPORTED_VERSIONS else SUPPORTED_VERSIONS[0]
    return {
        "protocolVersion": chosen,
        # Stateless: no lists that change under a client, no subscriptions (no stream to send on).
        "capabilities": {
            "tools": {"listChanged": False},
            "resources": {"subscribe": False, "listChanged": False},
            "prompts": {"listChanged": False},
            "completions": {},
        },
        "serverInfo": {"name": "secondbrain", "version": VERSION},
        "instructions": instructions.compose(ctx),
    }
