"""Every tool the node serves, and how `tools/list` shows them.

The tools are declared beside their handlers (`@tool` in the modules of `vault_node.tools`,
one module per lifecycle: docs/node.md); this module gathers them in one fixed order and
describes them. Running a call is `vault_node.dispatch`.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import ModuleType
from typing import Any

from tickets import Ticket
from vault_node.tools import capture, find, history, maint, read, write
from vault_node.tools.base import Param, Tool, text

MODULES: tuple[ModuleType, ...] = (find, read, write, capture, maint, history)


def declared_in(module: ModuleType) -> list[Tool]:
    """The tools a module declares, in the order they stand in it."""
    return [
        value
        for value in vars(module).values()
        if isinstance(value, Tool) and value.handler.__module__ == module.__name__
    ]


TOOLS: tuple[Tool, ...] = tuple(tool for module in MODULES for tool in declared_in(module))
REGISTRY: Mapping[str, Tool] = {tool.name: tool for tool in TOOLS}
BLIND = tuple(tool.name for tool in TOOLS if tool.kind == "add")
"""What a write-only caller may call: the tools that add without looking (docs/security.md)."""
VAULT_PARAM = text("Vault (vault_list).")


def params_of(tool: Tool) -> dict[str, Param]:
    """The tool's parameters, with the generic `vault` argument where it applies."""
    return {**tool.params, "vault": VAULT_PARAM} if tool.uses_vault else dict(tool.params)


def input_schema(tool: Tool) -> dict[str, Any]:
    params = params_of(tool)
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {name: param.schema() for name, param in params.items()},
        "additionalProperties": False,
    }
    if required := [name for name, param in params.items() if param.required]:
        schema["required"] = required
    return schema


OPEN_OBJECT: dict[str, Any] = {"type": "object"}


def describe(tool: Tool) -> dict[str, Any]:
    """The tool as `tools/list` shows it. Lean: every byte is paid for in the model's context
    (a test holds the whole list for an owner under 32 KB), so the title is said once (not
    again in the annotations), an empty list is left out, all four hints are sent as declared
    (a client need not know MCP's defaults), and the outputSchema says only that a result is
    an object: its members are in every result (indented text and `structuredContent`) and
    in docs/reference/tools.md."""
    return {
        "name": tool.name,
        "title": tool.title,
        "description": tool.description,
        "inputSchema": input_schema(tool),
        "outputSchema": OPEN_OBJECT,
        "annotations": tool.hints.annotations(),
    }


def listing(ticket: Ticket) -> list[dict[str, Any]]:
    """Exactly the tools this token may call."""
    return [describe(tool) for tool in TOOLS if ticket.allows(tool.kind)]
