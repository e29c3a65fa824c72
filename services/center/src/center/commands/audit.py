"""`audit verify|export|head`: check an exported log locally, export the center's, and read
the head the center signed into its revocation feed."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from center.commands._shared import AsMember
from center.remote import DEFAULT_URL, Json, Remote, RemoteError, Url, handled, show

if TYPE_CHECKING:
    from tickets import Checkpoint

app = typer.Typer(
    name="audit", help="Export, check and anchor the audit log.", no_args_is_help=True
)


def _checkpoint(text: str) -> Checkpoint:
    from tickets import Checkpoint  # noqa: PLC0415 - the audit verbs only

    seq, _, digest = text.partition(":")
    if not seq.isdigit() or len(digest) != 64:
        raise RemoteError("invalid_argument", "--head is SEQ:HASH (64 hex digits)")
    return Checkpoint(int(seq), digest.lower(), "", "")


@app.command("verify")
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
    from tickets import ChainVerifier  # noqa: PLC0415 - the audit verbs only

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


@app.command("export")
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


@app.command("head")
@handled
def audit_head(url: Url = DEFAULT_URL, as_json: Json = False) -> None:
    """The audit head the center signed into its revocation feed, checked against its JWKS.
    Keep `head` somewhere else; `audit verify FILE --head` later proves the log still
    holds it (compare `kid` with `public-key` to pin the key)."""
    from tickets import KeySet, TicketsError, verify_snapshot  # noqa: PLC0415 - this verb only

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
