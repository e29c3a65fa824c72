"""`key rotate|revoke`: a new signing secret, made locally and printed once; a retired key
revoked at the center, so every node refuses its tokens."""

from __future__ import annotations

from typing import Annotated

import typer

from center.remote import (
    DEFAULT_URL,
    TAKES_ID,
    Json,
    Remote,
    Url,
    console,
    errors,
    handled,
    print_json,
    show,
)

app = typer.Typer(
    name="key", help="Rotate the signing key; revoke an old one.", no_args_is_help=True
)


@app.command("rotate")
@handled
def key_rotate(as_json: Json = False) -> None:
    """Make a new signing secret and print it once. Put it in SECONDBRAIN_CENTER_SECRET
    and restart: the old key stays in the JWKS until its last token has expired."""
    from tickets import SigningKey  # noqa: PLC0415 - the key libraries: this verb only

    key = SigningKey.generate()
    value = {"kid": key.kid, "secret": key.export_secret()}
    if as_json:
        print_json(console, value)
        return
    show(value, as_json)
    errors.print(
        "Store the secret in the service environment only, then restart the center.",
        markup=False,
    )


@app.command("revoke", context_settings=TAKES_ID)
@handled
def key_revoke(
    kid: Annotated[str, typer.Argument(help="The key id (as in the JWKS) to revoke.")],
    reason: Annotated[str | None, typer.Option(help="Why; recorded in the audit.")] = None,
    url: Url = DEFAULT_URL,
    as_json: Json = False,
) -> None:
    """Revoke a retired key (a leak): every node refuses its tokens at its next poll.
    The active key cannot be revoked: rotate and restart first."""
    body = {"reason": reason} if reason else None
    show(Remote(url).call("POST", f"/v1/keys/{kid}/revoke", body=body), as_json)
