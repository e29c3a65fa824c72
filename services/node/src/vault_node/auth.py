"""Bearer tokens on `/mcp`: center-signed JWS verified offline, and the 401/403 answers.

Every refusal is the same 401 with `WWW-Authenticate: Bearer resource_metadata=…`;
the reason goes to the log, and to the caller only for a genuine token that is for another
node or has expired (`told`). Only a missing permission is a 403.
Where the keys and the revocation snapshot come from is `vault_node.feed`.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from tickets import PERMISSIONS, Ticket, TokenError, Verifier
from vault_node.config import NodeConfig
from vault_node.errors import SERVER_ERROR as FORBIDDEN_RPC_CODE
from vault_node.errors import AuthFailure
from vault_node.feed import KeySource

__all__ = [
    "KeySource",  # `secondbrain validate` loads the keys through it
    "authenticate",
    "bearer",
    "forbidden",
    "metadata_router",
    "unauthorized",
]


def bearer(request: Request) -> str:
    """The token of `Authorization: Bearer <token>`; AuthFailure when there is none."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise AuthFailure("missing")
    return token.strip()


async def authenticate(request: Request, verifier: Verifier) -> Ticket:
    """Verify the request's bearer token: here when its key is known (a checked token is
    cached, so this costs microseconds), in a worker when an unknown kid may fetch keys."""
    token = bearer(request)
    try:
        if verifier.needs_no_fetch(token):
            return verifier.verify(token)
        return await run_in_threadpool(verifier.verify, token)
    except TokenError as exc:
        raise AuthFailure(exc.reason) from exc


def told(reason: str, config: NodeConfig) -> str | None:
    """What the 401 may say of `reason`: only of a token whose signature verified (so its
    holder can read the same from the token itself), never of a forged or malformed one."""
    if reason == "bad_aud":
        return (
            f"this token is for another node; ask the center for one whose resource is"
            f" {config.resource}"
        )
    if reason == "expired":
        return "this token has expired; ask the center for a new one"
    return None


def unauthorized(
    config: NodeConfig, reason: str = "", metadata_url: str | None = None
) -> JSONResponse:
    """The one 401 every token problem gets; its message names the reason only where
    `told` says it may. `metadata_url` is where the metadata for the address the client
    used lives (the one address's, when it came that way)."""
    return JSONResponse(
        {
            "error": "invalid_token",
            "status": 401,
            "message": told(reason, config) or "a valid bearer token for this node is required",
        },
        status_code=401,
        headers={
            "WWW-Authenticate": f'Bearer resource_metadata="{metadata_url or config.metadata_url}"',
            "Cache-Control": "no-store",
        },
    )


def forbidden(
    config: NodeConfig,
    needed: frozenset[str],
    message: str = "",
    request_id: Any = None,
    metadata_url: str | None = None,
) -> JSONResponse:
    """403 `insufficient_scope`, naming the permissions the call needs in the challenge
    (what step-up clients read) and a JSON-RPC error as the body, whose message — the tool,
    what the token has and the scope to ask for — is what an MCP client shows its caller
    (the SDK surfaces a JSON-RPC error body at any status, and a stand-in otherwise)."""
    scope = " ".join(sorted(needed))
    challenge = (
        f'Bearer error="insufficient_scope", scope="{scope}", '
        f'resource_metadata="{metadata_url or config.metadata_url}"'
    )
    data = {"code": "forbidden", "status": 403, "scope": scope}
    body = {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {"code": FORBIDDEN_RPC_CODE, "message": message, "data": data},
    }
    return JSONResponse(
        body,
        status_code=403,
        headers={"WWW-Authenticate": challenge, "Cache-Control": "no-store"},
    )


def metadata_router() -> APIRouter:
    """RFC 9728 protected-resource metadata at the root and the `/mcp`-suffixed path. Its
    `resource` is the address the client used: the deployment's one address when the
    request came by its host (the proxy passes `Host` through), else this node's own."""
    router = APIRouter()

    async def metadata(request: Request) -> Response:
        node = request.app.state.node
        config: NodeConfig = node.config
        document: dict[str, Any] = {
            "resource": node.resource_for(request),
            "authorization_servers": [config.issuer],
            "bearer_methods_supported": ["header"],
            "scopes_supported": list(PERMISSIONS),  # the center advertises the same
            "resource_name": "secondbrain vault node",
        }
        headers = {"Cache-Control": "max-age=300", "Vary": "Host"}
        return JSONResponse(document, headers=headers)

    for path in (
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ):
        router.add_api_route(path, metadata, methods=["GET"], include_in_schema=False)
    return router
