"""Bearer tokens on `/mcp`: center-signed JWS verified offline, and the 401/403 answers.

Every refusal is the same 401 with `WWW-Authenticate: Bearer resource_metadata=…`;
the reason goes to the log, never to the caller. Only a missing permission is a 403.
Keys come from a JWKS file or the center (cached, refreshed on an unknown `kid`);
the revocation snapshot from a file or the center's feed, polled in the background.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import structlog
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from tickets import (
    JWKError,
    KeySet,
    RevocationState,
    SnapshotError,
    Ticket,
    TokenError,
    Verifier,
)
from vault_node.config import NodeConfig
from vault_node.errors import ConfigError

log = structlog.get_logger("vault_node")

JWKS_PATH = "/.well-known/jwks.json"
REVOCATIONS_PATH = "/v1/revocations"
FETCH_TIMEOUT = 5.0


class AuthFailure(Exception):  # noqa: N818 — a signal for the boundary, not an error report
    """The request carries no acceptable token; `reason` is logged, never shown."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class KeySource:
    """Where the trusted public keys come from: a JWKS file, the center, or both."""

    def __init__(self, config: NodeConfig) -> None:
        self.file = config.jwks_file
        self.url = f"{config.center_url}{JWKS_PATH}" if config.center_url else ""

    def initial(self) -> KeySet:
        """The key set at start; a file that cannot be read stops the node."""
        if self.file is not None:
            try:
                return _jwks_from_text(self.file.read_text(encoding="utf-8"))
            except (OSError, ValueError, JWKError) as exc:
                raise ConfigError([f"jwks_file {self.file}: {_reason(exc)}"]) from exc
        return self.refresh() or KeySet()

    def refresh(self) -> KeySet | None:
        """A fresh key set, or None when it cannot be had (the verifier keeps its own)."""
        try:
            if self.url:
                response = httpx.get(self.url, timeout=FETCH_TIMEOUT)
                response.raise_for_status()
                return _jwks_from_text(response.text)
            if self.file is not None:
                return _jwks_from_text(self.file.read_text(encoding="utf-8"))
        except (OSError, ValueError, JWKError, httpx.HTTPError) as exc:
            log.warning("jwks_refresh_failed", error=_reason(exc))
        return None


def _jwks_from_text(text: str) -> KeySet:
    return KeySet.from_jwks(json.loads(text))


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    if isinstance(exc, JWKError):
        return exc.message
    return type(exc).__name__


class RevocationFeed:
    """Keeps the node's RevocationState current from a file or the center's feed."""

    def __init__(self, config: NodeConfig, state: RevocationState, verifier: Verifier) -> None:
        self.file = config.revocation_file
        self.url = f"{config.center_url}{REVOCATIONS_PATH}" if config.center_url else ""
        self.interval = config.seconds("revocation_poll")
        self.issuer = config.issuer
        self.state = state
        self.verifier = verifier

    def poll_once(self) -> bool:
        """Fetch and apply one snapshot; False (and a log line) when that failed."""
        try:
            token = self._fetch()
            self.state.accept(token, self.verifier.keys, issuer=self.issuer)
        except SnapshotError as exc:
            log.warning("revocation_refused", reason=exc.reason)
            return False
        except (OSError, ValueError, httpx.HTTPError) as exc:
            log.warning("revocation_fetch_failed", error=_reason(exc))
            return False
        return True

    def _fetch(self) -> str:
        if self.url:
            response = httpx.get(self.url, timeout=FETCH_TIMEOUT)
            response.raise_for_status()
            return _snapshot_token(response.text)
        assert self.file is not None
        return _snapshot_token(self.file.read_text(encoding="utf-8"))

    async def run(self) -> None:
        """Poll forever (cancelled at shutdown)."""
        while True:
            await anyio.sleep(self.interval)
            await run_in_threadpool(self.poll_once)


def _snapshot_token(text: str) -> str:
    """The feed answers the compact JWS itself or `{"snapshot": "<jws>"}`."""
    body = text.strip()
    if body.startswith("{"):
        document = json.loads(body)
        token = document.get("snapshot") if isinstance(document, dict) else None
        if not isinstance(token, str):
            raise ValueError("no snapshot member in the revocation document")
        return token
    return body


def build_verifier(config: NodeConfig) -> tuple[Verifier, RevocationFeed]:
    """The verifier for this node's resource URL and the feed that keeps it current."""
    keys = KeySource(config)
    state = RevocationState()
    verifier = Verifier(
        keys=keys.initial(),
        issuer=config.issuer,
        audience=config.resource,
        revocation=state,
        refresh=keys.refresh,
        max_stale=config.seconds("max_stale"),
        read_when_stale=config.read_when_stale,
    )
    return verifier, RevocationFeed(config, state, verifier)


def bearer(request: Request) -> str:
    """The token of `Authorization: Bearer <token>`; AuthFailure when there is none."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise AuthFailure("missing")
    return token.strip()


async def authenticate(request: Request, verifier: Verifier) -> Ticket:
    """Verify the request's bearer token (in a worker: an unknown kid may fetch keys)."""
    token = bearer(request)
    try:
        return await run_in_threadpool(verifier.verify, token)
    except TokenError as exc:
        raise AuthFailure(exc.reason) from exc


def unauthorized(config: NodeConfig) -> JSONResponse:
    """The one 401 every token problem gets."""
    return JSONResponse(
        {
            "error": "invalid_token",
            "status": 401,
            "message": "a valid bearer token for this node is required",
        },
        status_code=401,
        headers={
            "WWW-Authenticate": f'Bearer resource_metadata="{config.metadata_url}"',
            "Cache-Control": "no-store",
        },
    )


def forbidden(config: NodeConfig, needed: frozenset[str]) -> JSONResponse:
    """403 `insufficient_scope`, naming the permissions the call needs."""
    scope = " ".join(sorted(needed))
    challenge = (
        f'Bearer error="insufficient_scope", scope="{scope}", '
        f'resource_metadata="{config.metadata_url}"'
    )
    return JSONResponse(
        {"error": "insufficient_scope", "status": 403, "scope": scope},
        status_code=403,
        headers={"WWW-Authenticate": challenge, "Cache-Control": "no-store"},
    )


def metadata_router(config: NodeConfig) -> APIRouter:
    """RFC 9728 protected-resource metadata at the root and the `/mcp`-suffixed path."""
    router = APIRouter()
    document: dict[str, Any] = {
        "resource": config.resource,
        "authorization_servers": [config.issuer],
        "bearer_methods_supported": ["header"],
        "scopes_supported": ["read", "write", "delete", "manage"],
        "resource_name": "secondbrain vault node",
    }

    async def metadata() -> Response:
        return JSONResponse(document, headers={"Cache-Control": "max-age=300"})

    for path in (
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ):
        router.add_api_route(path, metadata, methods=["GET"], include_in_schema=False)
    return router
