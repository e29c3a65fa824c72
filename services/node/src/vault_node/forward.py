"""Any node answers any vault (docs/design.md#one-address): a call for a vault another node
holds is passed there as the same request, with the caller's own token, and its answer
passed back unchanged.

The target verifies the token again; this node forwards only a call the token may make
(so it is no free proxy), only once (`FORWARDED` marks it; a second hop is refused) and
only to the node the directory names: any holder for a read (primary first), the primary
for a write.

A replica passes a read of its vault to the primary too, and answers it itself only when
the primary does not answer (or the call came forwarded): a replica may lag (one the
center has not yet counted in sync gets no write before its ack), so a client that wrote
through one node reads its write through any other.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx
import structlog
from fastapi import Request
from fastapi.responses import Response

from tickets import Ticket
from tickets.verify import canonical_resource
from vault_node.config import NodeConfig
from vault_node.directory import Directory
from vault_node.errors import SERVER_ERROR, ProtocolError
from vault_node.registry import REGISTRY
from vault_node.uris import parse_uri

log = structlog.get_logger("vault_node")

FORWARDED = "secondbrain-forwarded"
"""Set on a forwarded request to the forwarding node's MCP URL; a node never forwards a
request that carries it."""
PASSED_HEADERS = ("authorization", "content-type", "accept", "mcp-protocol-version")
ANSWER_HEADERS = ("content-type", "www-authenticate", "retry-after", "mcp-protocol-version")
CONNECT_TIMEOUT = 3.0
DOWN_FOR = 5.0
"""Seconds a node that did not answer is tried last (a replica answers a read itself
meanwhile instead of waiting for the primary's connect timeout on every call)."""


@dataclass(frozen=True)
class Plan:
    """Where one message goes: the vault it names, whether it writes, the nodes to try."""

    vault: str
    write: bool
    targets: tuple[str, ...]
    local: bool = False
    """This node holds a replica: it answers itself when no target does (or may not be
    asked)."""


def named_vault(message: object, default_vault: str) -> tuple[str, bool] | None:
    """The vault a request message names and whether it writes; None for a message that
    names none (initialize, tools/list, vault_list, a notification, a malformed one)."""
    if not isinstance(message, dict) or "id" not in message:
        return None
    method, params = message.get("method"), message.get("params")
    if not isinstance(params, dict):
        return None
    if method == "tools/call":
        tool = REGISTRY.get(params.get("name"))  # type: ignore[arg-type]
        arguments = params.get("arguments") or {}
        if tool is None or not tool.uses_vault or not isinstance(arguments, dict):
            return None
        return _name(arguments.get("vault"), default_vault), tool.kind != "read"
    if method == "resources/read" and isinstance(params.get("uri"), str):
        try:
            return parse_uri(params["uri"])[0], False
        except ProtocolError:
            return None
    if method == "prompts/get":
        arguments = params.get("arguments") or {}
        if not isinstance(arguments, dict):
            return None
        return _name(arguments.get("vault"), default_vault), False
    if method == "completion/complete" and _completes_path(params):
        context = params.get("context")
        arguments = context.get("arguments") if isinstance(context, dict) else None
        if isinstance(arguments, dict) and isinstance(arguments.get("vault"), str):
            return arguments["vault"], False
    return None


def _completes_path(params: dict[str, Any]) -> bool:
    argument = params.get("argument")
    return isinstance(argument, dict) and argument.get("name") == "path"


def _name(value: object, default_vault: str) -> str:
    return value if isinstance(value, str) and value else default_vault


class Forwarder:
    """Decides where a message is answered and passes it on; one HTTP client for the node."""

    def __init__(self, directory: Directory) -> None:
        self.directory = directory
        self.deployment: str | None = None
        """The one address (canonical); without it nothing is forwarded: per-node URLs only."""
        self.client: httpx.AsyncClient | None = None
        self.counts = {"ok": 0, "refused": 0, "unavailable": 0}
        self.down: dict[str, float] = {}  # target → monotonic moment it did not answer

    async def start(self, config: NodeConfig) -> None:
        timeout = httpx.Timeout(config.durations.tool_timeout + 5.0, connect=CONNECT_TIMEOUT)
        self.client = httpx.AsyncClient(timeout=timeout, follow_redirects=False)

    async def stop(self) -> None:
        if self.client is not None:
            await self.client.aclose()

    def plan(
        self,
        message: object,
        config: NodeConfig,
        ticket: Ticket,
        holds: Callable[[str], bool],
        *,
        forwarded: bool = False,
        primary_here: Callable[[str], bool] = lambda vault: False,
    ) -> Plan | None:
        """Where `message` goes, or None to answer it here: a vault this node holds (for a
        write: as primary, or with no primary named by a lease — a copy of the same name on
        two nodes is not a replica until the center says so; for a read: as primary, or a
        call that came `forwarded`), one the directory does not know, one the token may not
        use (answered here as not found, the same as a vault that does not exist), a tool
        the token may not call (answered here with the 403), and any call for a vault whose
        lease makes this node `primary_here` (its directory may lag a failover). A read of a
        replica held here goes to the primary first (`Plan.local`)."""
        if self.deployment is None or not len(self.directory):
            return None
        named = named_vault(message, config.default_vault)
        if named is None:
            return None
        vault, write = named
        entry = self.directory.get(vault)
        if entry is None or not ticket.allows_vault(vault):
            return None
        if isinstance(message, dict) and message.get("method") == "tools/call":
            tool = REGISTRY[message["params"]["name"]]
            if not ticket.allows(tool.kind):
                return None
        own = canonical_resource(config.resource)
        # Asked only where the directory names another primary: the lease may be newer.
        if entry.primary != own and primary_here(vault):
            return None
        held = own in entry.nodes or holds(vault)
        replica = entry.epoch is not None and entry.primary != own
        if write and entry.primary != own and (entry.epoch is not None or not held):
            return Plan(vault, True, (entry.primary,))
        if held and replica and not forwarded:
            if self._is_down(entry.primary):
                return None
            return Plan(vault, False, (entry.primary,), local=True)
        if held:
            return None
        return Plan(vault, False, self._ordered(entry.nodes))

    def _is_down(self, target: str) -> bool:
        failed = self.down.get(target)
        return failed is not None and time.monotonic() - failed < DOWN_FOR

    def _ordered(self, targets: tuple[str, ...]) -> tuple[str, ...]:
        """`targets` with the ones that did not answer lately last (a stable sort)."""
        return tuple(sorted(targets, key=self._is_down))

    def refusal(self, request: Request, ticket: Ticket, plan: Plan) -> tuple[str, str] | None:
        """Why this request may not be forwarded (code, message), or None."""
        found = self._refusal(request, ticket, plan)
        if found is not None:
            self.counts["refused"] += 1
        return found

    def may_pass(self, request: Request, ticket: Ticket, plan: Plan) -> bool:
        """Whether this request may be forwarded, without counting a refusal."""
        return self._refusal(request, ticket, plan) is None

    def _refusal(self, request: Request, ticket: Ticket, plan: Plan) -> tuple[str, str] | None:
        if request.headers.get(FORWARDED):
            return (
                "misdirected",
                f"vault {plan.vault} is not served by this node either, and a forwarded call "
                "is never forwarded again (the nodes' directories disagree for a moment); "
                "retry in a few seconds",
            )
        if self.deployment not in ticket.aud and not set(plan.targets) & set(ticket.aud):
            return (
                "wrong_audience",
                f"vault {plan.vault} lives on another node and this token is for this node "
                f"only; ask the center for a token whose resource is {self.deployment}",
            )
        return None

    async def send(
        self, request: Request, body: bytes, plan: Plan, own: str
    ) -> httpx.Response | None:
        """The target's answer, trying the planned nodes in order until one answers; None
        when none did."""
        assert self.client is not None, "the forwarder is not started"
        headers = {name: value for name in PASSED_HEADERS if (value := request.headers.get(name))}
        headers[FORWARDED] = own
        for target in plan.targets:
            started = time.perf_counter()
            try:
                answer = await self.client.post(target, content=body, headers=headers)
            except httpx.HTTPError as exc:
                self.down[target] = time.monotonic()
                log.warning(
                    "forward_failed", vault=plan.vault, target=target, error=type(exc).__name__
                )
                continue
            self.down.pop(target, None)
            self.counts["ok"] += 1
            log.info(
                "forwarded",
                vault=plan.vault,
                target=target,
                status=answer.status_code,
                duration_ms=round((time.perf_counter() - started) * 1000, 1),
            )
            return answer
        if not plan.local:
            self.counts["unavailable"] += 1
        return None


def passed_back(answer: httpx.Response) -> Response:
    """The target's answer as this node's: status, body and the headers a client reads."""
    headers = {name: value for name in ANSWER_HEADERS if (value := answer.headers.get(name))}
    headers["Cache-Control"] = "no-store"
    return Response(answer.content, status_code=answer.status_code, headers=headers)


def unavailable(plan: Plan) -> tuple[str, str]:
    which = "its primary does not answer" if plan.write else "none of its nodes answers"
    return (
        "unavailable",
        f"vault {plan.vault} is served by another node, and {which} now; retry in a few seconds",
    )


def reply_of_body(status: int, content: bytes, message: Mapping[str, Any]) -> dict[str, Any] | None:
    """The JSON-RPC reply inside a forwarded answer to one message of a batch: the reply
    itself, none for a 202, else an error reply saying what the target refused."""
    if status == 202:
        return None
    try:
        body = json.loads(content)
    except (ValueError, RecursionError):
        body = None
    if isinstance(body, dict) and body.get("jsonrpc") == "2.0":
        return body
    text = body.get("message") if isinstance(body, dict) else None
    code = body.get("error") if isinstance(body, dict) else None
    return error_reply(
        message,
        code if isinstance(code, str) else "unavailable",
        text if isinstance(text, str) else f"the node holding the vault answered {status}",
    )


def error_reply(message: Mapping[str, Any], code: str, text: str) -> dict[str, Any]:
    """The reply to a message that could not be forwarded: a tool result with isError for
    a tool call (what a model reads), a JSON-RPC error for any other method."""
    ident = message.get("id")
    if message.get("method") == "tools/call":
        result = {
            "content": [{"type": "text", "text": text}],
            "isError": True,
            "_meta": {"secondbrain/error": {"code": code}},
        }
        return {"jsonrpc": "2.0", "id": ident, "result": result}
    error = {"code": SERVER_ERROR, "message": text, "data": {"code": code}}
    return {"jsonrpc": "2.0", "id": ident, "error": error}
