"""The routes anyone may call: `/` (to the console), health, the public keys, and the
revocation feed.

None of them needs a credential and none returns anything secret or user-identifying
beyond what a node needs to verify tokens offline.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Response
from fastapi.responses import JSONResponse, RedirectResponse
from pydantic import Field

from center import revocations
from center.release import VERSION
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


class Ready(Out):
    status: Literal["ready", "not_ready"]
    reason: str | None = Field(
        None, description="Why not: `database: …`, `restart_required: …` or `draining: …`"
    )


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


@router.get("/", include_in_schema=False)
async def root() -> RedirectResponse:
    """A person opening the center's address lands in the console (its sign-in page)."""
    return RedirectResponse("/console", status_code=303)


@router.get("/favicon.ico", include_in_schema=False)
async def favicon() -> RedirectResponse:
    """What a browser asks for on any page that names no icon (the sign-in pages)."""
    return RedirectResponse("/console/static/favicon.svg", status_code=308)


@router.get("/healthz", tags=["operations"], summary="Liveness and lock state; no authentication")
async def healthz(center: CenterDep) -> Health:
    """`status` is `ok`, or `restart_required` once a persistence failure locked changes."""
    now = center.store.clock()
    head = await center.store.audit_head()
    return Health(
        status="restart_required" if center.store.locked else "ok",
        version=VERSION,
        database=center.settings.backend,
        started=int(center.started),
        uptime=int(now - center.started),
        audit_seq=head[0] if head else 0,
        kid=center.keyring.kid,
    )


@router.get(
    "/readyz",
    tags=["operations"],
    summary="Whether this process can serve now; no authentication",
    response_model=Ready,
    responses={503: {"model": Ready, "description": "Not ready: send requests elsewhere"}},
)
async def readyz(center: CenterDep) -> JSONResponse:
    """200 `ready`, or 503 `not_ready` while the database does not answer, changes are
    locked or the process is draining before it stops: the health check for a proxy in
    front of several centers. It comes back by itself with the database."""
    reason = "draining: stopping" if center.draining else await center.store.ready()
    body = Ready(status="ready" if reason is None else "not_ready", reason=reason)
    headers = {"Cache-Control": "no-store"}
    return JSONResponse(
        body.model_dump(), status_code=200 if reason is None else 503, headers=headers
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
