"""The shape of tool results: output-schema building blocks and honest truncation.

A result is one JSON object, sent twice (indented text and `structuredContent`). It
never exceeds `max_response_bytes`: lists and long strings are cut, and the result
says so (`truncated`, `notice`) and how to ask for less (docs/design.md#result-shape).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import orjson

STR: dict[str, Any] = {"type": "string"}
INT: dict[str, Any] = {"type": "integer"}
NUM: dict[str, Any] = {"type": "number"}
BOOL: dict[str, Any] = {"type": "boolean"}
ANY_OBJ: dict[str, Any] = {"type": "object"}
STRS: dict[str, Any] = {"type": "array", "items": STR}


def arr(items: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": dict(items)}


def obj(required: Mapping[str, Any], optional: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """An object schema: `required` members always present, `optional` ones sometimes."""
    return {
        "type": "object",
        "properties": {**required, **(optional or {})},
        "required": list(required),
    }


def result_schema(
    required: Mapping[str, Any], optional: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """A tool's outputSchema: like `obj`, plus the truncation members every result may carry."""
    schema = obj(required, optional)
    schema["properties"].setdefault("truncated", BOOL)
    schema["properties"].setdefault("notice", STR)
    return schema


WRITE_FIELDS: dict[str, Any] = {"path": STR, "vault": STR, "bytes": INT, "content_hash": STR}
WRITE_OPTIONAL: dict[str, Any] = {
    "created": BOOL,
    "deleted": BOOL,
    "dry_run": BOOL,
    "diff": STR,
    "message": STR,
    "hint": STR,
    "warnings": STRS,  # what did not follow a write that is on disk (index, history)
}


def write_schema(extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The common write answer (docs/design.md#tool-contract), with a tool's own members."""
    return result_schema(WRITE_FIELDS, {**WRITE_OPTIONAL, **(extra or {})})


def encode_bytes(value: Any) -> bytes:
    """The indented UTF-8 JSON of the text content: orjson writes exactly what
    `json.dumps(indent=2, ensure_ascii=False)` writes, twenty times faster. What orjson
    refuses (a lone surrogate from a client's `\\ud800`, a non-string key) goes the slow way."""
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2)
    except (orjson.JSONEncodeError, TypeError):
        return json.dumps(value, ensure_ascii=False, indent=2).encode("utf-8", "surrogatepass")


def encode(value: Any) -> str:
    return encode_bytes(value).decode("utf-8", "surrogatepass")


def size(value: Any) -> int:
    return len(encode_bytes(value))


def fit(
    result: dict[str, Any], limit: int, actual: int | None = None
) -> tuple[dict[str, Any], bool]:
    """The result cut down to `limit` bytes of indented JSON; True when something was cut.

    `actual` is the result's size when the caller has measured it already."""
    actual = size(result) if actual is None else actual
    if actual <= limit:
        return result, False
    cut = dict(result)
    cut["truncated"] = True
    cut["notice"] = (
        f"result truncated: it was {actual} bytes, over the limit of {limit} bytes; ask for "
        "less with limit/offset, a narrower prefix, or (for one note) a heading"
    )
    for _ in range(200):
        if size(cut) <= limit:
            return cut, True
        if not _shrink_largest(cut):
            break
    return _last_resort(cut, limit), True


def _shrink_largest(result: dict[str, Any]) -> bool:
    """Halve the largest list or string member (one level into nested objects)."""
    candidates: list[tuple[int, dict[str, Any], str]] = []
    for key, value in result.items():
        if key == "notice":
            continue
        if isinstance(value, list | str) and len(value) > 0:
            candidates.append((size(value), result, key))
        elif isinstance(value, dict):
            candidates += [
                (size(v), value, k)
                for k, v in value.items()
                if isinstance(v, list | str) and len(v) > 0
            ]
    if not candidates:
        return False
    _, holder, key = max(candidates, key=lambda c: c[0])
    value = holder[key]
    if isinstance(value, list):
        holder[key] = value[: len(value) // 2]
    else:
        holder[key] = value[: len(value) // 2] + " …[cut]"
    return True


def _last_resort(result: dict[str, Any], limit: int) -> dict[str, Any]:
    keep = {
        k: v for k, v in result.items() if not isinstance(v, list | dict | str) or k == "notice"
    }
    for key, value in result.items():
        if isinstance(value, str) and key != "notice":
            keep[key] = value[:200]
        elif isinstance(value, list):
            keep[key] = []
        elif isinstance(value, dict):
            keep[key] = {}
    return keep


def primary_count(result: Mapping[str, Any]) -> int | None:
    """How many results a call produced: the length of its first list member."""
    for value in result.values():
        if isinstance(value, list):
            return len(value)
    return None
