"""What the verbs of `center.commands` share: the options several take (vaults, path rules,
`--as-member`, a grant's scope and lifetime) and the checks they make before any call."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import typer

from center.errors import InvalidArgumentError
from center.names import Rules, check_member_id, rules_from_args
from center.remote import MEMBER_TOKEN_ENV, Remote, RemoteError

AsMember = Annotated[
    bool,
    typer.Option(
        "--as-member",
        help="Ask as the member in SECONDBRAIN_CENTER_TOKEN (also the default when"
        " SECONDBRAIN_CENTER_ADMIN_TOKEN is not set).",
    ),
]
ReadPaths = Annotated[
    list[str] | None,
    typer.Option(
        "--read-path",
        metavar="VAULT:FOLDER",
        help="Only this folder of the vault may be read (repeat); without a --read-path"
        " for a vault, the whole vault (minus any --exclude).",
    ),
]
WritePaths = Annotated[
    list[str] | None,
    typer.Option(
        "--write-path",
        metavar="VAULT:FOLDER",
        help="Only this folder may be written (repeat; inside the --read-path folders, if"
        " any); default: wherever it may read.",
    ),
]
ExcludePaths = Annotated[
    list[str] | None,
    typer.Option(
        "--exclude",
        metavar="VAULT:FOLDER",
        help="Neither read nor write this folder inside a --read-path (repeat).",
    ),
]
GrantScope = Annotated[str, typer.Option(help="read (default), write, read_write, …")]
GrantMinutes = Annotated[int, typer.Option(min=1, max=60, help="Grant lifetime, 1-60.")]
Reason = Annotated[str | None, typer.Option(help="Why; recorded in the audit.")]


def path_rules(
    read: list[str] | None, write: list[str] | None, exclude: list[str] | None
) -> Rules | None:
    """The rules the options give (None: none given)."""
    try:
        given = rules_from_args(read or [], write or [], exclude or [])
    except InvalidArgumentError as exc:
        raise RemoteError("invalid_argument", f"path rule: {exc.problem}") from None
    return given or None


def compact(item: Mapping[str, Any]) -> dict[str, Any]:
    """A row with its path rules on one line (`-`: the whole of every vault)."""
    value = dict(item)
    if "paths" in value:
        from center import rules  # noqa: PLC0415 - the key libraries it needs: only when used

        value["paths"] = rules.describe(value["paths"], value.get("scope")) or None
    return value


def member_ident(value: str) -> str:
    """A member id checked by the center's own rule before it goes into a call."""
    try:
        return check_member_id(value)
    except InvalidArgumentError as exc:
        raise RemoteError("invalid_argument", f"member id: {exc.problem}") from None


def ident(value: str, what: str, listing: str) -> str:
    """An id that goes into a URL path: one segment, as the center makes them."""
    if not value or not value.isprintable() or any(c in value for c in "/?#% \\"):
        raise RemoteError(
            "invalid_argument", f"{what}: not an id the center makes; copy it from `{listing}`"
        )
    return value


def member_remote(url: str) -> Remote:
    """The center called as the member in SECONDBRAIN_CENTER_TOKEN."""
    return Remote(url, env=MEMBER_TOKEN_ENV)
