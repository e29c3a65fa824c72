"""How the CLI talks to a running center (HTTP only) and prints what it answers.

The bearer comes from the environment — the operator's `SECONDBRAIN_CENTER_ADMIN_TOKEN`,
or a member's `SECONDBRAIN_CENTER_TOKEN` for the verbs a member runs — and is never a
flag, never printed, never part of an error message. A failure becomes RemoteError
carrying the center's own error code and message, printed as one line by `handled`.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, ParamSpec, TypeVar

import httpx
import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from center.errors import CenterError

URL_ENV = "SECONDBRAIN_CENTER_URL"
TOKEN_ENV = "SECONDBRAIN_CENTER_ADMIN_TOKEN"  # noqa: S105 - the variable's name, not a token
MEMBER_TOKEN_ENV = "SECONDBRAIN_CENTER_TOKEN"  # noqa: S105 - the variable's name, not a token
DEFAULT_URL = "http://127.0.0.1:2021"
TIMEOUT = 30.0


class RemoteError(Exception):
    """A remote call failed; `code` is the center's error code (or a local one)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class Remote:
    """A center at `url`, called with the operator's admin token when one is set."""

    def __init__(
        self, url: str, token: str | None = None, *, env: str = TOKEN_ENV, transport: Any = None
    ) -> None:
        self.url = url.rstrip("/")
        self.env = env
        self.token = token if token is not None else os.environ.get(env)
        self.transport = transport

    def _headers(self, authenticated: bool) -> dict[str, str]:
        if not authenticated:
            return {}
        if not self.token:
            raise RemoteError("no_token", f"set {self.env} in the environment (never a flag)")
        return {"Authorization": f"Bearer {self.token}"}

    def call(
        self,
        method: str,
        path: str,
        *,
        body: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
        authenticated: bool = True,
    ) -> Any:
        """JSON (or text, for NDJSON) of a successful answer; RemoteError otherwise."""
        headers = self._headers(authenticated)
        try:
            with httpx.Client(
                base_url=self.url, timeout=TIMEOUT, transport=self.transport
            ) as client:
                response = client.request(method, path, json=body, params=params, headers=headers)
        except httpx.HTTPError as exc:
            raise RemoteError("unreachable", f"{self.url}: {type(exc).__name__}") from None
        if response.status_code >= 400:
            raise _error(response)
        if response.headers.get("content-type", "").startswith("application/json"):
            return response.json()
        return response.text


def _error(response: httpx.Response) -> RemoteError:
    try:
        error = response.json()["error"]
        return RemoteError(str(error["code"]), str(error["message"]))
    except (ValueError, KeyError, TypeError):
        return RemoteError(f"http_{response.status_code}", response.reason_phrase)


console = Console()
errors = Console(stderr=True)
Json = Annotated[bool, typer.Option("--json", help="Print JSON for scripts instead of text.")]
Url = Annotated[str, typer.Option("--url", envvar=URL_ENV, help="The center's URL (not a secret).")]
P = ParamSpec("P")
R = TypeVar("R")


def handled(verb: Callable[P, R]) -> Callable[P, R]:
    """Turn an expected failure into one line on stderr and exit status 1."""

    @functools.wraps(verb)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return verb(*args, **kwargs)
        except (RemoteError, CenterError) as exc:
            errors.print(f"error ({exc.code}): {exc.message}", markup=False, highlight=False)
        raise typer.Exit(1)

    return run


def show(value: Any, as_json: bool, fields: Sequence[str] = ()) -> None:
    """One object: JSON for scripts, `name: value` lines for people."""
    if as_json:
        print_json(console, value)
    else:
        print_fields(console, value, fields)


def show_rows(
    listed: Mapping[str, Any],
    key: str,
    as_json: bool,
    columns: Sequence[str],
    row: Callable[[Mapping[str, Any]], Mapping[str, Any]] = dict,
) -> None:
    """A listing: the whole answer as JSON for scripts, `listed[key]` as a table for people
    (each row passed through `row` first)."""
    if as_json:
        print_json(console, listed)
    else:
        print_table(console, [row(item) for item in listed[key]], columns)


def print_json(console: Console, value: Any) -> None:
    console.print_json(json.dumps(value))


def print_table(
    console: Console, rows: Sequence[Mapping[str, Any]], columns: Sequence[str]
) -> None:
    """Rows as a table of `columns`; lists are joined with commas, None shows as -."""
    table = Table(show_lines=False)
    for column in columns:
        table.add_column(column, no_wrap=column in {"id", "jti"}, overflow="fold")
    for row in rows:
        table.add_row(*(_cell(row.get(column)) for column in columns))
    console.print(table)


def print_fields(console: Console, value: Mapping[str, Any], fields: Sequence[str] = ()) -> None:
    """`name: value` lines, for one object."""
    for name in fields or list(value):
        line = Text.assemble((name, "bold"), ": ", _cell(value.get(name)))
        console.print(line, highlight=False, soft_wrap=True)  # a token must copy as one line


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, list | tuple):
        return ", ".join(str(item) for item in value) or "-"
    return str(value)
