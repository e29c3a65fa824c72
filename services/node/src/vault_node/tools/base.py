"""What every tool is made of: its parameters, its declaration, and the call it handles.

Parameters check themselves (type, trimming, list-or-comma-string, clamps), so a
handler only ever sees arguments of the declared types with defaults filled in.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from tickets import ToolKind
from vault_node.context import Call

Kind = Literal["string", "integer", "boolean", "list", "object", "enum"]
_JSON_TYPE = {
    "string": "string",
    "integer": "integer",
    "boolean": "boolean",
    "object": "object",
    "enum": "string",
}
_TYPE_NAME = {
    "string": "a string",
    "integer": "an integer",
    "boolean": "true or false",
    "list": "a list of strings (or one comma-separated string)",
    "object": "an object",
    "enum": "a string",
}


def _kind_of(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    return "object" if isinstance(value, dict) else type(value).__name__


@dataclass(frozen=True)
class Param:
    """One tool argument: its JSON type, what it means, and how it is read."""

    kind: Kind
    description: str
    required: bool = False
    default: Any = None
    trim: bool = True
    choices: tuple[str, ...] = ()
    clamp: tuple[int, int] | None = None  # out of range → the nearest bound
    reset: tuple[int, int] | None = None  # out of range → the default
    missing_hint: str = ""

    def schema(self) -> dict[str, Any]:
        found: dict[str, Any] = {"description": self.description}
        if self.kind == "list":  # one JSON type per parameter: single-type clients reject unions
            found["type"] = "array"
            found["items"] = {"type": "string"}
        else:
            found["type"] = _JSON_TYPE[self.kind]
        if self.choices:
            found["enum"] = list(self.choices)
        if self.default is not None and self.default is not False:  # a flag is off unless set
            found["default"] = self.default
        return found

    def read(self, name: str, value: Any) -> tuple[Any, str | None]:
        """The value as the handler gets it, or a problem naming the argument."""
        expected = f"argument '{name}' must be {_TYPE_NAME[self.kind]}, got {_kind_of(value)}"
        reader = getattr(self, f"_read_{self.kind}")
        result: tuple[Any, str | None] = reader(name, value, expected)
        return result

    def _read_string(self, name: str, value: Any, expected: str) -> tuple[Any, str | None]:
        if not isinstance(value, str):
            return None, expected
        return (value.strip() if self.trim else value), None

    def _read_enum(self, name: str, value: Any, expected: str) -> tuple[Any, str | None]:
        if not isinstance(value, str):
            return None, expected
        if value.strip() not in self.choices:
            return None, (
                f"argument '{name}' must be one of {', '.join(self.choices)}, got {value!r}"
                + suggest(value.strip(), self.choices)
            )
        return value.strip(), None

    def _read_integer(self, name: str, value: Any, expected: str) -> tuple[Any, str | None]:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None, expected
        if isinstance(value, float) and (not math.isfinite(value) or not value.is_integer()):
            return None, f"argument '{name}' must be a whole number, got {value}"
        number = int(value)
        if self.reset and not self.reset[0] <= number <= self.reset[1]:
            return self.default, None
        if self.clamp:
            number = min(max(number, self.clamp[0]), self.clamp[1])
        return number, None

    def _read_boolean(self, name: str, value: Any, expected: str) -> tuple[Any, str | None]:
        return (value, None) if isinstance(value, bool) else (None, expected)

    def _read_list(self, name: str, value: Any, expected: str) -> tuple[Any, str | None]:
        if isinstance(value, str):
            value = value.split(",")
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            return None, expected
        return [v.strip() for v in value if v.strip()], None

    def _read_object(self, name: str, value: Any, expected: str) -> tuple[Any, str | None]:
        return (value, None) if isinstance(value, dict) else (None, expected)


def text(
    description: str,
    *,
    required: bool = False,
    trim: bool = True,
    hint: str = "",
    default: str | None = None,
) -> Param:
    return Param(
        "string", description, required=required, trim=trim, missing_hint=hint, default=default
    )


def integer(
    description: str,
    default: int | None = None,
    *,
    clamp: tuple[int, int] | None = None,
    reset: tuple[int, int] | None = None,
    required: bool = False,
) -> Param:
    return Param(
        "integer", description, required=required, default=default, clamp=clamp, reset=reset
    )


def flag(description: str, default: bool = False) -> Param:
    return Param("boolean", description, default=default)


def strings(description: str) -> Param:
    return Param("list", description)


def choice(
    description: str,
    choices: tuple[str, ...],
    default: str | None = None,
    *,
    required: bool = False,
) -> Param:
    return Param("enum", description, required=required, default=default, choices=choices)


def mapping(description: str) -> Param:
    return Param("object", description)


def suggest(word: str, known: tuple[str, ...] | list[str]) -> str:
    close = difflib.get_close_matches(word, list(known), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def check_arguments(
    params: Mapping[str, Param], raw: Mapping[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """Read every argument; collect every problem (unknown, missing, wrong type) at once."""
    values: dict[str, Any] = {}
    problems = [
        f"unknown argument '{name}'" + suggest(name, list(params))
        for name in raw
        if name not in params
    ]
    for name, param in params.items():
        value = raw.get(name)
        if value is None:  # null counts as absent: models send it for optional arguments
            if param.required:
                hint = f": {param.missing_hint}" if param.missing_hint else ""
                problems.append(f"missing required argument '{name}'{hint}")
            values[name] = param.default
            continue
        read, problem = param.read(name, value)
        if problem:
            problems.append(problem)
        values[name] = read
    return values, problems


@dataclass(frozen=True)
class Hints:
    """The four MCP tool annotations, always all set."""

    read_only: bool
    destructive: bool
    idempotent: bool
    open_world: bool = False

    def annotations(self) -> dict[str, bool]:
        return {
            "readOnlyHint": self.read_only,
            "destructiveHint": self.destructive,
            "idempotentHint": self.idempotent,
            "openWorldHint": self.open_world,
        }


READS = Hints(read_only=True, destructive=False, idempotent=True)
CHANGE = Hints(read_only=False, destructive=True, idempotent=False)
ADD = Hints(read_only=False, destructive=False, idempotent=False)
SET = Hints(read_only=False, destructive=True, idempotent=True)
TOGGLE = Hints(read_only=False, destructive=False, idempotent=True)


Handler = Callable[[Call], dict[str, Any]]


@dataclass(frozen=True, kw_only=True)
class Tool:
    """A tool declared once: name, copy for the model, schemas, hints, permission, handler."""

    name: str
    title: str
    description: str
    kind: ToolKind
    hints: Hints
    params: Mapping[str, Param]
    output: Mapping[str, Any]
    handler: Handler
    uses_vault: bool = True
    blind: tuple[str, ...] = ()
    """For an `add` tool: the members of its answer that follow from the call alone — all a
    caller who cannot read is told, so no answer of it depends on what the vault holds."""

    @property
    def defined_in(self) -> str:
        """The module of its handler, as a path under the node's package (`tools/write.py`)."""
        return self.handler.__module__.removeprefix("vault_node.").replace(".", "/") + ".py"


def tool(
    *,
    title: str,
    description: str,
    kind: ToolKind,
    hints: Hints,
    params: Mapping[str, Param],
    output: Mapping[str, Any],
    name: str | None = None,
    uses_vault: bool = True,
    blind: tuple[str, ...] = (),
) -> Callable[[Handler], Tool]:
    """Declare the function below as a tool, named after it unless `name` says otherwise.

    The declaration stands right above its handler, so a reader sees a tool's parameters,
    permission and answer where its code is; `vault_node.registry` collects every one."""

    def declare(handler: Handler) -> Tool:
        return Tool(
            name=name or handler.__name__,
            title=title,
            description=description,
            kind=kind,
            hints=hints,
            params=params,
            output=output,
            handler=handler,
            uses_vault=uses_vault,
            blind=blind,
        )

    return declare
