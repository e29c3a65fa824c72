"""`secondbrain-center`: run the center and manage it from the operator's terminal.

`serve`, `validate` and `public-key` work locally from `SECONDBRAIN_CENTER_*`; `audit
verify` reads a file; every other verb (`center.commands`) calls a running center over HTTP at
`SECONDBRAIN_CENTER_URL` with `SECONDBRAIN_CENTER_ADMIN_TOKEN`. Secrets are never
accepted as flags: they come from the environment, passwords from a hidden prompt.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from center.commands import grant_app, member_app, node_app, request_app, vaults
from center.config import ENV_PREFIX, load_settings
from center.remote import (
    DEFAULT_URL,
    Json,
    Remote,
    RemoteError,
    Url,
    console,
    errors,
    handled,
    print_json,
    show,
)
from tickets import ChainVerifier, Checkpoint, SecretError, SigningKey

app = typer.Typer(
    help="secondbrain-center: members, grants, tokens and audit for secondbrain nodes.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
audit_app = typer.Typer(help="Check the audit log.", no_args_is_help=True)
key_app = typer.Typer(help="Rotate the signing key.", no_args_is_help=True)
app.add_typer(key_app, name="key")
app.add_typer(member_app, name="member")
app.add_typer(grant_app, name="grant")
app.add_typer(request_app, name="request")
app.add_typer(audit_app, name="audit")
app.add_typer(node_app, name="node")


@app.command()
@handled
def serve() -> None:
    """Run the center (host, port and everything else from SECONDBRAIN_CENTER_*)."""
    import uvicorn  # noqa: PLC0415 - only this verb needs the server

    from center.app import create_app  # noqa: PLC0415 - keeps the remote verbs light

    settings = load_settings()
    os.umask(0o077)
    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        log_config=None,
        access_log=False,
        server_header=False,
    )


@app.command()
@handled
def validate(as_json: Json = False) -> None:
    """Check the SECONDBRAIN_CENTER_* settings without starting (values are never shown)."""
    settings = load_settings()
    summary = {
        "data_dir": str(settings.data_dir),
        "database": settings.backend,
        "issuer": settings.issuer,
        "kid": settings.signing_key().kid,
        "admin_token": "set" if settings.admin_token else "missing (operator routes answer 401)",
        "listen": f"{settings.host}:{settings.port}",
    }
    show(summary, as_json)


@app.command("public-key")
@handled
def public_key(url: Url = DEFAULT_URL, as_json: Json = False) -> None:
    """The public key for node configs: derived from SECONDBRAIN_CENTER_SECRET if set,
    else fetched from the center."""
    secret = os.environ.get(f"{ENV_PREFIX}SECRET")
    if secret:
        try:
            key = SigningKey.from_secret(secret)
        except SecretError as exc:
            raise RemoteError("bad_secret", exc.message) from None
        value: dict[str, Any] = {"kid": key.kid, "jwk": key.public.to_jwk()}
    else:
        value = Remote(url).call("GET", "/v1/public-key", authenticated=False)
    if as_json:
        print_json(console, value)
    else:
        console.print(value["kid"], value["jwk"]["x"], highlight=False)


@key_app.command("rotate")
@handled
def key_rotate(as_json: Json = False) -> None:
    """Make a new signing secret and print it once. Put it in SECONDBRAIN_CENTER_SECRET
    and restart: the old key stays in the JWKS until its last token has expired."""
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


@app.command()
@handled
def status(url: Url = DEFAULT_URL, as_json: Json = False) -> None:
    """Is the center up, and may it change state? (`GET /healthz`)"""
    show(Remote(url).call("GET", "/healthz", authenticated=False), as_json)


app.command("vaults")(vaults)


def _checkpoint(text: str) -> Checkpoint:
    seq, _, digest = text.partition(":")
    if not seq.isdigit() or len(digest) != 64:
        raise RemoteError("invalid_argument", "--head is SEQ:HASH (64 hex digits)")
    return Checkpoint(int(seq), digest.lower(), "", "")


@audit_app.command("verify")
@handled
def audit_verify(
    file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, readable=True)],
    head: Annotated[
        str | None,
        typer.Option(
            help="SEQ:HASH known from elsewhere (a node's checkpoint); the log must hold it."
        ),
    ] = None,
    as_json: Json = False,
) -> None:
    """Verify an audit log (audit.jsonl or a full export); names the first bad seq."""
    marks = [_checkpoint(head)] if head else []
    with file.open("rb") as lines:
        verifier = ChainVerifier(checkpoints=marks)
        for line in lines:
            if not verifier.feed(line):
                break
    report = verifier.finish()
    value = {
        "ok": report.ok,
        "records": report.records,
        "head_seq": report.head[0] if report.head else None,
        "head_hash": report.head[1] if report.head else None,
        "first_bad_seq": report.first_bad_seq,
        "problem": report.problem,
        "line": report.line,
        "detail": report.detail or None,
    }
    show(value, as_json, () if not report.ok else ("ok", "records", "head_seq", "head_hash"))
    if not report.ok:
        raise typer.Exit(1)


def main() -> None:
    """Console entry point; the only place that catches every exception."""
    try:
        app()
    except Exception as exc:  # noqa: BLE001 - the CLI boundary reports, never dumps a trace
        errors.print(f"error (internal): {type(exc).__name__}", markup=False, highlight=False)
        sys.exit(2)


if __name__ == "__main__":
    main()
