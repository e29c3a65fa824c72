"""`grant issue|list|revoke`: grants by the operator or by an admin or owner member of the vault."""

from __future__ import annotations

from typing import Annotated

import typer

from center.commands._shared import (
    AsMember,
    ExcludePaths,
    GrantMinutes,
    GrantScope,
    ReadPaths,
    Reason,
    WritePaths,
    compact,
    ident,
    member_ident,
    path_rules,
)
from center.remote import DEFAULT_URL, TAKES_ID, Json, Remote, Url, handled, show, show_rows

app = typer.Typer(name="grant", help="Issue, list and revoke grants.", no_args_is_help=True)
GRANT_COLUMNS = (
    *("id", "vault", "scope", "paths", "grantee", "issued_by", "depth", "expiry"),
    "revoked",
)


@app.command("issue")
@handled
def grant_issue(
    *,
    vault: Annotated[str, typer.Option(help="The vault the grant is for.")],
    scope: GrantScope = "read",
    minutes: GrantMinutes = 15,
    grantee: Annotated[str | None, typer.Option(help="A member of the vault.")] = None,
    resource: Annotated[
        list[str] | None, typer.Option("--resource", help="Node MCP URL (repeat).")
    ] = None,
    reason: Reason = None,
    read_path: ReadPaths = None,
    write_path: WritePaths = None,
    exclude: ExcludePaths = None,
    as_member: AsMember = False,
    url: Url = DEFAULT_URL,
    as_json: Json = False,
) -> None:
    """Issue a grant — as the operator, or as an admin or owner member of the vault — and
    print its token, once. Its path rules lie within yours; without any, it gets yours."""
    if grantee is not None:
        grantee = member_ident(grantee)
    body = {"vault": vault, "scope": scope, "minutes": minutes, "grantee": grantee}
    body.update(reason=reason, resource=resource or [])
    if (paths := path_rules(read_path, write_path, exclude)) is not None:
        body["paths"] = paths
    issued = Remote.either(url, as_member).call("POST", "/v1/grants", body=body)
    show(issued if as_json else compact(issued), as_json, (*GRANT_COLUMNS, "audience", "token"))


@app.command("list")
@handled
def grant_list(
    vault: Annotated[str | None, typer.Argument(help="Only this vault.")] = None,
    as_member: AsMember = False,
    url: Url = DEFAULT_URL,
    as_json: Json = False,
) -> None:
    """Unexpired grants you may see (never their tokens)."""
    params = {"vault": vault} if vault else None
    listed = Remote.either(url, as_member).call("GET", "/v1/grants", params=params)
    show_rows(listed, "grants", as_json, GRANT_COLUMNS, compact)


@app.command("revoke", context_settings=TAKES_ID)
@handled
def grant_revoke(
    grant_id: str, as_member: AsMember = False, url: Url = DEFAULT_URL, as_json: Json = False
) -> None:
    """Revoke a grant and every grant delegated under it."""
    grant_id = ident(grant_id, "grant id", "grant list")
    show(Remote.either(url, as_member).call("DELETE", f"/v1/grants/{grant_id}"), as_json)
