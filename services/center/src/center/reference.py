"""The center's references, generated so they cannot drift from the code: the API
(docs/reference/center-api.md, from `create_app(...).openapi()`) and the settings
(docs/reference/center-settings.md, from `Settings`). Tests compare the committed files with
`api_page()` and `settings_page()`; `make docs` rewrites them
(`python -m center.reference docs/reference`).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from pydantic.fields import FieldInfo

from center.app import create_app
from center.config import ENV_PREFIX, Settings, load_settings
from tickets import SigningKey

METHODS = ("get", "post", "put", "patch", "delete")
INTRO = """\
# Center API reference

Generated from the center's OpenAPI schema by `make docs` (`center.reference`); a test
fails when this file and the code disagree. Do not edit it by hand. A running center
serves the same schema at `/openapi.json` (no interactive page: it would load its script
from an outside host); the guide to what the routes mean is [center.md](../center.md).

Every error has one body shape, `{"error": {"code": "...", "message": "..."}}`; request
bodies are JSON objects that refuse unknown fields (422 `invalid_request`) and are
limited to `SECONDBRAIN_CENTER_MAX_BODY_BYTES` (413 `too_large`). Authentication is a
bearer token: the operator's admin token, a member's credential (`sbm_…`), or on the
heartbeat a node's credential (`sbn_…`). Credentials and tokens appear in a response
only where a route says "shown once".

Each route lists the keys of its answer; a key is always there (null where the type
allows it) unless the table says "only when set". The objects inside answers (a list's
items, a nested object) are described once, under "Shapes inside answers" at the end.
The OAuth endpoints answer in OAuth's shapes (RFC 6749, RFC 7591, RFC 8414).

"""


def openapi() -> dict[str, Any]:
    """The schema of a center built with a throw-away key (the schema holds no key)."""
    with tempfile.TemporaryDirectory() as scratch:
        secret = SigningKey.generate().export_secret()
        settings = load_settings(data_dir=Path(scratch), secret=secret)
        schema: dict[str, Any] = create_app(settings).openapi()
    return schema


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell (no pipes, no tags, one line)."""
    return " ".join(text.replace("|", "\\|").replace("<", "&lt;").split())


def _type(schema: dict[str, Any]) -> str:
    """A JSON schema as a short phrase: `string`, `list of string`, `integer or null`."""
    if "$ref" in schema:
        return f"`{schema['$ref'].rsplit('/', 1)[-1]}`"
    if "anyOf" in schema:
        return " or ".join(_type(part) for part in schema["anyOf"])
    if "const" in schema or "enum" in schema:
        values = schema["enum"] if "enum" in schema else [schema["const"]]
        return " or ".join(f"`{json.dumps(value)}`" for value in values)
    kind = schema.get("type", "any")
    if kind == "array":
        return f"list of {_type(schema.get('items', {}))}"
    return str(kind)


def _limits(schema: dict[str, Any]) -> str:
    """Bounds and patterns, from the schema itself or the non-null branch of an anyOf."""
    parts = [schema, *schema.get("anyOf", ())]
    named = {
        "minLength": "min length",
        "maxLength": "max length",
        "minimum": "≥",
        "maximum": "≤",
        "minItems": "min items",
        "maxItems": "max items",
        "pattern": "pattern",
    }
    found = []
    for part in parts:
        for key, label in named.items():
            if key in part:
                value = part[key]
                value = int(value) if isinstance(value, float) and value.is_integer() else value
                found.append(f"{label} `{value}`")
    return ", ".join(found)


def _default(schema: dict[str, Any], required: bool) -> str:
    if required:
        return "required"
    if "default" in schema:
        value = schema["default"]
        if value is None or isinstance(value, bool):
            return f"`{str(value).lower().replace('none', 'null')}`"
        return f"`{value}`"
    return "—"


def _parameters(operation: dict[str, Any]) -> list[str]:
    params = operation.get("parameters", [])
    if not params:
        return []
    lines = [
        "| parameter | in | type | default | limits | description |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for param in params:
        schema = param.get("schema", {})
        lines.append(
            f"| `{param['name']}` | {param['in']} | {_type(schema)} | "
            f"{_default(schema, param.get('required', False))} | {_limits(schema)} | "
            f"{_cell(param.get('description', schema.get('description', '')))} |"
        )
    return [*lines, ""]


def _body(operation: dict[str, Any], schemas: dict[str, Any]) -> list[str]:
    content = operation.get("requestBody", {}).get("content", {})
    body = content.get("application/json", {}).get("schema", {})
    optional = [option.get("$ref") for option in body.get("anyOf", ()) if "$ref" in option]
    ref = body.get("$ref") or next(iter(optional), None)  # an optional body: Model | None
    if ref is None:
        return []
    name = ref.rsplit("/", 1)[-1]
    schema = schemas[name]
    required = set(schema.get("required", ()))
    lines = [
        f"Body `{name}`: {_cell(schema.get('description', ''))}",
        "",
        "| field | type | default | limits | description |",
        "| --- | --- | --- | --- | --- |",
    ]
    for field, spec in schema.get("properties", {}).items():
        lines.append(
            f"| `{field}` | {_type(spec)} | {_default(spec, field in required)} | "
            f"{_limits(spec)} | {_cell(spec.get('description', ''))} |"
        )
    return [*lines, ""]


def _answer_model(answer: dict[str, Any]) -> str | None:
    """The name of the model a response declares for its JSON body, if it declares one."""
    ref = answer.get("content", {}).get("application/json", {}).get("schema", {}).get("$ref")
    return ref.rsplit("/", 1)[-1] if ref else None


def shape(schema: dict[str, Any]) -> list[str]:
    """A response model as a table: each key, its type, whether it is always there."""
    required = set(schema.get("required", ()))
    lines = [
        "| key | type | present | description |",
        "| --- | --- | --- | --- |",
    ]
    for field, spec in schema.get("properties", {}).items():
        present = "always" if field in required else "only when set"
        lines.append(
            f"| `{field}` | {_type(spec)} | {present} | {_cell(spec.get('description', ''))} |"
        )
    return [*lines, ""]


def _answers(operation: dict[str, Any], schemas: dict[str, Any]) -> list[str]:
    lines = []
    for status, answer in operation.get("responses", {}).items():
        if not status.startswith("2"):
            continue
        if (name := _answer_model(answer)) is not None:
            schema, where = schemas[name], ""
        elif (found := _line_model(answer)) is not None:
            (media, schema), name = found, found[1].get("title", "")
            where = f" (each line of `{media}`)"
        else:
            continue
        about = _cell(schema.get("description", ""))
        lines += [f"Answer `{status}` `{name}`{where}{': ' + about if about else ''}", ""]
        lines += shape(schema)
    return lines


def _line_model(answer: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """The media type and inline model of an answer that is one object per line (NDJSON)."""
    for media, content in answer.get("content", {}).items():
        schema = content.get("schema", {})
        if media != "application/json" and schema.get("properties"):
            return media, schema
    return None


def _nested(spec: dict[str, Any], used: set[str]) -> set[str]:
    """The names of the models the fields of a response model refer to, transitively."""
    schemas = spec.get("components", {}).get("schemas", {})
    found: set[str] = set()
    frontier = list(used)
    while frontier:
        text = str(schemas[frontier.pop()].get("properties", {}))
        for name in schemas:
            if f"'#/components/schemas/{name}'" in text and name not in found:
                found.add(name)
                frontier.append(name)
    return found


def _auth(operation: dict[str, Any], schemes: dict[str, Any]) -> str:
    names = [name for entry in operation.get("security", []) for name in entry]
    if not names:
        return "none"
    return " or ".join(schemes.get(name, {}).get("description", name) for name in names)


def _responses(operation: dict[str, Any]) -> str:
    found = []
    for status, answer in operation.get("responses", {}).items():
        name = _answer_model(answer)
        types = ", ".join(answer.get("content", {})) or "no body"
        what = f"`{name}`" if name else answer.get("description", "")
        found.append(f"`{status}` {what} ({types})")
    return "; ".join(found)


def operation_section(
    method: str, path: str, operation: dict[str, Any], components: dict[str, Any]
) -> str:
    """One route: summary, description, authentication, parameters, body, responses."""
    lines = [f"### `{method.upper()} {path}`", "", f"**{operation.get('summary', '')}.**"]
    if operation.get("description"):
        lines += ["", _cell(operation["description"])]
    lines += [
        "",
        f"- authentication: {_auth(operation, components.get('securitySchemes', {}))}",
        f"- responses: {_responses(operation)}",
        "",
        *_parameters(operation),
        *_body(operation, components.get("schemas", {})),
        *_answers(operation, components.get("schemas", {})),
    ]
    return "\n".join(lines)


def api_page(schema: dict[str, Any] | None = None) -> str:
    """docs/reference/center-api.md: routes grouped by tag, in the order the app declares."""
    spec = schema or openapi()
    components = spec.get("components", {})
    groups: dict[str, list[str]] = {}
    for path, item in spec["paths"].items():
        for method in METHODS:
            if method in item:
                operation = item[method]
                tag = (operation.get("tags") or ["other"])[0]
                groups.setdefault(tag, []).append(
                    operation_section(method, path, operation, components)
                )
    body = [f"## {tag}\n\n" + "\n".join(sections) for tag, sections in groups.items()]
    return INTRO + "\n".join(body) + _shapes(spec)


def _shapes(spec: dict[str, Any]) -> str:
    """The models that answers hold inside them (a list's items, a nested object)."""
    schemas = spec.get("components", {}).get("schemas", {})
    answered = {
        name
        for item in spec["paths"].values()
        for method in METHODS
        for answer in item.get(method, {}).get("responses", {}).values()
        if (name := _answer_model(answer)) is not None
    }
    lines = ["", "## Shapes inside answers", ""]
    for name in sorted(_nested(spec, answered)):
        about = _cell(schemas[name].get("description", ""))
        lines += [f"### `{name}`", "", *([about, ""] if about else [])]
        lines += shape(schemas[name])
    return "\n".join(lines)


SETTINGS_INTRO = """\
# Center settings reference

Generated from `center.config.Settings` by `make docs` (`center.reference`); a test fails
when this file and the code disagree. Do not edit it by hand. Every setting is an
environment variable (never a flag, never a file in the repository); a bad value stops
the start with one line per problem that never shows the value. The operator guide
([operator-guide.md](../operator-guide.md)) says how to choose them.

| variable | default | meaning |
| --- | --- | --- |
"""


def _setting_default(field: FieldInfo) -> str:
    if field.is_required():
        return "required"
    value = field.default
    if value is None or value == ():
        return "unset"
    return f"`{value}`"


def settings_page() -> str:
    """docs/reference/center-settings.md: one row per setting, from the field descriptions."""
    rows = [
        f"| `{ENV_PREFIX}{name.upper()}` | {_setting_default(field)} | "
        f"{_cell(field.description or '')} |"
        for name, field in Settings.model_fields.items()
    ]
    return SETTINGS_INTRO + "\n".join(rows) + "\n"


PAGES = {"center-api.md": api_page, "center-settings.md": settings_page}


def main(argv: list[str] | None = None) -> None:
    """Write every page into the folder named on the command line (docs/reference)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not Path(args[0]).is_dir():
        sys.exit("usage: python -m center.reference DOCS_REFERENCE_DIR")
    for name, page in PAGES.items():
        (Path(args[0]) / name).write_text(page(), encoding="utf-8")


if __name__ == "__main__":
    main()
