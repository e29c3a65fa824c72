"""`token issue|list|revoke`: agent tokens a member mints from its credential, up to 90 days."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from center.commands._shared import (
    AsMember,
    ExcludePaths,
    ReadPaths,
    WritePaths,
    compact,
    ident,
    member_ident,
    member_remote,
    path_rules,
)
from center.remote import (
    DEFAULT_URL,
    TAKES_ID,
    Json,
    Remote,
    RemoteError,
    Url,
    handled,
    show,
    show_rows,
)

app = typer.Typer(name="token", help="Mint, list and revoke agent tokens.", no_args_is_help=True)
TOKEN_COLUMNS = ("jti", "subject", "scope", "vaults", "paths", "created", "expires_at", "revoked")
MAX_TOKEN_DAYS = 90


def _lifetime(minutes: int | None, days: int | None) -> int:
    if minutes is not None and days is not None:
        raise RemoteError("invalid_argument", "use --minutes or --days, not both")
    if days is not None:
        return days * 24 * 60
    return minutes if minutes is not None else 60


@app.command("issue")
@handled
def token_issue(
    *,
    resource: Annotated[
        list[str] | None,
        typer.Option("--resource", help="Node MCP URL (repeat); default: the nodes of the vaults."),
    ] = None,
    scope: Annotated[str | None, typer.Option(help="At most your scope (default: all of it).")] = (
        None
    ),
    vault: Annotated[
        list[str] | None, typer.Option("--vault", help="Only this vault (repeat); default: all.")
    ] = None,
    minutes: Annotated[
        int | None, typer.Option(min=1, max=MAX_TOKEN_DAYS * 24 * 60, help="Lifetime (default 60).")
    ] = None,
    days: Annotated[
        int | None, typer.Option(min=1, max=MAX_TOKEN_DAYS, help="Lifetime in days.")
    ] = (None),
    member: Annotated[
        str | None,
        typer.Option(
            "--member",
            help="Mint for this member (admins and owners: vaults you manage and it holds).",
        ),
    ] = None,
    read_path: ReadPaths = None,
    write_path: WritePaths = None,
    exclude: ExcludePaths = None,
    url: Url = DEFAULT_URL,
    as_json: Json = False,
) -> None:
    """Exchange your member credential (SECONDBRAIN_CENTER_TOKEN) for an agent token for a
    node — yours, or with --member one for a member of a vault you manage — and print it,
    once. Up to 90 days; revoke it with `token revoke`. Its path rules lie within the
    member's; a vault without any keeps the member's."""
    body: dict[str, Any] = {"resource": resource or [], "minutes": _lifetime(minutes, days)}
    if member is not None:
        body["member"] = member_ident(member)
    if scope is not None:
        body["scope"] = scope
    if vault:
        body["vaults"] = vault
    if (paths := path_rules(read_path, write_path, exclude)) is not None:
        body["paths"] = paths
    minted = member_remote(url).call("POST", "/v1/tokens", body=body)
    show(minted if as_json else compact(minted), as_json, (*TOKEN_COLUMNS, "audience", "token"))


@app.command("list")
@handled
def token_list(as_member: AsMember = False, url: Url = DEFAULT_URL, as_json: Json = False) -> None:
    """Unexpired agent tokens: every one (operator), or your own (--as-member). Never the
    token itself."""
    listed = Remote.either(url, as_member).call("GET", "/v1/tokens")
    show_rows(listed, "tokens", as_json, TOKEN_COLUMNS, compact)


@app.command("revoke", context_settings=TAKES_ID)
@handled
def token_revoke(
    jti: Annotated[str, typer.Argument(help="The token's jti, from `token list`.")],
    as_member: AsMember = False,
    url: Url = DEFAULT_URL,
    as_json: Json = False,
) -> None:
    """Revoke an agent token by jti; nodes refuse it within one revocation poll."""
    jti = ident(jti, "jti", "token list")
    revoked = Remote.either(url, as_member).call("DELETE", f"/v1/tokens/{jti}")
    show(revoked if as_json else compact(revoked), as_json, TOKEN_COLUMNS)
