"""`secondbrain-center`: run the center and manage it from the operator's terminal.

`serve`, `validate` and `public-key` work locally from `SECONDBRAIN_CENTER_*`; `audit
verify` reads a file; every other verb (here and in `center.commands`) calls a running center
over HTTP at `SECONDBRAIN_CENTER_URL` with `SECONDBRAIN_CENTER_ADMIN_TOKEN`. Secrets are never
accepted as flags: they come from the environment, passwords from a hidden prompt.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
from pathlib import Path
from typing import Annotated, Any

import httpx
import typer

from center.commands import (
    AsMember,
    consent_app,
    grant_app,
    member_app,
    node_app,
    request_app,
    token_app,
    vaults,
)
from center.config import ENV_PREFIX, Settings, load_settings
from center.db.probe import check_database
from center.errors import ListenError
from center.remote import (
    DEFAULT_URL,
    TAKES_ID,
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
from tickets import (
    ChainVerifier,
    Checkpoint,
    KeySet,
    SecretError,
    SigningKey,
    TicketsError,
    verify_snapshot,
)

app = typer.Typer(
    help="secondbrain-center: members, grants, tokens and audit for secondbrain nodes.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
audit_app = typer.Typer(help="Export, check and anchor the audit log.", no_args_is_help=True)
key_app = typer.Typer(help="Rotate the signing key; revoke an old one.", no_args_is_help=True)
app.add_typer(key_app, name="key")
app.add_typer(member_app, name="member")
app.add_typer(grant_app, name="grant")
app.add_typer(request_app, name="request")
app.add_typer(audit_app, name="audit")
app.add_typer(node_app, name="node")
app.add_typer(token_app, name="token")
app.add_typer(consent_app, name="consent")


@app.command()
@handled
def serve() -> None:
    """Run the center (host, port and everything else from SECONDBRAIN_CENTER_*)."""
    import uvicorn  # noqa: PLC0415 - only this verb needs the server

    from center.app import create_app  # noqa: PLC0415 - keeps the remote verbs light

    settings = load_settings()
    # Checked first, each one line: the port, then the database; never a start-up traceback.
    listener = _bind(settings.host, settings.port)
    asyncio.run(check_database(settings))
    os.umask(0o077)
    config = uvicorn.Config(
        create_app(settings), log_config=None, access_log=False, server_header=False
    )
    uvicorn.Server(config).run(sockets=[listener])


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family)
    except OSError as exc:
        raise ListenError(host, port, os.strerror(exc.errno) if exc.errno else str(exc)) from None


@app.command()
@handled
def validate(as_json: Json = False) -> None:
    """Check the SECONDBRAIN_CENTER_* settings without starting (values are never shown)."""
    settings = load_settings()
    asyncio.run(check_database(settings))
    summary = {
        "data_dir": str(settings.data_dir),
        "database": settings.backend,
        "database_check": _database_check(settings),
        "issuer": settings.issuer,
        "kid": settings.signing_key().kid,
        "admin_token": "set" if settings.admin_token else "missing (operator routes answer 401)",
        "listen": f"{settings.host}:{settings.port}",
    }
    show(summary, as_json)


def _database_check(settings: Settings) -> str:
    if settings.backend != "postgresql":
        return "a file in data_dir, made at the first start"
    found = f", schema {settings.database_schema!r} found" if settings.database_schema else ""
    return f"connected{found}"


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


@key_app.command("revoke", context_settings=TAKES_ID)
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


@app.command()
@handled
def status(url: Url = DEFAULT_URL, as_json: Json = False) -> None:
    """Is the center up, and may it change state? (`GET /healthz`)"""
    show(Remote(url).call("GET", "/healthz", authenticated=False), as_json)


@app.command()
def healthcheck(
    url: Annotated[str, typer.Argument(help="The center's health URL.")] = f"{DEFAULT_URL}/healthz",
) -> None:
    """Exit 0 if URL answers 200 with status ok, else 1 (also while changes are locked):
    a container HEALTHCHECK that needs no shell and no curl in the image."""
    problem = _unhealthy(url)
    print("healthy" if problem is None else f"unhealthy: {url}: {problem}")
    raise typer.Exit(0 if problem is None else 1)


def _unhealthy(url: str) -> str | None:
    try:
        answer = httpx.get(url, timeout=5.0)
        body = answer.json() if answer.status_code == 200 else None
    except (httpx.HTTPError, httpx.InvalidURL, ValueError) as exc:
        return type(exc).__name__
    if answer.status_code != 200:
        return f"HTTP {answer.status_code}"
    return None if isinstance(body, dict) and body.get("status") == "ok" else "status is not ok"


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


@audit_app.command("export")
@handled
def audit_export(
    *,
    vault: Annotated[str | None, typer.Option(help="Only records of this vault.")] = None,
    since: Annotated[int, typer.Option(min=1, help="First seq to include.")] = 1,
    until: Annotated[int | None, typer.Option(min=1, help="Last seq to include.")] = None,
    output: Annotated[
        Path | None, typer.Option(dir_okay=False, help="Write here (0600) instead of stdout.")
    ] = None,
    as_member: AsMember = False,
    url: Url = DEFAULT_URL,
    as_json: Json = False,
) -> None:
    """The audit log as NDJSON, original seqs and hashes kept; a filtered export is not a
    chain of its own, a full one passes `audit verify`."""
    params = {"vault": vault, "since": since, "until": until}
    chosen = {k: v for k, v in params.items() if v}
    text: str = Remote.either(url, as_member).call("GET", "/v1/audit", params=chosen)
    if output is None:
        sys.stdout.write(text)
        return
    with os.fdopen(os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as out:
        out.write(text)
    seqs = [json.loads(line)["seq"] for line in text.splitlines()]
    summary = {"file": str(output), "records": len(seqs)}
    show(
        {**summary, "first_seq": min(seqs, default=None), "last_seq": max(seqs, default=None)},
        as_json,
    )


@audit_app.command("head")
@handled
def audit_head(url: Url = DEFAULT_URL, as_json: Json = False) -> None:
    """The audit head the center signed into its revocation feed, checked against its JWKS.
    Keep `head` somewhere else; `audit verify FILE --head` later proves the log still
    holds it (compare `kid` with `public-key` to pin the key)."""
    remote = Remote(url)
    issuer = remote.call("GET", "/v1/public-key", authenticated=False)["issuer"]
    jwks = remote.call("GET", "/.well-known/jwks.json", authenticated=False)
    feed = remote.call("GET", "/v1/revocations", authenticated=False)
    try:
        snapshot, kid = verify_snapshot(
            str(feed["snapshot"]), KeySet.from_jwks(jwks), issuer=issuer
        )
    except TicketsError as exc:
        raise RemoteError("bad_snapshot", f"the feed does not verify: {exc.message}") from None
    mark = snapshot.checkpoint
    value = {
        "seq": mark.seq if mark else 0,
        "hash": mark.hash if mark else None,
        "head": f"{mark.seq}:{mark.hash}" if mark else None,
        "kid": mark.kid if mark else kid,
        "signed_at": snapshot.iat,
        "revocation_seq": snapshot.seq,
    }
    show(value, as_json)


def main() -> None:
    """Console entry point; the only place that catches every exception."""
    try:
        app()
    except Exception as exc:  # noqa: BLE001 - the CLI boundary reports, never dumps a trace
        errors.print(f"error (internal): {type(exc).__name__}", markup=False, highlight=False)
        sys.exit(2)


if __name__ == "__main__":
    main()
