"""The request context: who is calling and what the node holds, and one tool call in it.

Every part of the node that answers a request takes these (dispatch, resources, prompts,
completions, the transport), so they live apart from the tools' declarations.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tickets import Ticket, ToolKind
from vault_core import Actor, Library, OpenVault, Vault
from vault_node.config import NodeConfig

if TYPE_CHECKING:
    from vault_node.directory import Directory
    from vault_node.metrics import Metrics
    from vault_node.shipping import Replicator

Remote = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
"""Runs one JSON-RPC request for a vault on the node that holds it; the result."""


@dataclass(frozen=True)
class Context:
    """Who is calling and what the node holds: the same for every call of one request."""

    library: Library
    config: NodeConfig
    ticket: Ticket
    metrics: Metrics | None = None
    replicator: Replicator | None = None
    """Gates writes on the vault's lease and ships their commits (None: no center)."""
    directory: Directory | None = None
    """Where the deployment's other vaults live (vault_list shows them)."""
    remote: Remote | None = None
    """Runs a request for a vault on the node holding it, and returns its result
    (resources/list pages through other nodes' vaults with it); None on a forwarded call."""

    def vaults_elsewhere(self) -> list[str]:
        """The vaults the token reaches that other nodes of the deployment hold and this one
        does not (docs/design.md#one-address); none while no one address is known."""
        if self.directory is None:
            return []
        here = set(self.library.names())
        return [
            entry.vault
            for entry in self.directory.entries()
            if entry.vault not in here and self.ticket.allows_vault(entry.vault)
        ]

    @property
    def actor(self) -> Actor:
        return Actor(self.ticket.principal, self.ticket.grant_id)

    @property
    def sees_content(self) -> bool:
        return self.ticket.sees_content


@dataclass
class Call:
    """One tool call as a handler sees it: checked arguments and the resolved vault."""

    args: dict[str, Any]
    context: Context
    opened: OpenVault | None = None
    touched: dict[str, Any] = field(default_factory=dict)  # extra audit fields (never content)
    content: list[dict[str, Any]] = field(default_factory=list)
    """Content blocks sent after the result's text block (an image a tool shows)."""

    @property
    def vault(self) -> Vault:
        assert self.opened is not None
        return self.opened.vault

    @property
    def actor(self) -> Actor:
        return self.context.actor

    def require(self, kind: ToolKind, *, displaces: bool = False) -> None:
        """Raise unless the token allows this (e.g. `delete` for an overwrite that displaces)."""
        self.context.ticket.require(kind, displaces=displaces)
