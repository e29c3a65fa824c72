"""RFC 8707 resource indicators: which node a token is for, carried into its `aud`.

A resource is known if a registered node serves it (its MCP URL) or the operator listed
it in `SECONDBRAIN_CENTER_OAUTH_RESOURCES`. URLs compare the way nodes compare `aud`:
scheme and host lowercased, no trailing slash.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from urllib.parse import urlsplit

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from center.db.models import Node
from center.nodes import resources_for
from center.oauth.errors import OAuthError, invalid_request, invalid_target
from tickets.verify import canonical_resource

MAX_RESOURCES = 8
MAX_URL = 512


def parse(values: Sequence[str]) -> tuple[str, ...]:
    """The `resource` parameters of a request, canonical and deduplicated."""
    if len(values) > MAX_RESOURCES:
        raise invalid_request("too_many_resources", f"name at most {MAX_RESOURCES} resources")
    found: list[str] = []
    for value in values:
        parts = urlsplit(value)
        if len(value) > MAX_URL or not parts.scheme or not parts.netloc or parts.fragment:
            raise invalid_target(
                "malformed_resource", "a resource must be an absolute URL without a fragment"
            )
        url = canonical_resource(value)
        if url not in found:
            found.append(url)
    return tuple(found)


async def known(session: AsyncSession, configured: Iterable[str]) -> set[str]:
    nodes = (await session.scalars(select(Node.resource))).all()
    return {canonical_resource(url) for url in (*nodes, *configured)}


async def check_known(
    session: AsyncSession, configured: Iterable[str], resources: Iterable[str]
) -> OAuthError | None:
    """`invalid_target` naming the first resource no node or setting vouches for."""
    available = await known(session, configured)
    for url in resources:
        if url not in available:
            return invalid_target(
                "unknown_resource", f"{url} is not a resource this center issues tokens for"
            )
    return None


async def audience(
    session: AsyncSession,
    configured: Iterable[str],
    asked: Sequence[str],
    allowed: Sequence[str],
    vaults: Sequence[str],
) -> list[str] | OAuthError:
    """The `aud` of a token: what the request asks (within `allowed`, the resources
    granted earlier, when there are any), else what was granted, else the nodes holding
    the member's vaults."""
    if asked and allowed and not set(asked) <= set(allowed):
        return invalid_target("resource_not_granted", "ask only for resources authorized before")
    chosen = list(asked or allowed) or [
        canonical_resource(url) for url in await resources_for(session, vaults)
    ]
    if not chosen:
        return invalid_target(
            "no_resource", "no registered node serves this member's vaults; send resource"
        )
    problem = await check_known(session, configured, chosen)
    return problem if problem is not None else sorted(chosen)
