"""Fast, strict reading of frontmatter: libyaml through PyYAML, read the way ruamel reads.

ruamel.yaml (round trip) stays the writer; reading every note of a large vault
with it costs a millisecond a note, libyaml a tenth of that. The resolvers and
scalar constructors are ruamel's YAML 1.2 ones (`yes` is a string, `017` is
seventeen, `1_000`, `0b101` and `-0x1F` are numbers, `<<` merges), a duplicate key
is an error, and a scalar ruamel cannot build (`2026-02-30`) is a YAML error.
Both parsers refuse a block whose aliases expand past ALIAS_BUDGET nodes, or that
nests past MAX_DEPTH, before anything is built from it (`check_graph`). A flat block
(`key: value`, `key: [a, b]`, `- item` lists) is read without libyaml by `load_simple`, to
the same values; whatever it is unsure of goes to libyaml."""

from __future__ import annotations

import datetime as dt
import functools
import math
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
    """SafeLoader with ruamel's YAML 1.2 scalars, merge keys, and duplicate keys refused."""

    yaml_implicit_resolvers: ClassVar[dict[str, list[tuple[str, re.Pattern[str]]]]] = {}

    def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
        own = self._own_keys(node)
        merges = self._build_merges(node)
        mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)  # flattens merges
        if not merges:
            return mapping
        # ruamel lists a mapping's own keys first, then those it merged in
        return {key: mapping[key] for key in own} | mapping

    def _own_keys(self, node: Any) -> list[Any]:
        """The keys written in the mapping itself, in order; a repeated one is refused."""
        seen: dict[Any, None] = {}
        for key_node, _ in node.value:
            if key_node.tag == _MERGE:
                continue  # a merged key may be overridden
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, list | dict):
                continue  # unhashable keys are refused by the base constructor
            if key in seen:
                raise _duplicate(node, key_node, f'key "{key}"')
            seen[key] = None
        return list(seen)

    def _build_merges(self, node: Any) -> int:
        """Build what `<<` brings in whole, as ruamel does, so its duplicates and bad values
        count; a `<<` after one that merged something is refused, as ruamel refuses it."""
        merges = merged = 0
        for key_node, value_node in node.value:
            if key_node.tag != _MERGE:
                continue
            if merged:
                raise _duplicate(node, key_node, 'merge key "<<"')
            parts = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
            for part in parts:
                self.construct_object(part, deep=True)
            merges, merged = merges + 1, merged + len(parts)
        return merges

    def construct_document(self, node: Any) -> Any:
        check_graph(node)
        return super().construct_document(node)


def _duplicate(node: Any, key_node: Any, what: str) -> yaml.constructor.ConstructorError:
    return yaml.constructor.ConstructorError(
        "while constructing a mapping", node.start_mark, f"found duplicate {what}",
        key_node.start_mark,
    )  # fmt: skip


def _not_a(node: Any, kind: str, reason: str = "") -> yaml.constructor.ConstructorError:
    because = f" ({reason})" if reason else ""
    return yaml.constructor.ConstructorError(
        None, None,
        f'"{node.value}" is not a valid {kind}{because}; quote it to keep it as text',
        node.start_mark,
    )  # fmt: skip


_BASES = {"0b": 2, "0o": 8, "0x": 16}


def _int(loader: _CoreLoader, node: Any) -> int:
    """As ruamel reads YAML 1.2: underscores dropped, `0b`/`0o`/`0x`, `017` is seventeen."""
    text = str(loader.construct_scalar(node)).replace("_", "")
    sign = -1 if text[:1] == "-" else 1
    digits = text[1:] if text[:1] in ("-", "+") else text
    base = _BASES.get(digits[:2], 10)
    digits = digits[2:] if base != 10 else digits
    try:
        return sign * int(digits, base)
    except ValueError as exc:  # `+_`, `0x_`: ruamel stops at these with an IndexError
        raise _not_a(node, "number") from exc


def _float(loader: _CoreLoader, node: Any) -> float:
    text = str(loader.construct_scalar(node)).replace("_", "").lower()
    sign = -1.0 if text[:1] == "-" else 1.0
    body = text[1:] if text[:1] in ("-", "+") else text
    if body == ".inf":
        return sign * math.inf
    if body == ".nan":
        return math.nan
    try:
        return sign * float(body)
    except ValueError as exc:  # `._`
        raise _not_a(node, "number") from exc


def _timestamp(loader: _CoreLoader, node: Any) -> dt.date:
    """As ruamel reads one: a fraction past microseconds is rounded, not cut; a date that does
    not exist (`2026-02-30`) is a YAML error here, where ruamel raises a bare ValueError."""
    match = _STAMP.match(str(loader.construct_scalar(node)))
    if match is None:
        raise _not_a(node, "timestamp")
    try:
        return _stamp(match)
    except ValueError as exc:
        raise _not_a(node, "timestamp", str(exc)) from exc


def _stamp(match: re.Match[str]) -> dt.date:
    year, month, day, hour, minute, second, fraction, tz, sign, tz_hour, tz_minute = match.groups()
    if hour is None:
        return dt.date(int(year), int(month), int(day))
    micro = int(fraction[:6].ljust(6, "0")) + (fraction[6:7] > "4") if fraction else 0
    zone = None
    if sign:
        offset = dt.timedelta(hours=int(tz_hour), minutes=int(tz_minute or 0))
        zone = dt.timezone(-offset if sign == "-" else offset)
    elif tz:
        zone = dt.UTC
    fields = int(year), int(month), int(day), int(hour), int(minute), int(second)
    if micro < 1_000_000:
        return dt.datetime(*fields, micro, zone)
    return dt.datetime(*fields, 0, zone) + dt.timedelta(seconds=1)  # .9999995 rounds up


def _tagged(loader: _CoreLoader, node: Any) -> Any:
    """A value under a tag no constructor knows (`!todo x`): ruamel keeps it, tag aside."""
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_mapping(node, deep=True)


_MERGE = "tag:yaml.org,2002:merge"
_STAMP = re.compile(
    r"^(?P<year>[0-9]{4})-(?P<month>[0-9]{1,2})-(?P<day>[0-9]{1,2})"
    r"(?:(?:[Tt]|[ \t]+)(?P<hour>[0-9]{1,2}):(?P<minute>[0-9]{2}):(?P<second>[0-9]{2})"
    r"(?:\.(?P<fraction>[0-9]*))?"
    r"(?:[ \t]*(?P<tz>Z|(?P<tz_sign>[-+])(?P<tz_hour>[0-9]{1,2})(?::(?P<tz_minute>[0-9]{2}))?))?)?$"
)
# ruamel's YAML 1.2 resolvers (ruamel.yaml.resolver). The first match wins; ruamel tries
# float before int, but no text matches both (a float has a dot or an exponent after decimal
# digits, an int neither), so int goes first, as ints are the more common.
_CORE = (
    ("tag:yaml.org,2002:bool", r"true|True|TRUE|false|False|FALSE", "tTfF"),
    ("tag:yaml.org,2002:int",
     r"[-+]?0b[0-1_]+|[-+]?0o?[0-7_]+|[-+]?[0-9_]+|[-+]?0x[0-9a-fA-F_]+", "-+0123456789"),
    ("tag:yaml.org,2002:float",
     r"[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+]?[0-9]+)?|[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+"
     r"|[-+]?\.[0-9_]+(?:[eE][-+][0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)",
     "-+0123456789."),
    (_MERGE, r"<<", "<"),
    ("tag:yaml.org,2002:null", r"~|null|Null|NULL|", ["~", "n", "N", ""]),
    ("tag:yaml.org,2002:timestamp",
     r"[0-9]{4}-[0-9]{2}-[0-9]{2}|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}"
     r":[0-9]{2}(?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?", "0123456789"),
)  # fmt: skip

for _tag, _pattern, _first in _CORE:
    _CoreLoader.add_implicit_resolver(_tag, re.compile(f"^(?:{_pattern})$"), list(_first))
_CoreLoader.add_constructor("tag:yaml.org,2002:int", _int)
_CoreLoader.add_constructor("tag:yaml.org,2002:float", _float)
_CoreLoader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp)
_CoreLoader.add_constructor(_MERGE, _CoreLoader.construct_scalar)  # `<<` anywhere but a key
_CoreLoader.add_constructor(None, _tagged)


def load(text: str) -> Any:
    """Parse one YAML document; raises `YAMLError` with a line and column on bad input."""
    simple = load_simple(text)
    if simple is not None:
        return simple
    return yaml.load(text, Loader=_CoreLoader)  # noqa: S506 — a safe loader subclass


# ------------------------------------------------------------------ the simple blocks

# Most frontmatter is flat: `key: value`, `key: [a, b]`, `key:` over `- item` lines. Read by
# these few patterns it costs a fifth of what libyaml's composing and constructing cost
# from Python. Only text whose every line is of one of these shapes is read here, with
# scalars that scan to exactly their own characters (no `: `, `#`, tab, bracket, escape,
# nothing that needs folding); anything else, however ordinary, is read by the full parser.
_KEY_LINE = re.compile(r"([^\W\d][\w-]*):(?: +(.*))?")
_ITEM_LINE = re.compile(r"( *)- +(.*)")
# A plain scalar in block context: starts with a word character, a dot or a plus (or a dash
# that is no sequence entry), holds only characters that scan as themselves, and a colon
# only before a character other than a space (`10:00:00Z`).
_BLOCK_PLAIN = re.compile(r"(?:[\w.+]|-(?=\S))(?:[\w .,'/+()-]|:(?! |$))*")
# Inside `[...]`: no comma (the separator) and no colon.
_FLOW_PLAIN = re.compile(r"(?:[\w.+]|-(?=\S))[\w .'/+()-]*")
_QUOTED = re.compile(r"\"([^\"\\]*)\"|'([^']*)'")
_UNSURE = object()


class _Scalars:
    """Resolves and builds a plain scalar exactly as `_CoreLoader` does (its resolvers, its
    constructors), without composing a document around it."""

    def __init__(self) -> None:
        self._loader = _CoreLoader("")
        # Keys and most values recur from note to note (`title`, `tags`, a vault's tags), and
        # every value built here is immutable (text, numbers, dates, None): kept and shared.
        self.plain = functools.lru_cache(maxsize=4096)(self._plain)

    def _plain(self, value: str) -> Any:
        tag = self._loader.resolve(yaml.ScalarNode, value, (True, False))
        if tag == "tag:yaml.org,2002:str":
            return value
        if tag == _MERGE:
            return _UNSURE
        node = yaml.ScalarNode(tag, value)
        try:
            return self._loader.yaml_constructors[tag](self._loader, node)
        except yaml.YAMLError:
            return _UNSURE  # the full parser reports it, with its line and column


_SCALARS = _Scalars()


def load_simple(text: str) -> dict[str, Any] | None:
    """The mapping of a flat block (see above), or None when the text is not one: then only
    the full parser (`load`) knows what it holds, or what is wrong with it. Whatever this
    returns is what `load` would return, value for value and type for type."""
    if "\t" in text or "\r" in text or "#" in text or not text.replace("\n", "").isprintable():
        return None
    result: dict[str, Any] = {}
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    key: str | None = None
    items: list[Any] | None = None  # the block sequence under `key`, once it has started
    indent = ""
    for line in lines:
        if key is not None and line.lstrip(" ").startswith("-"):
            item = _ITEM_LINE.fullmatch(line)
            if item is None or (items is not None and item.group(1) != indent):
                return None
            value = _scalar(item.group(2), _BLOCK_PLAIN)
            if value is _UNSURE:
                return None
            if items is None:
                indent, items = item.group(1), []
                result[key] = items
            items.append(value)
            continue
        matched = _KEY_LINE.fullmatch(line)
        if matched is None:
            return None
        key = _key(matched.group(1))
        if key is None or key in result:
            return None  # a key that is no string, or a repeated key: the full parser's call
        items = None
        raw = (matched.group(2) or "").rstrip(" ")
        if not raw:
            result[key] = None  # `key:` alone, unless `- item` lines follow
            continue
        value = _flow(raw) if raw.startswith("[") else _scalar(raw, _BLOCK_PLAIN)
        if value is _UNSURE:
            return None
        result[key] = value
        key = None  # a value on the key's line takes no items below it
    return result or None


def _key(text: str) -> str | None:
    value = _SCALARS.plain(text)
    return value if isinstance(value, str) else None


def _scalar(raw: str, plain: re.Pattern[str]) -> Any:
    raw = raw.rstrip(" ")
    if raw[:1] in ("'", '"'):
        quoted = _QUOTED.fullmatch(raw)
        if quoted is None:
            return _UNSURE
        return quoted.group(1) if quoted.group(1) is not None else quoted.group(2)
    if plain.fullmatch(raw) is None:
        return _UNSURE
    return _SCALARS.plain(raw)


def _flow(raw: str) -> Any:
    if not raw.endswith("]"):
        return _UNSURE
    inner = raw[1:-1]
    if not inner.strip(" "):
        return []
    values = []
    for part in inner.split(","):
        value = _scalar(part.strip(" "), _FLOW_PLAIN)
        if value is _UNSURE:
            return _UNSURE
        values.append(value)
    return values


def describe(exc: Exception) -> str:
    """`problem at line L, column C` for a YAML error of either parser."""
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    mark = getattr(exc, "problem_mark", None)
    if mark is not None:
        return f"{problem} at line {mark.line + 1}, column {mark.column + 1}"
    return str(problem)
