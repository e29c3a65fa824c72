"""Signing keys the operator manages (`/v1/keys`): revoking one that must not be trusted.

Rotation stays a restart with a new secret (`key rotate`); revocation is the emergency
brake for a key that leaked. The answer names the feed's seq that carries the revoked
kid, so the operator can watch every node's heartbeat reach it.
"""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from center import revocations
from center.routes.deps import CenterDep, Operator, Out

router = APIRouter(tags=["keys"])


class RevokeIn(BaseModel):
    """Why the key is revoked; recorded in the audit log (no secrets)."""

    model_config = ConfigDict(extra="forbid")

    reason: str | None = Field(None, max_length=256, description="Audit metadata; no secrets")


class RevokedKey(Out):
    kid: str
    revoked: Literal[True]
    revocation_seq: int = Field(description="The feed seq that first carries the revoked kid")


@router.post(
    "/v1/keys/{kid}/revoke",
    summary="Revoke a signing key: its tokens are refused at every node's next poll",
)
async def revoke_key(
    kid: str, center: CenterDep, _: Operator, body: RevokeIn | None = None
) -> RevokedKey:
    """404 for an unknown kid; 409 for the active key (rotate first) or a revoked one."""
    async with center.store.change() as work:
        revoked = await center.keyring.revoke(work, kid, body.reason if body else None)
    async with center.store.serialized() as session:
        seq = await revocations.current_seq(session, center.keyring, center.store.now())
    return RevokedKey(**revoked, revocation_seq=seq)
