"""`node add|list|remove|drain` (the operator's)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import typer

from center.commands._shared import ident
from center.remote import DEFAULT_URL, TAKES_ID, Json, Remote, Url, handled, show, show_rows

app = typer.Typer(name="node", help="Register, list and remove vault nodes.", no_args_is_help=True)
NODE_COLUMNS = (
    *("id", "resource", "vaults", "placements"),
    *("last_seen", "revocation_seq", "checkpoint_seq", "checkpoint_ok"),
)


@app.command("add")
@handled
def node_add(
    node_id: Annotated[str, typer.Argument(help="1-64 of A-Z a-z 0-9 - _")],
    *,
    resource: Annotated[str, typer.Option(help="The node's MCP URL (https, or http on loopback).")],
    url: Url = DEFAULT_URL,
    as_json: Json = False,
) -> None:
    """Register a node and print its credential — once; put it in the node's environment."""
    created = Remote(url).call("POST", "/v1/nodes", body={"id": node_id, "resource": resource})
    show(created, as_json, ("id", "resource", "credential"))


def _node_row(node: Mapping[str, Any]) -> dict[str, Any]:
    checkpoint = node.get("checkpoint") or {}
    return {**node, "checkpoint_seq": checkpoint.get("seq")}


@app.command("list")
@handled
def node_list(url: Url = DEFAULT_URL, as_json: Json = False) -> None:
    """Every node with its last heartbeat: vaults, revocation seq, audit checkpoint."""
    listed = Remote(url).call("GET", "/v1/nodes")
    show_rows(listed, "nodes", as_json, NODE_COLUMNS, _node_row)


@app.command("remove", context_settings=TAKES_ID)
@handled
def node_remove(node_id: str, url: Url = DEFAULT_URL, as_json: Json = False) -> None:
    """Remove a node: its credential stops working and its placements are dropped."""
    node_id = ident(node_id, "node id", "node list")
    show(Remote(url).call("DELETE", f"/v1/nodes/{node_id}"), as_json)


@app.command("drain", context_settings=TAKES_ID)
@handled
def node_drain(node_id: str, url: Url = DEFAULT_URL, as_json: Json = False) -> None:
    """Move every vault off a node: each vault it is primary of moves to a replica (or the
    least-loaded other node), each it is a replica of gets a new replica elsewhere."""
    node_id = ident(node_id, "node id", "node list")
    show(Remote(url).call("POST", f"/v1/nodes/{node_id}/drain"), as_json)
