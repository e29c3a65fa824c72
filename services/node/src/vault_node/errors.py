"""The node's failures and the one closed registry of machine-readable error codes.

Every error a caller can see carries a code from `ERROR_CODES`: a tool error in
`result._meta["secondbrain/error"].code`, a JSON-RPC error in `error.data.code`.

    NodeError                          code
    ├── ToolError                      any tool-level code (shown as an isError result)
    │   ├── ArgumentError              invalid_argument
    │   ├── UnknownVaultError          unknown_vault   (missing and forbidden look the same)
    │   ├── FailingOverError           failing_over    (no surely valid lease: retry in N s)
    │   ├── NotPrimaryError            not_primary     (a replica copy: names the primary)
    │   └── ForbiddenError             forbidden
    ├── ProtocolError                  a JSON-RPC error: rpc_code plus a registry code
    │                                  (and a call that could not be forwarded: unavailable,
    │                                  misdirected, wrong_audience, vault_node.forward)
    ├── InsufficientPermissionError    forbidden       (HTTP 403 insufficient_scope)
    ├── ListenError                    (startup only: the listen address cannot be bound)
    └── ConfigError                    (startup only: the process refuses to start)
    AuthFailure                        (no acceptable token: the HTTP boundary answers 401)

Library errors keep their own codes (vault_core.ERROR_CODES), which are part of
the registry; tickets errors are mapped at the HTTP boundary (401/403).
"""

from __future__ import annotations

from collections.abc import Iterable

from tickets.scopes import scope_name
from vault_core import ERROR_CODES as VAULT_CODES

TOOL_CODES = frozenset({"unknown_vault", "forbidden", "failing_over", "not_primary"})
FORWARD_CODES = frozenset({"unavailable", "misdirected", "wrong_audience"})
"""A call for a vault another node holds that could not be passed on (vault_node.forward)."""
PROTOCOL_CODES = frozenset(
    {
        "parse_error",
        "invalid_request",
        "method_not_found",
        "unknown_tool",
        "invalid_params",
        "unsupported_protocol_version",
        "unauthorized",
        "forbidden_origin",
        "payload_too_large",
        "method_not_allowed",
        "rate_limited",
    }
)
ERROR_CODES: frozenset[str] = VAULT_CODES | TOOL_CODES | FORWARD_CODES | PROTOCOL_CODES
"""The closed registry: every code any response of this node can carry."""

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
SERVER_ERROR = -32001  # implementation-defined: a permission failure (the 403 body, a batch's)


class AuthFailure(Exception):  # noqa: N818 — a signal for the boundary, not an error report
    """The request carries no acceptable token; `reason` is logged, and shown only as
    `auth.told` allows."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class NodeError(Exception):
    """Base of the node's own failures; `code` is from ERROR_CODES, `message` is for people."""

    code = "internal"

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        assert self.code in ERROR_CODES, self.code


class ToolError(NodeError):
    """A tool failed in a way the model should read and act on (isError result)."""


class ArgumentError(ToolError):
    code = "invalid_argument"


class UnknownVaultError(ToolError):
    code = "unknown_vault"

    def __init__(self, name: str) -> None:
        super().__init__(f"unknown vault: {name}; call vault_list for the vaults you can use")
        self.name = name


class ForbiddenError(ToolError):
    code = "forbidden"


class FailingOverError(ToolError):
    """The primary cannot be sure its lease still holds: the write is not acknowledged
    (it may have been applied here); retry after `retry_after` seconds."""

    code = "failing_over"

    def __init__(self, vault: str, retry_after: int, why: str = "") -> None:
        detail = f" ({why})" if why else ""
        super().__init__(
            f"vault {vault} is failing over{detail}; retry in {retry_after} s, the call is "
            "safe to repeat once note_read shows whether it took effect"
        )
        self.vault, self.retry_after = vault, retry_after


class NotPrimaryError(ToolError):
    """This node holds a replica of the vault: writes go to its primary."""

    code = "not_primary"

    def __init__(self, vault: str, primary: str, resource: str) -> None:
        where = f"node {primary} ({resource})" if resource else f"node {primary or 'unknown'}"
        super().__init__(
            f"this node holds a read-only replica of vault {vault}; its primary is {where}: "
            "send writes there (reads work here)"
        )
        self.vault, self.primary, self.resource = vault, primary, resource


class ProtocolError(NodeError):
    """A JSON-RPC protocol fault: unreadable JSON, bad request shape, unknown method or tool."""

    def __init__(self, rpc_code: int, code: str, message: str) -> None:
        super().__init__(message, code)
        self.rpc_code = rpc_code


class InsufficientPermissionError(NodeError):
    """The token is valid but lacks a permission this call needs (HTTP 403).

    The message names the tool, what it needs, what the token has and the scope to ask for;
    to a write-only caller it also names the few tools it may use (`blind`)."""

    code = "forbidden"
    request_id: str | int | None = None
    """The JSON-RPC id of the refused request, set where the request is answered."""

    def __init__(
        self,
        needed: Iterable[str],
        held: Iterable[str],
        *,
        tool: str = "this call",
        blind: Iterable[str] = (),
    ) -> None:
        self.needed = frozenset(needed)
        self.held = frozenset(held)
        missing = " and ".join(sorted(self.needed - self.held)) or "(none)"
        message = (
            f"{tool} needs the {missing} permission, which your token does not hold "
            f"(it has {' '.join(sorted(self.held)) or 'none'})"
        )
        if self.held == {"write"} and blind:
            message += (
                "; a write-only token is blind — it may add to the vault but learns nothing "
                f"of what is there, so it may call only {', '.join(blind)}"
            )
        scope = scope_name(self.needed | self.held) or scope_name(self.needed) or "allow_all"
        super().__init__(f"{message}; ask for a grant with scope {scope}")


class ListenError(Exception):
    """The address `listen` names cannot be bound (taken, or not this host's); found before
    any vault is opened or indexed."""

    def __init__(self, host: str, port: int, reason: str) -> None:
        super().__init__(
            f"cannot listen on {host}:{port} ({reason}); stop what uses it, or set listen"
            " (SECONDBRAIN_LISTEN) to a free port"
        )


class ConfigError(Exception):
    """The configuration cannot be used; `problems` lists each one for the operator."""

    def __init__(self, problems: Iterable[str]) -> None:
        self.problems = list(problems)
        super().__init__("invalid configuration:\n  " + "\n  ".join(self.problems))
