"""`request create|list|approve|reject|cancel|claim`: asking for a grant, deciding, claiming."""

from __future__ import annotations

from typing import Annotated, Any

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
    member_remote,
    path_rules,
)
from center.commands.grants import GRANT_COLUMNS
from center.remote import DEFAULT_URL, TAKES_ID, Json, Remote, Url, handled, show, show_rows

app = typer.Typer(name="request", help="Ask for, decide and claim grants.", no_args_is_help=True)
REQUEST_COLUMNS = (
    *("id", "requester", "vault", "scope", "paths", "minutes", "reason", "state", "created"),
    "decided_by",
)


@app.command("create")
@handled
def request_create(
    *,
    vault: Annotated[str, typer.Option(help="A vault you are a member of.")],
    scope: GrantScope = "read",
    minutes: GrantMinutes = 15,
    reason: Reason = None,
    approver: Annotated[
        list[str] | None, typer.Option("--approver", help="Who may decide (repeat).")
    ] = None,
    read_path: ReadPaths = None,
    write_path: WritePaths = None,
    exclude: ExcludePaths = None,
    url: Url = DEFAULT_URL,
    as_json: Json = False,
) -> None:
    """Ask for a grant, as the member in SECONDBRAIN_CENTER_TOKEN."""
    body = {"vault": vault, "scope": scope, "minutes": minutes, "reason": reason}
    body["approvers"] = approver or []
    if (paths := path_rules(read_path, write_path, exclude)) is not None:
        body["paths"] = paths
    created = member_remote(url).call("POST", "/v1/requests", body=body)
    show(created if as_json else compact(created), as_json, REQUEST_COLUMNS)


@app.command("list")
@handled
def request_list(
    vault: Annotated[str | None, typer.Option(help="Only this vault.")] = None,
    state: Annotated[str | None, typer.Option(help="pending, approved, … claimed.")] = None,
    as_member: AsMember = False,
    url: Url = DEFAULT_URL,
    as_json: Json = False,
) -> None:
    """The requests you may decide or made (the operator: every one), with the lazy
    expiry applied first."""
    params = {name: value for name, value in (("vault", vault), ("state", state)) if value}
    listed = Remote.either(url, as_member).call("GET", "/v1/requests", params=params or None)
    show_rows(listed, "requests", as_json, REQUEST_COLUMNS, compact)


def _decide(
    verb: str, request_id: str, caller: Remote, as_json: bool, body: dict[str, Any]
) -> None:
    request_id = ident(request_id, "request id", "request list")
    decided = caller.call("POST", f"/v1/requests/{request_id}/{verb}", body=body)
    show(decided if as_json else compact(decided), as_json, REQUEST_COLUMNS)


@app.command("approve", context_settings=TAKES_ID)
@handled
def request_approve(
    request_id: str,
    *,
    scope: Annotated[
        str | None, typer.Option(help="Approve less than asked: at most this scope.")
    ] = None,
    minutes: Annotated[
        int | None, typer.Option(min=1, max=60, help="Approve less than asked: this long.")
    ] = None,
    reason: Reason = None,
    read_path: ReadPaths = None,
    write_path: WritePaths = None,
    exclude: ExcludePaths = None,
    as_member: AsMember = False,
    url: Url = DEFAULT_URL,
    as_json: Json = False,
) -> None:
    """Approve a pending request — as the operator, or as a member who may decide it (an
    admin or owner of the vault). Issues nothing: the requester claims. Path rules given
    narrow those asked for."""
    body: dict[str, Any] = {"scope": scope, "minutes": minutes, "reason": reason}
    if (paths := path_rules(read_path, write_path, exclude)) is not None:
        body["paths"] = paths
    _decide("approve", request_id, Remote.either(url, as_member), as_json, body)


@app.command("reject", context_settings=TAKES_ID)
@handled
def request_reject(
    request_id: str,
    *,
    reason: Reason = None,
    as_member: AsMember = False,
    url: Url = DEFAULT_URL,
    as_json: Json = False,
) -> None:
    """Reject a pending request — as the operator or a member who may decide it; the
    reason reaches the requester."""
    _decide("reject", request_id, Remote.either(url, as_member), as_json, {"reason": reason})


@app.command("cancel", context_settings=TAKES_ID)
@handled
def request_cancel(request_id: str, url: Url = DEFAULT_URL, as_json: Json = False) -> None:
    """Withdraw your own request (member in SECONDBRAIN_CENTER_TOKEN)."""
    request_id = ident(request_id, "request id", "request list")
    cancelled = member_remote(url).call("POST", f"/v1/requests/{request_id}/cancel")
    show(cancelled if as_json else compact(cancelled), as_json, REQUEST_COLUMNS)


@app.command("claim", context_settings=TAKES_ID)
@handled
def request_claim(
    request_id: str,
    resource: Annotated[
        list[str] | None, typer.Option("--resource", help="Node MCP URL (repeat).")
    ] = None,
    url: Url = DEFAULT_URL,
    as_json: Json = False,
) -> None:
    """Claim your approved request and print the grant's token — once."""
    request_id = ident(request_id, "request id", "request list")
    body = {"resource": resource or []}
    claimed = member_remote(url).call("POST", f"/v1/requests/{request_id}/claim", body=body)
    show(claimed if as_json else compact(claimed), as_json, (*GRANT_COLUMNS, "audience", "token"))
