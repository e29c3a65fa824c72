"""Consent: what a member allows a client after signing in, remembered per member and
client so that the next sign-in within it skips the page, and revocable.

An offer is what a request would get: the permissions its `scope` names that the member
holds, and the member's vaults. The member may narrow both. A remembered consent keeps
what was offered and what was chosen, for one redirect origin: a later offer within what
was offered, to that origin, gets what was chosen (as far as the offer reaches); a wider
offer (more permissions, more vaults), a `scope` named beyond what was chosen (a step-up)
or another origin asks again. Revoking a consent
ends the member's sign-ins with that client too: their refresh families and live access
tokens are revoked and unredeemed codes forgotten, so the client must ask again.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from center.db.models import OAuthClient, OAuthCode, OAuthConsent
from center.errors import InvalidArgumentError, NotFoundError
from center.oauth import refresh
from center.oauth.codes import granted_scope
from center.principals import Principal, check_vault
from center.store import Change
from tickets import ALL_VAULTS, SCOPES, Permissions, UnknownScopeError
from tickets.scopes import EXPANSION, from_claim, scope_name, to_claim

MAX_VAULTS = 256
"""Vaults one consent form may name."""


@dataclass(frozen=True)
class Offer:
    """What a checked request would get without narrowing: the member's permissions the
    request's scope names, and the member's vaults (`("*",)`: every vault)."""

    permissions: Permissions
    vaults: tuple[str, ...]

    def binding(self) -> tuple[bytes, ...]:
        """What the consent form's token binds besides the request: what it offered."""
        return to_claim(self.permissions).encode(), "\n".join(self.vaults).encode()


@dataclass(frozen=True)
class Choice:
    """What the member allowed: within the offer, never empty."""

    permissions: Permissions
    vaults: tuple[str, ...]


def offer(principal: Principal, scope: str | None) -> Offer | None:
    """The offer for a member signing in with `scope`; None if it names nothing it holds."""
    permissions = granted_scope(scope, principal.permissions)
    return Offer(permissions, principal.vaults) if permissions else None


def scope_options(offered: Permissions) -> list[Permissions]:
    """The scopes a member may pick: the one offered, then each narrower wire scope,
    widest first (reading before writing blind)."""
    narrower = [EXPANSION[s] for s in SCOPES if EXPANSION[s] < offered]
    return [offered, *sorted(narrower, key=lambda p: (-len(p), "read" not in p))]


def meet(first: Sequence[str], second: Sequence[str]) -> tuple[str, ...]:
    """The vaults in both lists (`["*"]` is every vault)."""
    if tuple(first) == (ALL_VAULTS,):
        return tuple(second)
    if tuple(second) == (ALL_VAULTS,):
        return tuple(first)
    return tuple(sorted(set(first) & set(second)))


def within(inner: Sequence[str], outer: Sequence[str]) -> bool:
    return tuple(outer) == (ALL_VAULTS,) or (
        tuple(inner) != (ALL_VAULTS,) and set(inner) <= set(outer)
    )


def choose(made: Offer, scope: str, vaults: Iterable[str]) -> Choice | str:
    """The member's choice from the consent form, or what is wrong with it (for the form
    again). `scope` is a scope claim (`read write`), `vaults` the boxes ticked."""
    try:
        permissions = from_claim(scope)
    except UnknownScopeError:
        return "Choose one of the access levels offered."
    if permissions not in scope_options(made.permissions):
        return "Choose one of the access levels offered."
    picked = list(dict.fromkeys(vaults))
    if not picked:
        return "Choose at least one vault, or deny the request."
    if len(picked) > MAX_VAULTS:
        return "Choose among the vaults offered."
    try:
        # Every vault ticked covers any other box ticked with it.
        names = [ALL_VAULTS] if ALL_VAULTS in picked else sorted(check_vault(v) for v in picked)
    except InvalidArgumentError:
        return "Choose among the vaults offered."
    if not within(names, made.vaults):
        return "Choose among the vaults offered."
    return Choice(permissions, tuple(names))


def ticked(made: Offer, scope: str, vaults: Iterable[str]) -> Choice:
    """What the form had selected, for showing it again (an access level not offered
    shows the offer's); not checked against the offer."""
    try:
        permissions = from_claim(scope)
    except UnknownScopeError:
        permissions = made.permissions
    if permissions not in scope_options(made.permissions):
        permissions = made.permissions
    return Choice(permissions, tuple(vaults))


async def remembered(
    session: AsyncSession,
    member_id: str,
    client_id: str,
    origin: str,
    made: Offer,
    *,
    named_scope: bool,
) -> tuple[OAuthConsent, Choice] | None:
    """The remembered consent that covers `made` for `origin`, and what it allows of it;
    None when the member must be asked (none, another origin, or a wider offer).

    A request that names a `scope` beyond what the member chose asks again even if it
    asks no more than before: that is a step-up after a 403 `insufficient_scope`, and
    answering it with the narrowed choice again would send the client round in a loop
    the member never sees. A request without `scope` gets the choice remembered."""
    row = await find(session, member_id, client_id)
    if row is None or row.origin != origin:
        return None
    if not made.permissions <= from_claim(row.asked_scope):
        return None
    if named_scope and not made.permissions <= from_claim(row.scope):
        return None
    if not within(made.vaults, row.asked_vaults):
        return None
    permissions = made.permissions & from_claim(row.scope)
    vaults = meet(made.vaults, row.vaults)
    if not permissions or not vaults:
        return None
    return row, Choice(permissions, vaults)


async def find(session: AsyncSession, member_id: str, client_id: str) -> OAuthConsent | None:
    query = select(OAuthConsent).where(
        OAuthConsent.member_id == member_id, OAuthConsent.client_id == client_id
    )
    found: OAuthConsent | None = await session.scalar(query)
    return found


def _described(permissions: Permissions, vaults: Sequence[str]) -> dict[str, Any]:
    return {
        "scope": scope_name(permissions) or to_claim(permissions),
        "vault": vaults[0] if len(vaults) == 1 else None,
    }


async def remember(
    work: Change, member_id: str, client: OAuthClient, *, origin: str, made: Offer, choice: Choice
) -> OAuthConsent:
    """Keep the member's choice (replacing an earlier one for the client) and audit it."""
    row = await find(work.session, member_id, client.id)
    if row is None:
        row = OAuthConsent(
            id=secrets.token_hex(16), member_id=member_id, client_id=client.id, created=work.now
        )
        work.session.add(row)
    row.client_name = client.name
    row.origin = origin
    row.asked_scope, row.asked_vaults = to_claim(made.permissions), list(made.vaults)
    row.scope, row.vaults = to_claim(choice.permissions), list(choice.vaults)
    row.updated = work.now
    narrowed = choice != Choice(made.permissions, made.vaults)
    work.record(
        "consent.give",
        actor=member_id,
        subject=member_id,
        object=f"client:{client.id}",
        **_described(choice.permissions, choice.vaults),
        reason=f"consent {row.id} for {origin}: vaults {', '.join(choice.vaults)}"
        + (
            f"; narrowed from {to_claim(made.permissions)} in {', '.join(made.vaults)}"
            if narrowed
            else ""
        ),
    )
    return row


def denied(work: Change, member_id: str, client_id: str, origin: str, made: Offer) -> None:
    work.record(
        "consent.deny",
        actor=member_id,
        subject=member_id,
        object=f"client:{client_id}",
        **_described(made.permissions, made.vaults),
        reason=f"denied for {origin}",
    )


def view(row: OAuthConsent) -> dict[str, Any]:
    return {
        "id": row.id,
        "member": row.member_id,
        "client_id": row.client_id,
        "client_name": row.client_name,
        "origin": row.origin,
        "scope": row.scope,
        "vaults": list(row.vaults),
        "asked_scope": row.asked_scope,
        "asked_vaults": list(row.asked_vaults),
        "created": row.created,
        "updated": row.updated,
        "used": row.used,
    }


async def listing(
    session: AsyncSession, caller: Principal, member: str | None = None
) -> list[dict[str, Any]]:
    """Remembered consents: every member's for the operator (or `member`'s), else the
    caller's own."""
    query = select(OAuthConsent).order_by(OAuthConsent.member_id, OAuthConsent.created)
    if not caller.is_operator:
        query = query.where(OAuthConsent.member_id == caller.id)
    elif member is not None:
        query = query.where(OAuthConsent.member_id == member)
    return [view(row) for row in (await session.scalars(query)).all()]


async def revoke(work: Change, caller: Principal, consent_id: str) -> dict[str, Any]:
    """Forget a consent (the operator's any, a member's own) and end the sign-ins it
    allowed; the consent as it was, with how many sign-ins ended."""
    row = await work.session.get(OAuthConsent, consent_id, with_for_update=True)
    if row is None or not (caller.is_operator or row.member_id == caller.id):
        raise NotFoundError("consent", consent_id)
    ended = await end_sign_ins(work, row.member_id, row.client_id, caller.id)
    await work.session.delete(row)
    work.record(
        "consent.revoke",
        actor=caller.id,
        subject=row.member_id,
        object=f"client:{row.client_id}",
        scope=scope_name(from_claim(row.scope)) or row.scope,
        reason=f"consent {row.id} revoked; {ended} sign-in(s) ended",
    )
    return {**view(row), "ended_sign_ins": ended}


async def end_sign_ins(work: Change, member_id: str, client_id: str, actor: str) -> int:
    """Revoke the member's live refresh families with the client (and their access
    tokens) and forget its unredeemed codes; how many families ended."""
    await work.session.execute(
        delete(OAuthCode).where(
            OAuthCode.member_id == member_id,
            OAuthCode.client_id == client_id,
            OAuthCode.used.is_(None),
        )
    )
    return await refresh.end_sessions(
        work, member_id, "consent.revoke", client_id=client_id, actor=actor
    )


async def forget_member(work: Change, member_id: str) -> None:
    """A removed member's consents go with it."""
    await work.session.execute(delete(OAuthConsent).where(OAuthConsent.member_id == member_id))
