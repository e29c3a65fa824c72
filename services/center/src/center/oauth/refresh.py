"""Refresh tokens (docs/design.md#oauth): rotated on every use, grouped in families, replay kills.

A family is one sign-in's chain of refresh tokens. Using a token rotates it: the old
one is marked `rotated` and points at its successor's digest. Presenting a rotated
token again is a replay (RFC 9700 §4.14.2) — the family dies, with every access token
it minted that may still be live, and `token_reuse_detected` is logged and audited —
except within a short grace window after the rotation, where a duplicate of the same
request (a client retrying after a lost response, two tabs refreshing at once) gets
the same answer again instead of ending the session: the same successor and the same
access token. Neither is stored. The successor is an HMAC of the old token under a key
derived from the center's secret; the access token is signed again from what is stored
(the family, the member, the rotation time) and a jti that is an HMAC of the old token
too, and Ed25519 signatures are deterministic, so any center process sharing the
database hands out the same bytes, and only the holder of the old token can ask. More
than MAX_DUPLICATES duplicates are no client's retry: they count as a replay.
"""

from __future__ import annotations

import secrets

from sqlalchemy import delete, select, update

from center.auth import digest
from center.db.models import OAuthFamily, OAuthRefresh, Token
from center.log import get_logger
from center.oauth.keys import mac
from center.principals import OPERATOR_ID
from center.store import Change
from tickets.claims import plain_id

GRACE = 30
"""Seconds after a rotation in which a duplicate refresh gets the same tokens again."""
MAX_DUPLICATES = 3
"""Duplicates within the grace answered alike; one more kills the family as a replay."""
ANONYMOUS = "public"
"""The audit actor of an event no authenticated principal caused."""


def successor_of(key: bytes, token: str) -> str:
    return mac(key, b"refresh successor", token.encode("utf-8"))


def access_jti(key: bytes, token: str) -> str:
    """The jti of the access token a rotation of `token` mints (128 bits, like new_jti)."""
    return plain_id(mac(key, b"refresh access jti", token.encode("utf-8"))[:22])


async def start(
    work: Change,
    *,
    client_id: str,
    member_id: str,
    scope: str,
    resource: list[str],
    generation: int,
    lifetime: int,
    vaults: list[str] | None = None,
) -> tuple[OAuthFamily, str]:
    """A new family with its first refresh token; expired tokens and families go."""
    await work.session.execute(delete(OAuthRefresh).where(OAuthRefresh.expires < work.now))
    await work.session.execute(delete(OAuthFamily).where(OAuthFamily.expires < work.now))
    family = OAuthFamily(
        id=secrets.token_hex(16),
        client_id=client_id,
        member_id=member_id,
        scope=scope,
        resource=resource,
        generation=generation,
        vaults=vaults,
        access_jtis=[],
        created=work.now,
        expires=work.now + lifetime,
    )
    work.session.add(family)
    token = secrets.token_urlsafe(32)
    work.session.add(
        OAuthRefresh(
            token_hash=digest(token), family=family.id, created=work.now, expires=family.expires
        )
    )
    return family, token


async def find(work: Change, token: str) -> tuple[OAuthRefresh, OAuthFamily] | None:
    """The token's row and its family, both locked for this change."""
    row = await work.session.get(OAuthRefresh, digest(token), with_for_update=True)
    if row is None:
        return None
    family = await work.session.get(OAuthFamily, row.family, with_for_update=True)
    return None if family is None else (row, family)


async def duplicate(work: Change, row: OAuthRefresh, successor: str) -> bool:
    """Whether a rotated token's replay is a duplicate within the grace window: the
    successor it computes is the one stored, and that successor is still unused."""
    assert row.rotated is not None
    if work.now - row.rotated > GRACE or row.successor_hash != digest(successor):
        return False
    following = await work.session.get(OAuthRefresh, row.successor_hash, with_for_update=True)
    return following is not None and following.rotated is None and following.expires > work.now


def rotate(
    work: Change, row: OAuthRefresh, family: OAuthFamily, successor: str, lifetime: int
) -> None:
    """Retire `row` in favour of `successor`, which lives `lifetime` seconds."""
    row.rotated, row.successor_hash = work.now, digest(successor)
    family.expires = work.now + lifetime
    work.session.add(
        OAuthRefresh(
            token_hash=row.successor_hash,
            family=family.id,
            created=work.now,
            expires=family.expires,
        )
    )


def remember_access(family: OAuthFamily, jti: str, exp: int, now: int) -> None:
    """Note an access token of the family, so killing the family revokes it too."""
    live = [[j, e] for j, e in family.access_jtis if isinstance(e, int) and e > now]
    family.access_jtis = [*live, [jti, exp]]


async def revoke_family(work: Change, family: OAuthFamily) -> list[str]:
    """Revoke the family and its live access tokens (they join the revocation feed)."""
    family.revoked = work.now
    jtis = [str(j) for j, e in family.access_jtis if isinstance(e, int) and e > work.now]
    if jtis:
        await work.session.execute(
            update(Token)
            .where(Token.jti.in_(jtis), Token.revoked.is_(None))
            .values(revoked=work.now)
        )
    family.access_jtis = []
    return jtis


async def end_sessions(
    work: Change,
    member_id: str,
    action: str,
    *,
    client_id: str | None = None,
    actor: str = OPERATOR_ID,
) -> int:
    """End the member's live sign-ins (every one: a new password was set; or those with
    one client: its consent was revoked): their refresh tokens stop working and their
    OAuth access tokens are revoked, each audited. Agent tokens and grants stay; a change
    of authority ends those through the member's generation. How many sign-ins ended."""
    live = select(OAuthFamily).where(
        OAuthFamily.member_id == member_id, OAuthFamily.revoked.is_(None)
    )
    if client_id is not None:
        live = live.where(OAuthFamily.client_id == client_id)
    families = (await work.session.scalars(live.with_for_update())).all()
    for family in families:
        jtis = await revoke_family(work, family)
        work.record(
            "token.revoke",
            actor=actor,
            subject=member_id,
            object=f"family:{family.id}",
            reason=f"{action}: sign-in ended with {len(jtis)} access token(s)",
        )
    return len(families)


async def kill(work: Change, family: OAuthFamily, reason: str, description: str) -> None:
    """Revoke the family and its live access tokens: a replay was detected."""
    jtis = await revoke_family(work, family)
    get_logger().warning(
        "token_reuse_detected",
        reason=reason,
        family=family.id,
        client=family.client_id,
        member=family.member_id,
        revoked_access_tokens=len(jtis),
    )
    work.record(
        "token.reuse_detected",
        actor=ANONYMOUS,
        subject=family.member_id,
        object=f"family:{family.id}",
        reason=f"{description}; family and {len(jtis)} access token(s) revoked",
    )
