"""The routes anyone may call: health, the public keys, and the revocation feed.

None of them needs a credential and none returns anything secret or user-identifying
beyond what a node needs to verify tokens offline.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Response
from pydantic import Field

from center import __version__, revocations
from center.routes.deps import CenterDep, Out
from tickets.keys import b64url_encode

router = APIRouter()
CACHE = "public, max-age=60"
SECONDS = "Unix time, seconds"


class Health(Out):
    status: Literal["ok", "restart_required"]
    version: str
    database: str = Field(description="sqlite or postgresql")
    started: int = Field(description=SECONDS)
    uptime: int = Field(description="Seconds since the start")
    audit_seq: int = Field(description="The audit log's last seq (0: empty)")
    kid: str = Field(description="The active signing key")


class Jwk(Out):
    """An Ed25519 public key (RFC 8037); `not_after` only on a retired key."""

    kty: str
    crv: str
    x: str
    kid: str = Field(description="RFC 7638 thumbprint")
    alg: str
    use: str
    not_after: int | None = Field(None, description="Retired: the last second it signed")


class PublicKey(Out):
    kid: str
    alg: str
    public_key: str = Field(description="The raw 32-byte key, base64url")
    jwk: Jwk
    issuer: str


class Jwks(Out):
    keys: list[Jwk]


class Snapshot(Out):
    seq: int = Field(description="Monotonic; a node rejects a lower one")
    iat: int = Field(description=SECONDS)
    snapshot: str = Field(description="JWS of type secondbrain-revocation+jwt")


@router.get("/healthz", tags=["operations"], summary="Liveness and lock state; no authentication")
async def healthz(center: CenterDep) -> Health:
    """`status` is `ok`, or `restart_required` once a persistence failure locked changes."""
    now = center.store.clock()
    head = await center.store.audit_head()
    return Health(
        status="restart_required" if center.store.locked else "ok",
        version=__version__,
        database=center.settings.backend,
        started=int(center.started),
        uptime=int(now - center.started),
        audit_seq=head[0] if head else 0,
        kid=center.keyring.kid,
    )


@router.get(
    "/v1/public-key",
    tags=["keys"],
    summary="The active signing key's public half",
    response_model=PublicKey,
    response_model_exclude_unset=True,
)
async def public_key(center: CenterDep, response: Response) -> dict[str, Any]:
    """For a node's configuration: `kid` (RFC 7638 thumbprint) and the raw key."""
    key = center.keyring.key.public
    response.headers["Cache-Control"] = CACHE
    return {
        "kid": key.kid,
        "alg": "Ed25519",
        "public_key": b64url_encode(key.raw),
        "jwk": key.to_jwk(),
        "issuer": center.settings.issuer,
    }


@router.get(
    "/.well-known/jwks.json",
    tags=["keys"],
    summary="Every key a valid token may be signed with",
    response_model=Jwks,
    response_model_exclude_unset=True,
)
async def jwks(center: CenterDep, response: Response) -> dict[str, Any]:
    """Active and retired keys; a retired key leaves once its last token expired."""
    async with center.store.read() as session:
        keys = await center.keyring.key_set(session, center.store.now())
    response.headers["Cache-Control"] = CACHE
    return keys.to_jwks()


@router.get(
    "/v1/revocations",
    tags=["revocations"],
    summary="Signed snapshot of what is revoked; monotonic seq",
    response_model=Snapshot,
)
async def snapshot(center: CenterDep, response: Response) -> dict[str, Any]:
    """`snapshot` is a JWS of type `secondbrain-revocation+jwt`; verify it with the JWKS."""
    response.headers["Cache-Control"] = "no-cache"
    return await revocations.publish(center.store, center.keyring, center.settings.issuer)
