"""`GET /v1/audit`: the audit log as NDJSON, filtered by vault and seq range.

The whole chain is verified before any filter applies; exported lines keep their
original hashes and seqs (a filtered export is not a chain of its own). The operator
sees everything; an admin or owner member sees only records of vaults it manages.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import date, timedelta
from typing import Annotated

from fastapi import APIRouter, Query, Response
from pydantic import Field

from center.audit import Selection
from center.errors import ForbiddenError, InvalidArgumentError
from center.principals import MANAGERS, Principal, check_vault
from center.routes.deps import Caller, CenterDep, Out
from tickets import ALL_VAULTS

router = APIRouter(tags=["audit"])
NDJSON = "application/x-ndjson"


class AuditLine(Out):
    """One audit record, one line of an export, as the chain holds it (docs/center.md,
    "Audit log"); the fields it does not use are null, the last four left out."""

    v: int = Field(description="Record format version (1)")
    seq: int = Field(description="Position in the chain, from 1")
    ts: str = Field(description="UTC time, e.g. 2026-11-20T10:15:03.123456Z")
    prev_hash: str = Field(description="The previous record's hash (64 zeros for the first)")
    hash: str = Field(description="SHA-256 of the record without hash, in hex")
    action: str = Field(description="What changed, e.g. member.add or grant.issue")
    actor: str | None = Field(description="Who made the change")
    subject: str | None = Field(description="The member or grantee it concerns")
    scope: str | None = Field(description="The permissions given, e.g. rw")
    vault: str | None = Field(description="Null for a change of the center itself")
    expiry: int | None = Field(description="Unix time the grant, token or key ends")
    parent: str | None = Field(description="The parent grant of a delegation")
    reason: str | None = Field(description="Why, as the caller gave it (no secrets)")
    request_id: str | None = Field(description="The access request it decides")
    object: str | None = Field(description="What else it names, e.g. key:KID or client:ID")
    issued_by: str | None = Field(None, description="Who issued a delegated grant")
    via_grant: str | None = Field(None, description="The grant a delegation was made with")
    channel: str | None = Field(None, description="Where else it was made (console)")
    paths: str | None = Field(None, description="Path rules, as compact JSON text")


def selection(caller: Principal, vault: str | None, since: int, until: int | None) -> Selection:
    if until is not None and until < since:
        raise InvalidArgumentError("until", "must not be below since")
    if vault is not None:
        check_vault(vault)
    if caller.is_operator:
        return Selection(vault, since, until)
    if vault is None and len(caller.vaults) == 1 and caller.vaults != (ALL_VAULTS,):
        vault = caller.vaults[0]
    if vault is None and caller.vaults == (ALL_VAULTS,) and caller.role in MANAGERS:
        return Selection(None, since, until, vaulted_only=True)
    if vault is None:
        raise InvalidArgumentError("vault", "name the vault whose records you want")
    if not caller.manages(vault):
        raise ForbiddenError(f"only an admin or owner of vault {vault!r} may read its audit")
    return Selection(vault, since, until)


def narrowed(
    chosen: Selection,
    actor: str | None = None,
    action: str | None = None,
    from_date: date | None = None,
    to_date: date | None = None,
) -> Selection:
    """`chosen` with the content filters: an actor, an action (or `grant` for every
    `grant.*`) and UTC dates, both inclusive."""
    if from_date is not None and to_date is not None and to_date < from_date:
        raise InvalidArgumentError("to_date", "must not be before from_date")
    after = f"{from_date.isoformat()}T00:00:00.000000Z" if from_date else None
    end = to_date + timedelta(days=1) if to_date else None
    before = f"{end.isoformat()}T00:00:00.000000Z" if end else None
    return replace(chosen, actor=actor or None, action=action or None, after=after, before=before)


@router.get(
    "/v1/audit",
    summary="Audit records as NDJSON (application/x-ndjson)",
    response_class=Response,
    responses={
        200: {
            "description": "One audit record (a JSON object) per line, with its original hash",
            "content": {NDJSON: {"schema": AuditLine.model_json_schema()}},
        }
    },
)
async def export(  # noqa: PLR0917 - FastAPI passes query parameters by name
    center: CenterDep,
    caller: Caller,
    vault: str | None = None,
    since: int = Query(1, ge=1),
    until: int | None = Query(None, ge=1),
    actor: Annotated[str | None, Query(max_length=64, description="Only this actor's")] = None,
    action: Annotated[
        str | None, Query(max_length=64, description="An action (grant.issue) or family (grant)")
    ] = None,
    from_date: Annotated[date | None, Query(description="First UTC day (YYYY-MM-DD)")] = None,
    to_date: Annotated[date | None, Query(description="Last UTC day, inclusive")] = None,
) -> Response:
    chosen = narrowed(selection(caller, vault, since, until), actor, action, from_date, to_date)
    return ndjson(await center.store.audit_export(chosen))


def ndjson(lines: list[str]) -> Response:
    """An export's answer: its lines as NDJSON (the console's export answers the same)."""
    return Response("".join(f"{line}\n" for line in lines), media_type=NDJSON)
