"""The tool references, generated from the registry so the docs cannot drift from the code.

`tools_table()` is the summary table in docs/node.md; `tools_page()` is the full reference
docs/reference/tools.md (every parameter, type, default, permission and hint). Tests check
that the committed files carry exactly this text; `make docs` rewrites both:
`python -m vault_node.reference docs/reference`.
"""

from __future__ import annotations

import sys
from itertools import dropwhile
from pathlib import Path
from typing import Any

from tickets.scopes import needed
from vault_node.registry import TOOLS, params_of
from vault_node.tools.base import Param, Tool

HEADER = "| tool | needs | hints | what it is for |\n| --- | --- | --- | --- |\n"
PAGE_INTRO = """\
# Tool reference

Generated from the node's tool registry by `make docs` (`vault_node.reference`); a test
fails when this file and the code disagree. Do not edit it by hand.

Every tool's `inputSchema` has `additionalProperties: false`; `null` counts as an absent
argument; a `list` argument takes an array of strings or one comma-separated string.
Argument problems come back as a tool error naming every bad argument (with a
did-you-mean), with code `invalid_argument`. Every result is the indented JSON in a text
block plus the same object as `structuredContent`, which always satisfies the tool's
`outputSchema`; any result may carry `truncated` and `notice` when it was cut to
`max_response_bytes`. An overwrite that displaces an existing note or attachment
(`note_create`, `note_move`, `attachment_put` with `overwrite`) needs `delete` as well.
Errors and their codes: [node.md](../node.md#errors).

"""


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


def _needs(tool: Tool) -> str:
    return " + ".join(sorted(needed(tool.kind)))


def tools_table() -> str:
    """One row per tool: name, the permissions it needs, its hints, its first sentence."""
    rows = [
        f"| `{tool.name}` | {_needs(tool)} | {_hints(tool)} | {_first_sentence(tool.description)} |"
        for tool in TOOLS
    ]
    return HEADER + "\n".join(rows) + "\n"


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def _type(param: Param) -> str:
    if param.kind == "list":
        return "list of strings"
    if param.kind == "enum":
        return "one of " + ", ".join(f"`{choice}`" for choice in param.choices)
    return param.kind


def _default(param: Param) -> str:
    if param.required:
        return "required"
    if param.default is None:
        return "—"
    if isinstance(param.default, bool):
        return f"`{str(param.default).lower()}`"
    return f"`{param.default}`"


def _range(param: Param) -> str:
    if param.clamp:
        return f"{param.clamp[0]}–{param.clamp[1]}, clamped"
    if param.reset:
        return f"{param.reset[0]}–{param.reset[1]}, else the default"
    return ""


def _parameters(tool: Tool) -> list[str]:
    params = params_of(tool)
    if not params:
        return ["No parameters."]
    lines = [
        "| parameter | type | default | range | description |",
        "| --- | --- | --- | --- | --- |",
    ]
    lines += [
        f"| `{name}` | {_type(param)} | {_default(param)} | {_range(param)} | "
        f"{_cell(param.description)} |"
        for name, param in params.items()
    ]
    return lines


def _json_type(schema: dict[str, Any]) -> str:
    kind = schema.get("type", "any")
    if kind == "array":
        return f"list of {_json_type(schema.get('items', {}))}"
    return kind if isinstance(kind, str) else " or ".join(kind)


def _returns(tool: Tool) -> str:
    properties: dict[str, Any] = tool.output.get("properties", {})
    required = set(tool.output.get("required", ()))
    shown = [
        f"`{name}`{'' if name in required else '?'} ({_json_type(schema)})"
        for name, schema in properties.items()
        if name not in ("truncated", "notice")
    ]
    return "Returns: " + ", ".join(shown) + ". A `?` marks a member that is not always present."


def _annotations(tool: Tool) -> str:
    return ", ".join(
        f"`{name}: {str(on).lower()}`" for name, on in tool.hints.annotations().items()
    )


def tool_section(tool: Tool) -> str:
    """One tool: title, description, permission, hints, parameters, result members."""
    lines = [
        f"## `{tool.name}`",
        "",
        f"**{tool.title}.** {tool.description}",
        "",
        f"- needs: {_needs(tool)}",
        f"- hints: {_annotations(tool)}",
        f"- defined in: {_defined_in(tool)}",
        "",
        *_parameters(tool),
        "",
        _returns(tool),
        "",
    ]
    return "\n".join(lines)


def _defined_in(tool: Tool) -> str:
    """A link from docs/reference/ to the module that declares the tool."""
    return f"[{tool.defined_in}](../../services/node/src/vault_node/{tool.defined_in})"


def tools_page() -> str:
    """docs/reference/tools.md: an index table, then one section per tool in registry order."""
    index = [
        "| tool | needs | defined in | what it is for |",
        "| --- | --- | --- | --- |",
        *(
            f"| [`{tool.name}`](#{tool.name}) | {_needs(tool)} | {_defined_in(tool)} | "
            f"{_cell(_first_sentence(tool.description))} |"
            for tool in TOOLS
        ),
    ]
    sections = [tool_section(tool) for tool in TOOLS]
    return PAGE_INTRO + "\n".join(index) + "\n\n" + "\n".join(sections)


def with_tools_table(page: str) -> str:
    """`page` (docs/node.md) with its tool table — the header and the rows after it —
    replaced by the generated one."""
    before, header, after = page.partition(HEADER)
    if not header:
        raise ValueError("the page has no tool table to replace")
    rest = dropwhile(lambda line: line.startswith("|"), after.splitlines(keepends=True))
    return before + tools_table() + "".join(rest)


def main(argv: list[str] | None = None) -> None:
    """Write tools.md into the folder named on the command line (docs/reference) and the
    tool table into node.md beside that folder."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not Path(args[0]).is_dir():
        sys.exit("usage: python -m vault_node.reference DOCS_REFERENCE_DIR")
    (Path(args[0]) / "tools.md").write_text(tools_page(), encoding="utf-8")
    node_page = Path(args[0]).parent / "node.md"
    node_page.write_text(with_tools_table(node_page.read_text(encoding="utf-8")), encoding="utf-8")


if __name__ == "__main__":
    main()
