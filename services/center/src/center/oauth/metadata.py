"""RFC 8414 authorization server metadata, and the well-known paths clients look for.

MCP clients look in several places: `/.well-known/oauth-authorization-server`, the
same with the issuer's path (RFC 8414 §3.1) or the MCP endpoint's path (`/mcp`)
appended, and OpenID Connect discovery (`/.well-known/openid-configuration`), which the
2025-11-25 MCP revision lets clients try. Every one of them gets the same document.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from authlib.oauth2.rfc8414 import (  # type: ignore[import-untyped]
    AuthorizationServerMetadata,
)

from tickets import PERMISSIONS

CACHE = {"Cache-Control": "max-age=300", "Access-Control-Allow-Origin": "*"}
WELL_KNOWN = ("oauth-authorization-server", "openid-configuration")


def document(issuer: str) -> dict[str, Any]:
    """The metadata for `issuer`, checked against RFC 8414 by authlib's model."""
    metadata = AuthorizationServerMetadata(
        {
            "issuer": issuer,
            "authorization_endpoint": f"{issuer}/authorize",
            "token_endpoint": f"{issuer}/token",
            "registration_endpoint": f"{issuer}/register",
            "jwks_uri": f"{issuer}/.well-known/jwks.json",
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none"],
            "scopes_supported": list(PERMISSIONS),
            "authorization_response_iss_parameter_supported": True,
            "client_id_metadata_document_supported": True,
        }
    )
    metadata.validate()
    return dict(metadata)


def suffixes(issuer: str) -> frozenset[str]:
    """Path suffixes served after each well-known name: none, `mcp`, the issuer's path."""
    path = urlsplit(issuer).path.strip("/")
    return frozenset({"", "mcp", path})
