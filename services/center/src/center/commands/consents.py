"""`consent list|revoke`: what members allowed OAuth clients on the consent page."""

from __future__ import annotations

from typing import Annotated

import typer

from center.commands._shared import AsMember, ident, member_ident
from center.remote import DEFAULT_URL, TAKES_ID, Json, Remote, Url, handled, show, show_rows

app = typer.Typer(
    name="consent", help="List and revoke what members allowed OAuth clients.", no_args_is_help=True
)
CONSENT_COLUMNS = (
    *("id", "member", "client_name", "client_id", "origin", "scope", "vaults"),
    *("updated", "used"),
)


@app.command("list")
@handled
def consent_list(
    member: Annotated[
        str | None, typer.Option("--member", help="Only this member's (operator).")
    ] = None,
    as_member: AsMember = False,
    url: Url = DEFAULT_URL,
    as_json: Json = False,
) -> None:
    """Remembered consents: every member's (operator; --member for one), or your own
    (--as-member). A client within one signs the member in without asking again."""
    params = {"member": member_ident(member)} if member is not None else None
    listed = Remote.either(url, as_member).call("GET", "/v1/consents", params=params)
    show_rows(listed, "consents", as_json, CONSENT_COLUMNS)


@app.command("revoke", context_settings=TAKES_ID)
@handled
def consent_revoke(
    consent_id: Annotated[str, typer.Argument(help="The consent's id, from `consent list`.")],
    as_member: AsMember = False,
    url: Url = DEFAULT_URL,
    as_json: Json = False,
) -> None:
    """Revoke a consent: the client must ask again, and its sign-ins for that member end
    (refresh tokens refused, their access tokens revoked)."""
    consent_id = ident(consent_id, "consent id", "consent list")
    revoked = Remote.either(url, as_member).call("DELETE", f"/v1/consents/{consent_id}")
    show(revoked, as_json, (*CONSENT_COLUMNS, "ended_sign_ins"))
