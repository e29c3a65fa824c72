"""The routes anyone may call: health, the public keys, and the revocation feed.

None of them needs a credential and none returns anything secret or user-identifying
beyond what a node needs to verify tokens offline.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response

from center import __version__, revocations
from center.routes.deps import CenterDep
from tickets.keys import b64url_encode

router = APIRouter()
CACHE = "public, max-age=60"


@router.get("/healthz", tags=["operations"], summary="Liveness and lock state; no authentication")
async def healthz(center: CenterDep) -> dict[str, Any]:
    """`status` is `ok`, or `restart_required` once a persistence failure locked changes."""
    now = center.store.clock()
    head = await center.store.audit_head()
    return {
        "status": "restart_required" if center.store.locked else "ok",
        "version": __version__,
        "database": center.settings.backend,
        "started": int(center.started),
        "uptime": int(now - center.started),
        "audit_seq": head[0] if head else 0,
        "kid": center.keyring.kid,
    }


@router.get("/v1/public-key", tags=["keys"], summary="The active signing key's public half")
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
    "/.well-known/jwks.json", tags=["keys"], summary="Every key a valid token may be signed with"
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
)
async def snapshot(center: CenterDep, response: Response) -> dict[str, Any]:
    """`snapshot` is a JWS of type `secondbrain-revocation+jwt`; verify it with the JWKS."""
    response.headers["Cache-Control"] = "no-cache"
    return await revocations.publish(center.store, center.keyring, center.settings.issuer)
