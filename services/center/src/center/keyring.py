"""The signing key from the environment, and the public keys every node must trust.

The active key is the one `SECONDBRAIN_CENTER_SECRET` holds. Rotation is a restart with
a new secret: at start, a previously active key is retired and stays in the JWKS until
the last token it signed has expired (its largest `exp` plus clock skew), then drops out.
A key that must not be trusted any longer (leaked) is revoked: it leaves the JWKS at once
and its kid travels in the revocation snapshot, so every node refuses its tokens.

Several centers on one database restart one by one, so for a while some still sign with
the retired key: each such token moves the key's `not_after` out to cover it, and a center
whose key was revoked meanwhile refuses to sign (503) until it restarts with the new one.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from center.db import Key
from center.errors import ConfigError, ConflictError, NotFoundError, UnavailableError
from center.principals import OPERATOR_ID
from center.store import Change, Store
from tickets import ACCESS_TOKEN_TYP, Claims, KeySet, PublicKey, SigningKey, sign
from tickets.keys import b64url_decode, b64url_encode
from tickets.verify import DEFAULT_SKEW


class Keyring:
    """Signs tokens with the active key and publishes the key set."""

    def __init__(self, key: SigningKey, deployment: str | None = None) -> None:
        self.key = key
        self.deployment = deployment
        """The deployment's one MCP address, which every token's audience names when set."""

    @property
    def kid(self) -> str:
        return self.key.kid

    async def start(self, store: Store) -> None:
        """Record the active key; retire any other key that was active until now."""
        async with store.change() as work:
            rows = {row.kid: row for row in (await work.session.scalars(select(Key))).all()}
            current = rows.get(self.kid)
            if current is not None and current.revoked:
                raise ConfigError(
                    [
                        f"SECONDBRAIN_CENTER_SECRET holds key {self.kid}, which was revoked; "
                        "run `secondbrain-center key rotate` and start with the new secret"
                    ]
                )
            if current is None:
                public = b64url_encode(self.key.public.raw)
                work.session.add(Key(kid=self.kid, public=public, created=work.now, revoked=False))
                work.record("key.activate", actor="system", object=f"key:{self.kid}")
            elif current.not_after is not None:
                current.not_after = None
                work.record("key.activate", actor="system", object=f"key:{self.kid}")
            for row in rows.values():
                if row.kid != self.kid and row.not_after is None:
                    row.not_after = max(row.max_exp or 0, work.now) + DEFAULT_SKEW
                    work.record(
                        "key.retire", actor="system", object=f"key:{row.kid}", expiry=row.not_after
                    )

    async def key_set(self, session: AsyncSession, now: int) -> KeySet:
        """Active and retired keys still needed at `now`; revoked keys never."""
        usable = or_(Key.not_after.is_(None), Key.not_after >= now)
        rows = (
            await session.scalars(select(Key).where(usable, ~Key.revoked).order_by(Key.created))
        ).all()
        return KeySet(PublicKey(b64url_decode(row.public), row.not_after) for row in rows)

    async def revoke(self, work: Change, kid: str, reason: str | None = None) -> dict[str, Any]:
        """Revoke a key that no longer signs: nodes refuse its tokens at their next poll.

        The active key is refused (409): rotate first, restart, then revoke the old one."""
        row = await work.session.get(Key, kid, with_for_update=True)
        if row is None:
            raise NotFoundError("key", kid)
        if kid == self.kid:
            raise ConflictError(
                f"key {kid} is the active signing key; run `key rotate`, restart the center "
                "with the new secret, then revoke this one"
            )
        if row.revoked:
            raise ConflictError(f"key {kid} is already revoked")
        row.revoked = True
        work.record("key.revoke", actor=OPERATOR_ID, object=f"key:{kid}", reason=reason)
        return {"kid": kid, "revoked": True}

    async def revoked_kids(self, session: AsyncSession) -> frozenset[str]:
        return frozenset((await session.scalars(select(Key.kid).where(Key.revoked))).all())

    async def sign(self, work: Change, claims: Claims) -> str:
        """Sign an access token, and remember its `exp` so a retired key lives long enough."""
        mine = Key.kid == self.kid
        if await work.session.scalar(select(Key.revoked).where(mine)):
            raise UnavailableError(
                f"key {self.kid} was revoked by another center process; restart this one "
                "with the new SECONDBRAIN_CENTER_SECRET"
            )
        later = or_(Key.max_exp.is_(None), Key.max_exp < claims.exp)
        await work.session.execute(update(Key).where(mine, later).values(max_exp=claims.exp))
        until = claims.exp + DEFAULT_SKEW
        await work.session.execute(
            update(Key).where(mine, Key.not_after < until).values(not_after=until)
        )
        return sign(claims.to_payload(), self.key, typ=ACCESS_TOKEN_TYP)
