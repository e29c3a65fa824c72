"""How the CLI talks to a running center (HTTP only) and prints what it answers.

The bearer comes from the environment — the operator's `SECONDBRAIN_CENTER_ADMIN_TOKEN`,
or a member's `SECONDBRAIN_CENTER_TOKEN` for the verbs a member runs — and is never a
flag, never printed, never part of an error message. A failure becomes RemoteError
carrying the center's own error code and message, printed as one line by `handled`; a
refused bearer or an unreachable URL names the variable or flag to fix and the URL tried.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, ParamSpec, TypeVar

import typer
from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from center.errors import CenterError

if TYPE_CHECKING:
    import httpx

URL_ENV = "SECONDBRAIN_CENTER_URL"
TOKEN_ENV = "SECONDBRAIN_CENTER_ADMIN_TOKEN"  # noqa: S105 - the variable's name, not a token
MEMBER_TOKEN_ENV = "SECONDBRAIN_CENTER_TOKEN"  # noqa: S105 - the variable's name, not a token
DEFAULT_URL = "http://127.0.0.1:2021"
TIMEOUT = 30.0
TIME_FIELDS = frozenset(
    {
        "client_id_issued_at",
        "created",
        "decided",
        "expiry",
        "expires_at",
        "iat",
        "last_seen",
        "last_sign_in",
        "revoked",
        "signed_at",
        "started",
        "token_expires_at",
        "updated",
        "used",
    }
)
"""Fields that hold epoch seconds: text shows them as local ISO 8601, JSON adds `<name>_iso`."""
HINTS = {
    TOKEN_ENV: "set it to the admin token the center runs with (`secondbrain up` keeps it in"
    " <data-dir>/center/admin.token)",
    MEMBER_TOKEN_ENV: "set it to your member credential (printed by `member add`, or anew by"
    " `member set --rotate-credential`)",
}


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

    @classmethod
    def either(cls, url: str, as_member: bool = False) -> Remote:
        """For a verb both the operator and a member may run: the member's token with
        `as_member`, else the admin token when set, else the member's when that is set."""
        if as_member or (not os.environ.get(TOKEN_ENV) and os.environ.get(MEMBER_TOKEN_ENV)):
            return cls(url, env=MEMBER_TOKEN_ENV)
        return cls(url)

    def _headers(self, authenticated: bool) -> dict[str, str]:
        if not authenticated:
            return {}
        if not self.token:
            if self.env == TOKEN_ENV:
                wanted = f"{TOKEN_ENV} (the operator) or {MEMBER_TOKEN_ENV} (a member)"
                raise RemoteError("no_token", f"set {wanted} in the environment (never a flag)")
            hint = HINTS[self.env]
            if os.environ.get(TOKEN_ENV):  # the operator ran a member's verb
                hint += (
                    f". {TOKEN_ENV} is set, but this verb acts as a member, with that member's"
                    " credential; as the operator, `grant issue --vault V [--grantee M]` gives"
                    " an agent a token for up to 60 minutes"
                )
            raise RemoteError(
                "no_token", f"set {self.env} in the environment (never a flag): {hint}"
            )
        return {"Authorization": f"Bearer {self.token}"}

    def _check_url(self) -> None:
        if not self.url.startswith(("http://", "https://")):
            raise RemoteError(
                "bad_url",
                f"the center URL {self.url!r} (--url or {URL_ENV}) needs http:// or https://,"
                f" e.g. {DEFAULT_URL}",
            )

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
        import httpx  # noqa: PLC0415 - `--help` and the local verbs never load it

        self._check_url()
        headers = self._headers(authenticated)
        try:
            with httpx.Client(
                base_url=self.url, timeout=TIMEOUT, transport=self.transport
            ) as client:
                response = client.request(method, path, json=body, params=params, headers=headers)
        except httpx.HTTPError as exc:
            raise RemoteError(
                "unreachable",
                f"no center answers at {self.url} ({_why(exc)}); check --url or {URL_ENV},"
                " or start the center",
            ) from None
        if response.status_code == 401 and authenticated:
            raise RemoteError(
                "unauthorized",
                f"the center at {self.url} refused the token in {self.env}; {HINTS[self.env]}",
            )
        if response.status_code >= 400:
            raise _error(response)
        if response.headers.get("content-type", "").startswith("application/json"):
            return response.json()
        return response.text


def _why(exc: httpx.HTTPError) -> str:
    import httpx  # noqa: PLC0415 - loaded by the call that failed

    if isinstance(exc, httpx.ConnectError):
        return "connection refused or host not found"
    if isinstance(exc, httpx.TimeoutException):
        return f"no answer within {TIMEOUT:.0f} s"
    return type(exc).__name__


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
# A verb whose argument is an id the center made (a kid, a jti, a member id) takes one that
# begins with '-' as the id, not as an unknown option: one in 64 of them does. No verb has
# a one-letter option, so nothing else is swallowed.
TAKES_ID: dict[str, Any] = {"ignore_unknown_options": True}
P = ParamSpec("P")
R = TypeVar("R")


def handled(verb: Callable[P, R]) -> Callable[P, R]:
    """Turn an expected failure into one line on stderr and exit status 1."""

    @functools.wraps(verb)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return verb(*args, **kwargs)
        except (RemoteError, CenterError) as exc:
            errors.print(
                f"error ({exc.code}): {exc.message}", markup=False, highlight=False, soft_wrap=True
            )
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
    """JSON for scripts: the center's answer, each epoch time beside a `<name>_iso` field."""
    console.print_json(json.dumps(with_iso(value)))


def iso(seconds: float) -> str:
    """Epoch seconds as ISO 8601 in the local zone, to the second."""
    return datetime.fromtimestamp(seconds).astimezone().isoformat(timespec="seconds")


def with_iso(value: Any) -> Any:
    """`value` with `<name>_iso` added beside every epoch field of TIME_FIELDS."""
    if isinstance(value, list):
        return [with_iso(item) for item in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for name, item in value.items():
        out[name] = with_iso(item)
        if name in TIME_FIELDS and _epoch(item):
            out[f"{name}_iso"] = iso(item)
    return out


def _epoch(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def print_table(
    console: Console, rows: Sequence[Mapping[str, Any]], columns: Sequence[str]
) -> None:
    """Rows as a table of `columns`; lists are joined with commas, None shows as -. A table
    wider than the terminal (or a pipe's 80 columns) would cut ids, so each row is then
    printed as `name: value` lines, rows apart by a blank line."""
    if not rows:
        console.print("(none)", highlight=False)
        return
    cells = [[_cell(row.get(column), column) for column in columns] for row in rows]
    widths = [
        max(map(cell_len, [column, *(line[n] for line in cells)]))
        for n, column in enumerate(columns)
    ]
    if sum(widths) + 3 * len(columns) + 1 <= console.width:  # padding and borders
        table = Table(show_lines=False)
        for column in columns:
            table.add_column(column, no_wrap=True)
        for line in cells:
            table.add_row(*line)
        console.print(table)
        return
    for number, row in enumerate(rows):
        if number:
            console.print()
        print_fields(console, row, columns)


def print_fields(console: Console, value: Mapping[str, Any], fields: Sequence[str] = ()) -> None:
    """`name: value` lines, for one object."""
    for name in fields or list(value):
        line = Text.assemble((name, "bold"), ": ", _cell(value.get(name), name))
        console.print(line, highlight=False, soft_wrap=True)  # a token must copy as one line


def _cell(value: Any, name: str = "") -> str:
    if value is None:
        return "-"
    if name in TIME_FIELDS and _epoch(value):
        return iso(value)
    if isinstance(value, list | tuple):
        return ", ".join(str(item) for item in value) or "-"
    return str(value)
