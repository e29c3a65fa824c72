"""The remote verbs of `secondbrain-center`: members, grants, requests, tokens and nodes.

The operator's verbs (`member`, `node`) send `SECONDBRAIN_CENTER_ADMIN_TOKEN`; the verbs
only a member runs (`request create|cancel|claim`, `token issue`) send the member's own
`SECONDBRAIN_CENTER_TOKEN`; every verb both may run sends the member's token with
`--as-member` or when no admin token is set (`Remote.either`). Ids are checked here with
the center's own rules before any call. A credential or token the center returns is
printed once, by the verb that created it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import typer

from center.errors import InvalidArgumentError
from center.principals import check_member_id
from center.remote import (
    DEFAULT_URL,
    MEMBER_TOKEN_ENV,
    Json,
    Remote,
    RemoteError,
    Url,
    handled,
    show,
    show_rows,
)

member_app = typer.Typer(help="Create, list, change and remove members.", no_args_is_help=True)
grant_app = typer.Typer(help="Issue, list and revoke grants.", no_args_is_help=True)
request_app = typer.Typer(help="Ask for, decide and claim grants.", no_args_is_help=True)
node_app = typer.Typer(help="Register, list and remove vault nodes.", no_args_is_help=True)
token_app = typer.Typer(help="Mint, list and revoke agent tokens.", no_args_is_help=True)
MEMBER_COLUMNS = ("id", "role", "scope", "vaults", "generation", "password", "email")
GRANT_COLUMNS = ("id", "vault", "scope", "grantee", "issued_by", "depth", "expiry", "revoked")
REQUEST_COLUMNS = (
    *("id", "requester", "vault", "scope", "minutes", "reason", "state", "created"),
    "decided_by",
)
NODE_COLUMNS = (
    *("id", "resource", "vaults", "placements"),
    *("last_seen", "revocation_seq", "checkpoint_seq", "checkpoint_ok"),
)
VAULT_COLUMNS = ("name", "node", "mcp_url", "reported", "last_seen")
TOKEN_COLUMNS = ("jti", "subject", "scope", "vaults", "created", "expires_at", "revoked")
MAX_TOKEN_DAYS = 90


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
AsMember = Annotated[
    bool,
    typer.Option(
        "--as-member",
        help="Ask as the member in SECONDBRAIN_CENTER_TOKEN (also the default when"
        " SECONDBRAIN_CENTER_ADMIN_TOKEN is not set).",
    ),
]


def _member_id(value: str) -> str:
    try:
        return check_member_id(value)
    except InvalidArgumentError as exc:
        raise RemoteError("invalid_argument", f"member id: {exc.problem}") from None


def _ident(value: str, what: str, listing: str) -> str:
    """An id that goes into a URL path: one segment, as the center makes them."""
    if not value or not value.isprintable() or any(c in value for c in "/?#% \\"):
        raise RemoteError(
            "invalid_argument", f"{what}: not an id the center makes; copy it from `{listing}`"
        )
    return value


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
            f"no node reports vault {missing[0]!r}; known vaults: {', '.join(known) or 'none'}"
            " (pass --unplaced to give it before a node holds it)",
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


GrantScope = Annotated[str, typer.Option(help="read (default), write, read_write, …")]
GrantMinutes = Annotated[int, typer.Option(min=1, max=60, help="Grant lifetime, 1-60.")]
Reason = Annotated[str | None, typer.Option(help="Why; recorded in the audit.")]


@member_app.command("add")
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
    unplaced: Unplaced = False,
    url: Url = DEFAULT_URL,
    as_json: Json = False,
) -> None:
    """Create a member and print its credential — once; store it safely now."""
    member_id = _member_id(member_id)
    vaults = _vaults(vault, all_vaults)
    if vaults is None:
        raise RemoteError("invalid_argument", "name at least one --vault, or --all-vaults")
    remote = Remote(url)
    _check_placed(remote, vaults, unplaced)
    body: dict[str, Any] = {"id": member_id, "vaults": vaults, "role": role, "scope": scope}
    if email is not None:
        body["email"] = email
    if secret := _password(password):
        body["password"] = secret
    created = remote.call("POST", "/v1/members", body=body)
    show(created, as_json, (*MEMBER_COLUMNS, "credential"))


@member_app.command("list")
@handled
def member_list(url: Url = DEFAULT_URL, as_json: Json = False) -> None:
    """Every member, without credentials."""
    listed = Remote(url).call("GET", "/v1/members")
    show_rows(listed, "members", as_json, MEMBER_COLUMNS)


@member_app.command("set")
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
    unplaced: Unplaced = False,
    url: Url = DEFAULT_URL,
    as_json: Json = False,
) -> None:
    """Change a member; a role, scope or vault change revokes its grants and tokens."""
    member_id = _member_id(member_id)
    vaults = _vaults(vault, all_vaults)
    remote = Remote(url)
    _check_placed(remote, vaults, unplaced)
    body: dict[str, Any] = {"role": role, "scope": scope, "vaults": vaults, "email": email}
    body = {name: value for name, value in body.items() if value is not None}
    if secret := _password(password):
        body["password"] = secret
    if rotate_credential:
        body["rotate_credential"] = True
    changed = remote.call("PATCH", f"/v1/members/{member_id}", body=body)
    shown = (*MEMBER_COLUMNS, "revoked_grants", *(("credential",) if rotate_credential else ()))
    show(changed, as_json, shown)


@member_app.command("remove")
@handled
def member_remove(member_id: str, url: Url = DEFAULT_URL, as_json: Json = False) -> None:
    """Remove a member; its tokens and every grant it issued or received die."""
    show(Remote(url).call("DELETE", f"/v1/members/{_member_id(member_id)}"), as_json)


@grant_app.command("issue")
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
    as_member: AsMember = False,
    url: Url = DEFAULT_URL,
    as_json: Json = False,
) -> None:
    """Issue a grant — as the operator, or as an admin or owner member of the vault — and
    print its token, once."""
    if grantee is not None:
        grantee = _member_id(grantee)
    body = {"vault": vault, "scope": scope, "minutes": minutes, "grantee": grantee}
    body.update(reason=reason, resource=resource or [])
    issued = Remote.either(url, as_member).call("POST", "/v1/grants", body=body)
    show(issued, as_json, (*GRANT_COLUMNS, "audience", "token"))


@grant_app.command("list")
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
    show_rows(listed, "grants", as_json, GRANT_COLUMNS)


@grant_app.command("revoke")
@handled
def grant_revoke(
    grant_id: str, as_member: AsMember = False, url: Url = DEFAULT_URL, as_json: Json = False
) -> None:
    """Revoke a grant and every grant delegated under it."""
    grant_id = _ident(grant_id, "grant id", "grant list")
    show(Remote.either(url, as_member).call("DELETE", f"/v1/grants/{grant_id}"), as_json)


def _member(url: str) -> Remote:
    return Remote(url, env=MEMBER_TOKEN_ENV)


@request_app.command("create")
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
    url: Url = DEFAULT_URL,
    as_json: Json = False,
) -> None:
    """Ask for a grant, as the member in SECONDBRAIN_CENTER_TOKEN."""
    body = {"vault": vault, "scope": scope, "minutes": minutes, "reason": reason}
    body["approvers"] = approver or []
    show(_member(url).call("POST", "/v1/requests", body=body), as_json, REQUEST_COLUMNS)


@request_app.command("list")
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
    show_rows(listed, "requests", as_json, REQUEST_COLUMNS)


def _decide(
    verb: str, request_id: str, caller: Remote, as_json: bool, body: dict[str, Any]
) -> None:
    request_id = _ident(request_id, "request id", "request list")
    decided = caller.call("POST", f"/v1/requests/{request_id}/{verb}", body=body)
    show(decided, as_json, REQUEST_COLUMNS)


@request_app.command("approve")
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
    as_member: AsMember = False,
    url: Url = DEFAULT_URL,
    as_json: Json = False,
) -> None:
    """Approve a pending request — as the operator, or as a member who may decide it (an
    admin or owner of the vault). Issues nothing: the requester claims."""
    body = {"scope": scope, "minutes": minutes, "reason": reason}
    _decide("approve", request_id, Remote.either(url, as_member), as_json, body)


@request_app.command("reject")
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


@request_app.command("cancel")
@handled
def request_cancel(request_id: str, url: Url = DEFAULT_URL, as_json: Json = False) -> None:
    """Withdraw your own request (member in SECONDBRAIN_CENTER_TOKEN)."""
    request_id = _ident(request_id, "request id", "request list")
    cancelled = _member(url).call("POST", f"/v1/requests/{request_id}/cancel")
    show(cancelled, as_json, REQUEST_COLUMNS)


@request_app.command("claim")
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
    request_id = _ident(request_id, "request id", "request list")
    body = {"resource": resource or []}
    claimed = _member(url).call("POST", f"/v1/requests/{request_id}/claim", body=body)
    show(claimed, as_json, (*GRANT_COLUMNS, "audience", "token"))


@node_app.command("add")
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


@node_app.command("list")
@handled
def node_list(url: Url = DEFAULT_URL, as_json: Json = False) -> None:
    """Every node with its last heartbeat: vaults, revocation seq, audit checkpoint."""
    listed = Remote(url).call("GET", "/v1/nodes")
    show_rows(listed, "nodes", as_json, NODE_COLUMNS, _node_row)


@node_app.command("remove")
@handled
def node_remove(node_id: str, url: Url = DEFAULT_URL, as_json: Json = False) -> None:
    """Remove a node: its credential stops working and its placements are dropped."""
    node_id = _ident(node_id, "node id", "node list")
    show(Remote(url).call("DELETE", f"/v1/nodes/{node_id}"), as_json)


def _lifetime(minutes: int | None, days: int | None) -> int:
    if minutes is not None and days is not None:
        raise RemoteError("invalid_argument", "use --minutes or --days, not both")
    if days is not None:
        return days * 24 * 60
    return minutes if minutes is not None else 60


@token_app.command("issue")
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
    url: Url = DEFAULT_URL,
    as_json: Json = False,
) -> None:
    """Exchange your member credential (SECONDBRAIN_CENTER_TOKEN) for an agent token for a
    node — yours, or with --member one for a member of a vault you manage — and print it,
    once. Up to 90 days; revoke it with `token revoke`."""
    body: dict[str, Any] = {"resource": resource or [], "minutes": _lifetime(minutes, days)}
    if member is not None:
        body["member"] = _member_id(member)
    if scope is not None:
        body["scope"] = scope
    if vault:
        body["vaults"] = vault
    minted = _member(url).call("POST", "/v1/tokens", body=body)
    show(minted, as_json, (*TOKEN_COLUMNS, "audience", "token"))


@token_app.command("list")
@handled
def token_list(as_member: AsMember = False, url: Url = DEFAULT_URL, as_json: Json = False) -> None:
    """Unexpired agent tokens: every one (operator), or your own (--as-member). Never the
    token itself."""
    listed = Remote.either(url, as_member).call("GET", "/v1/tokens")
    show_rows(listed, "tokens", as_json, TOKEN_COLUMNS)


@token_app.command("revoke")
@handled
def token_revoke(
    jti: Annotated[str, typer.Argument(help="The token's jti, from `token list`.")],
    as_member: AsMember = False,
    url: Url = DEFAULT_URL,
    as_json: Json = False,
) -> None:
    """Revoke an agent token by jti; nodes refuse it within one revocation poll."""
    jti = _ident(jti, "jti", "token list")
    revoked = Remote.either(url, as_member).call("DELETE", f"/v1/tokens/{jti}")
    show(revoked, as_json, TOKEN_COLUMNS)


@handled
def vaults(
    as_member: AsMember = False,
    url: Url = DEFAULT_URL,
    as_json: Json = False,
) -> None:
    """The vaults you may see, each with the MCP URL of the node holding it."""
    listed = Remote.either(url, as_member).call("GET", "/v1/vaults")
    show_rows(listed, "vaults", as_json, VAULT_COLUMNS)
