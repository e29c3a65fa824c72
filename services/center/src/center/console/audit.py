"""The audit page: the log newest first, filtered by vault, actor, action and UTC dates;
at the top whether the whole chain verifies and its signed head; an NDJSON export of the
current filter. Who may read what, and the export's bytes, are `GET /v1/audit`'s own
(`center.routes.audit`): the page calls the same selection and the same export.
"""

from __future__ import annotations

import json
from datetime import date
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Response

from center.audit import Selection
from center.console.web import PAGE_SIZE, PREFIX, ConsoleRoute, Page, SignedIn
from center.errors import AuditChainError, InvalidArgumentError
from center.routes.audit import narrowed, ndjson, selection
from tickets import sign_checkpoint

router = APIRouter(prefix=PREFIX, route_class=ConsoleRoute)
FILTERS = ("vault", "actor", "action", "from_date", "to_date")


def _day(page: Page, name: str) -> date | None:
    value = page.value(name)
    if not value:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise InvalidArgumentError(name, "give a day as YYYY-MM-DD") from None


def chosen(page: Page) -> Selection:
    """The filter the page shows, checked and permitted as `/v1/audit` checks it."""
    vault = page.value("vault") or None
    return narrowed(
        selection(page.me, vault, 1, None),
        page.value("actor") or None,
        page.value("action") or None,
        _day(page, "from_date"),
        _day(page, "to_date"),
    )


async def _head(page: Page) -> dict[str, Any] | None:
    head = await page.center.store.audit_head()
    if head is None:
        return None
    return sign_checkpoint(page.center.keyring.key, *head).to_dict()


@router.get("/audit")
async def show(page: SignedIn) -> Response:
    wanted = chosen(page)
    offset = page.offset()
    broken: str | None = None
    try:
        lines = await page.center.store.audit_export(wanted)
    except AuditChainError as exc:
        lines, broken = [], exc.message
    lines.reverse()
    records = [json.loads(line) for line in lines[offset : offset + PAGE_SIZE]]
    query = urlencode({name: page.value(name) for name in FILTERS if page.value(name)})
    return page.render(
        "audit.html",
        records=records,
        total=len(lines),
        offset=offset,
        size=PAGE_SIZE,
        broken=broken,
        head=await _head(page),
        filters={name: page.value(name) for name in FILTERS},
        query=query,
    )


@router.get("/audit/export")
async def export(page: SignedIn) -> Response:
    response = ndjson(await page.center.store.audit_export(chosen(page)))
    response.headers["Content-Disposition"] = 'attachment; filename="audit.ndjson"'
    response.headers["Cache-Control"] = "no-store"
    return response
