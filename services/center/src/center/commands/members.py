"""`member add|list|set|remove`: the operator's verbs for members, sent with
SECONDBRAIN_CENTER_ADMIN_TOKEN."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from center.commands._shared import (
    ExcludePaths,
    ReadPaths,
    WritePaths,
    compact,
    member_ident,
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

app = typer.Typer(
    name="member", help="Create, list, change and remove members.", no_args_is_help=True
)
MEMBER_COLUMNS = ("id", "role", "scope", "vaults", "paths", "generation", "password", "email")

VaultsOpt = Annotated[
    list[str] | None, typer.Option("--vault", help="A vault the member may use (repeat).")
]
AllVaults = Annotated[bool, typer.Option("--all-vaults", help="Every vault, now and later.")]
RoleOpt = Annotated[str | None, typer.Option(help="reader, editor, admin or owner.")]
ScopeOpt = Annotated[str | None, typer.Option(help="read, write, read_write, rwd, allow_all.")]
PasswordOpt = Annotated[
    bool, typer.Option("--password", help="Prompt for a password (never given as a flag).")
]
EmailOpt = Annotated[str | None, typer.Option(help="Login address for the OAuth sign-in page.")]
SetEmailOpt = Annotated[
    str | None,
    typer.Option(help='Login address for the OAuth sign-in page (--email "" removes it).'),
]
Unplaced = Annotated[
    bool,
    typer.Option(
        "--unplaced",
        help="Allow a --vault no node reports yet (placing a member ahead of its node).",
    ),
]


def _check_placed(remote: Remote, vaults: list[str] | None, unplaced: bool) -> None:
    """Refuse a vault no node reports, unless the operator places the member ahead of it."""
    if unplaced or not vaults or vaults == ["*"]:
        return
    listed = remote.call("GET", "/v1/vaults")["vaults"]
    known = sorted(v["name"] for v in listed if v.get("node"))
    missing = [v for v in vaults if v not in known]
    if missing:
        raise RemoteError(
            "unknown_vault",
            f"no node reports vault {missing[0]!r}; known vaults: {', '.join(known) or 'none'}."
            " Create its folder in a node's data_dir (`secondbrain vault create`): the node"
            " reports it within seconds; or pass --unplaced to give it before a node holds it",
        )


def _vaults(vaults: list[str] | None, all_vaults: bool) -> list[str] | None:
    if all_vaults and vaults:
        raise RemoteError("invalid_argument", "use --vault or --all-vaults, not both")
    return ["*"] if all_vaults else vaults or None


def _password(wanted: bool) -> str | None:
    if not wanted:
        return None
    value: str = typer.prompt("Password", hide_input=True, confirmation_prompt=True)
    return value


@app.command("add")
@handled
def member_add(
    member_id: Annotated[str, typer.Argument(help="1-64 of A-Z a-z 0-9 - _")],
    *,
    vault: VaultsOpt = None,
    all_vaults: AllVaults = False,
    role: RoleOpt = None,
    scope: ScopeOpt = None,
    password: PasswordOpt = False,
    email: EmailOpt = None,
    read_path: ReadPaths = None,
    write_path: WritePaths = None,
    exclude: ExcludePaths = None,
    unplaced: Unplaced = False,
    url: Url = DEFAULT_URL,
    as_json: Json = False,
) -> None:
    """Create a member and print its credential — once; store it safely now."""
    member_id = member_ident(member_id)
    vaults = _vaults(vault, all_vaults)
    if vaults is None:
        raise RemoteError("invalid_argument", "name at least one --vault, or --all-vaults")
    remote = Remote(url)
    _check_placed(remote, vaults, unplaced)
    body: dict[str, Any] = {"id": member_id, "vaults": vaults, "role": role, "scope": scope}
    if email is not None:
        body["email"] = email
    if (paths := path_rules(read_path, write_path, exclude)) is not None:
        body["paths"] = paths
    if secret := _password(password):
        body["password"] = secret
    created = remote.call("POST", "/v1/members", body=body)
    show(created if as_json else compact(created), as_json, (*MEMBER_COLUMNS, "credential"))


@app.command("list")
@handled
def member_list(url: Url = DEFAULT_URL, as_json: Json = False) -> None:
    """Every member, without credentials."""
    listed = Remote(url).call("GET", "/v1/members")
    show_rows(listed, "members", as_json, MEMBER_COLUMNS, compact)


@app.command("set", context_settings=TAKES_ID)
@handled
def member_set(
    member_id: str,
    *,
    vault: VaultsOpt = None,
    all_vaults: AllVaults = False,
    role: RoleOpt = None,
    scope: ScopeOpt = None,
    password: PasswordOpt = False,
    email: SetEmailOpt = None,
    rotate_credential: Annotated[
        bool, typer.Option("--rotate-credential", help="Issue a new credential (shown once).")
    ] = False,
    read_path: ReadPaths = None,
    write_path: WritePaths = None,
    exclude: ExcludePaths = None,
    no_paths: Annotated[
        bool,
        typer.Option("--no-paths", help="Remove every path rule: the whole of each vault."),
    ] = False,
    unplaced: Unplaced = False,
    url: Url = DEFAULT_URL,
    as_json: Json = False,
) -> None:
    """Change a member; a role, scope, vault or path rule change revokes its grants and
    tokens. Path rules given replace all of the member's."""
    member_id = member_ident(member_id)
    vaults = _vaults(vault, all_vaults)
    remote = Remote(url)
    _check_placed(remote, vaults, unplaced)
    body: dict[str, Any] = {"role": role, "scope": scope, "vaults": vaults, "email": email}
    body = {name: value for name, value in body.items() if value is not None}
    if secret := _password(password):
        body["password"] = secret
    if rotate_credential:
        body["rotate_credential"] = True
    paths = path_rules(read_path, write_path, exclude)
    if paths is not None and no_paths:
        raise RemoteError("invalid_argument", "give path rules or --no-paths, not both")
    if paths is not None or no_paths:
        body["paths"] = paths or {}
    changed = remote.call("PATCH", f"/v1/members/{member_id}", body=body)
    shown = (*MEMBER_COLUMNS, "revoked_grants", *(("credential",) if rotate_credential else ()))
    show(changed if as_json else compact(changed), as_json, shown)


@app.command("remove", context_settings=TAKES_ID)
@handled
def member_remove(member_id: str, url: Url = DEFAULT_URL, as_json: Json = False) -> None:
    """Remove a member; its tokens and every grant it issued or received die."""
    show(Remote(url).call("DELETE", f"/v1/members/{member_ident(member_id)}"), as_json)
