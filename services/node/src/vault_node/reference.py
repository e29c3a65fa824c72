"""The tool reference of docs/node.md, generated from the registry so the two cannot drift.

`python -c "from vault_node.reference import tools_table; print(tools_table())"` prints
the table; a test checks that docs/node.md carries exactly this text.
"""

from __future__ import annotations

from tickets.scopes import needed
from vault_node.tools import TOOLS
from vault_node.tools.base import Tool

HEADER = "| tool | needs | hints | what it is for |\n| --- | --- | --- | --- |\n"


def _hints(tool: Tool) -> str:
    hints = tool.hints
    named = [
        ("read-only", hints.read_only),
        ("destructive", hints.destructive),
        ("idempotent", hints.idempotent),
    ]
    return ", ".join(name for name, on in named if on) or "—"


def _first_sentence(text: str) -> str:
    return text.split(". ", maxsplit=1)[0].rstrip(".") + "."


def tools_table() -> str:
    """One row per tool: name, the permissions it needs, its hints, its first sentence."""
    rows = [
        f"| `{tool.name}` | {' + '.join(sorted(needed(tool.kind)))} | {_hints(tool)} | "
        f"{_first_sentence(tool.description)} |"
        for tool in TOOLS
    ]
    return HEADER + "\n".join(rows) + "\n"
