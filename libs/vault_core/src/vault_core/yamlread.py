"""Fast, strict reading of frontmatter: libyaml through PyYAML, read the way ruamel reads.

ruamel.yaml (round trip) stays the writer; reading every note of a large vault
with it costs a millisecond a note, libyaml a tenth of that. The resolvers are
YAML 1.2's core schema (`yes` is a string, `012` is twelve), as ruamel's are,
and a duplicate key is an error, as it is for ruamel. Both parsers refuse a block
whose aliases expand past ALIAS_BUDGET nodes, or that nests past MAX_DEPTH, before
anything is built from it (`check_graph`).
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

import yaml

YAMLError = yaml.YAMLError
_Base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

ALIAS_BUDGET = 5000
"""Nodes that aliases may add to a block once it is expanded: a few anchors reused stay far
below it; a billion-laughs block (ten aliases of ten aliases of …) passes it within a few
levels and is refused before any of it is built."""
MAX_DEPTH = 64
"""Nesting levels a block may have once expanded (aliases nest too): deeper ones would
exhaust the stack of whoever walks the values."""


class LimitError(yaml.YAMLError):
    """A block refused for its shape (alias expansion, nesting), not for its syntax."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


def check_graph(root: Any) -> None:
    """Refuse a composed YAML node graph (PyYAML's or ruamel's) past the budgets.

    An alias is the anchored node itself, so the graph stays small while its
    expansion is exponential: the size and the height of each node's expansion
    are counted once per node, in time linear in the graph. A node that contains
    itself expands forever.
    """
    sizes: dict[int, int] = {}
    heights: dict[int, int] = {}
    distinct = 0
    open_nodes: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        if finished:
            open_nodes.discard(key)
            children = [id(child) for child in _children(node)]
            sizes[key] = 1 + sum(sizes[child] for child in children)
            heights[key] = 1 + max((heights[child] for child in children), default=0)
            if sizes[key] - distinct > ALIAS_BUDGET:
                raise LimitError(_over_budget())
            if heights[key] > MAX_DEPTH:
                raise LimitError(f"the block nests deeper than {MAX_DEPTH} levels")
        elif key in open_nodes:
            raise LimitError("an alias refers to a node that contains it, so it never ends")
        elif key not in sizes:
            distinct += 1
            open_nodes.add(key)
            stack.append((node, True))
            stack.extend((child, False) for child in _children(node))
    if sizes[id(root)] - distinct > ALIAS_BUDGET:
        raise LimitError(_over_budget())


def _over_budget() -> str:
    return (
        f"its aliases expand to more than {ALIAS_BUDGET} nodes, past the alias budget; "
        "write the repeated values out or reuse fewer anchors"
    )


def _children(node: Any) -> list[Any]:
    value = node.value
    if not isinstance(value, list):
        return []  # a scalar
    return [part for item in value for part in (item if isinstance(item, tuple) else (item,))]


class _CoreLoader(_Base):  # type: ignore[misc]
    """SafeLoader with YAML 1.2 core-schema scalars and duplicate keys refused."""

    yaml_implicit_resolvers: ClassVar[dict[str, list[tuple[str, re.Pattern[str]]]]] = {}

    def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
        seen = set()
        for key_node, _value in node.value:
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, list | dict):
                continue  # unhashable keys are refused by the base constructor
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark,
                    f'found duplicate key "{key}"', key_node.start_mark,
                )  # fmt: skip
            seen.add(key)
        mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return mapping

    def construct_document(self, node: Any) -> Any:
        check_graph(node)
        return super().construct_document(node)


def _int(loader: _CoreLoader, node: Any) -> int:
    text = str(loader.construct_scalar(node)).replace("_", "")
    if text.lower().startswith(("0o", "+0o", "-0o")):
        return int(text.replace("o", "").replace("O", ""), 8)
    if text.lower().startswith(("0x", "+0x", "-0x")):
        return int(text, 16)
    return int(text, 10)


_CORE = (
    ("tag:yaml.org,2002:bool", r"true|True|TRUE|false|False|FALSE", "tTfF"),
    ("tag:yaml.org,2002:int", r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+", "-+0123456789"),
    ("tag:yaml.org,2002:float",
     r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)"
     r"|\.(?:nan|NaN|NAN)", "-+0123456789."),
    ("tag:yaml.org,2002:null", r"~|null|Null|NULL|", ["~", "n", "N", ""]),
    ("tag:yaml.org,2002:timestamp",
     r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}"
     r"(?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?)?", "0123456789"),
)  # fmt: skip

for _tag, _pattern, _first in _CORE:
    _CoreLoader.add_implicit_resolver(_tag, re.compile(f"^(?:{_pattern})$"), list(_first))
_CoreLoader.add_constructor("tag:yaml.org,2002:int", _int)


def load(text: str) -> Any:
    """Parse one YAML document; raises `YAMLError` with a line and column on bad input."""
    return yaml.load(text, Loader=_CoreLoader)  # noqa: S506 — a safe loader subclass


def describe(exc: Exception) -> str:
    """`problem at line L, column C` for a YAML error of either parser."""
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    mark = getattr(exc, "problem_mark", None)
    if mark is not None:
        return f"{problem} at line {mark.line + 1}, column {mark.column + 1}"
    return str(problem)
