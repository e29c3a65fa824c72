"""`vaults` (where each vault is served; for the operator with its replication state) and
`vault promote|move` (the operator's): who is primary of a vault."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any

import typer

from center.commands._shared import AsMember
from center.names import check_vault, described
from center.remote import (
    DEFAULT_URL,
    MEMBER_TOKEN_ENV,
    TAKES_ID,
    Json,
    Remote,
    Url,
    handled,
    show,
    show_rows,
)

app = typer.Typer()
"""The top-level `vaults` verb and the `vault` noun."""
vault_app = typer.Typer(
    help="Promote a replica of a vault or move its primary to another node.",
    no_args_is_help=True,
)
app.add_typer(vault_app, name="vault")
VAULT_COLUMNS = ("name", "node", "mcp_url", "reported", "last_seen")
REPLICATION_COLUMNS = ("name", "node", "replicas", "epoch", "lease", "state")


def replication_row(vault: Mapping[str, Any]) -> dict[str, Any]:
    """A `/v1/replication` row for the table, the lease's expiry in local time."""

    def local(ms: int) -> str:
        return datetime.fromtimestamp(ms / 1000).astimezone().isoformat(timespec="seconds")

    return described(vault, local)


@app.command("vaults")
@handled
def vaults(
    as_member: AsMember = False,
    url: Url = DEFAULT_URL,
    as_json: Json = False,
) -> None:
    """The vaults you may see, each with the MCP URL of the node holding it; for the
    operator also its replicas (in sync, or lagging by how many commits), epoch, lease
    expiry and state."""
    remote = Remote.either(url, as_member)
    if remote.env == MEMBER_TOKEN_ENV:
        show_rows(remote.call("GET", "/v1/vaults"), "vaults", as_json, VAULT_COLUMNS)
        return
    listed = remote.call("GET", "/v1/replication")
    show_rows(listed, "vaults", as_json, REPLICATION_COLUMNS, replication_row)


@vault_app.command("promote", context_settings=TAKES_ID)
@handled
def vault_promote(
    vault: str,
    *,
    node: Annotated[str, typer.Option(help="The replica to make primary.")],
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Promote even a replica not in sync, or while the primary's lease is live:"
            " what only the old primary held may be lost (audited).",
        ),
    ] = False,
    url: Url = DEFAULT_URL,
    as_json: Json = False,
) -> None:
    """Make a replica primary at the next epoch (without --force: only an in-sync replica
    of a vault whose primary's lease has run out)."""
    vault = check_vault(vault)
    body = {"node": node, "force": force}
    show(Remote(url).call("POST", f"/v1/replication/{vault}/promote", body=body), as_json)


@vault_app.command("move", context_settings=TAKES_ID)
@handled
def vault_move(
    vault: str,
    *,
    to: Annotated[str, typer.Option("--to", help="The node to make primary.")],
    keep: Annotated[
        bool, typer.Option("--keep", help="Keep the old primary's copy as a replica.")
    ] = False,
    url: Url = DEFAULT_URL,
    as_json: Json = False,
) -> None:
    """Move a vault's primary to another node: it catches up as a replica, then takes over
    when the old primary's lease runs out (writes pause for at most one lease). `vaults`
    shows the progress; any center process finishes a move another one began."""
    vault = check_vault(vault)
    body = {"to": to, "keep": keep}
    started = Remote(url).call("POST", f"/v1/replication/{vault}/move", body=body)
    move = started.get("move") or {}
    show(
        {**started, "target": move.get("target"), "step": move.get("step")}
        if not as_json
        else started,
        as_json,
        ("vault", "primary", "epoch", "state", "target", "step"),
    )


@vault_app.command("set", context_settings=TAKES_ID)
@handled
def vault_set(
    vault: str,
    *,
    mode: Annotated[
        str | None,
        typer.Option(
            help="sync: a write waits for the replicas in sync; async: it does not, and a"
            " failover may lose what was not replicated yet."
        ),
    ] = None,
    factor: Annotated[
        int | None, typer.Option(min=1, max=9, help="Copies to keep, the primary included.")
    ] = None,
    url: Url = DEFAULT_URL,
    as_json: Json = False,
) -> None:
    """Set a vault's replication mode and factor: a larger factor adds replicas on the
    least-loaded nodes, a smaller one drops replicas (lagging ones first)."""
    vault = check_vault(vault)
    body = {
        name: value for name, value in (("mode", mode), ("factor", factor)) if value is not None
    }
    show(Remote(url).call("PATCH", f"/v1/replication/{vault}", body=body), as_json)
