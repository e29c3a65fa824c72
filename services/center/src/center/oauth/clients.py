"""RFC 7591 dynamic client registration (docs/design.md#client-registration): public
clients only, strict redirect URIs, and a bounded table.

Anyone may add a client, by registering or by naming a metadata document at
`/authorize`, so the bound must never cost a client a member signed in through: one with
a consent or a live refresh family is *held* and never forgotten. Of the clients nobody
holds, registered ones and ones known by their document are bounded apart (`MAX_CLIENTS`
and `MAX_DOCUMENTS`), each forgetting its least recently used first: a flood of one kind
cannot push out the other, and nothing anonymous pushes out a held client. The table
holds at most `MAX_CLIENTS + MAX_DOCUMENTS` clients besides the held ones, whose number
only signed-in members can raise.

Redirect URIs are https, or http on loopback (`localhost`, `127.0.0.1`, `[::1]`), where
RFC 8252 §7.3 lets a native client pick any port at run time: a registered loopback URI
matches a presented one that differs only in the port. Every other comparison is exact,
in constant time — a redirect to an unchecked URI would make the center an open
redirector.
"""

from __future__ import annotations

import hmac
import re
import secrets
from collections.abc import Sequence
from typing import Any
from urllib.parse import SplitResult, urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy import ColumnElement, and_, delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from center.db.models import CLIENT_ID, OAuthClient, OAuthConsent, OAuthFamily
from center.log import get_logger
from center.oauth.errors import OAuthError
from center.store import Change
from tickets.claims import plain_id

MAX_CLIENTS = 1000
"""Registered clients nobody holds (see the module docstring)."""
MAX_DOCUMENTS = 1000
"""Clients known by their metadata document that nobody holds."""
MAX_REDIRECT_URIS = 10
MAX_URI = 2048
MAX_CLIENT_ID = 64
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
HOST = re.compile(r"[a-z0-9.-]{1,253}|[0-9a-f:.]{2,45}")
"""A DNS name or an IP literal: nothing that could break out of a CSP source list."""
GRANT_TYPES = ("authorization_code", "refresh_token")


class ClientMetadata(BaseModel):
    """The registration request; metadata we do not use is ignored (RFC 7591 §2)."""

    model_config = ConfigDict(extra="ignore", strict=True)

    redirect_uris: list[str] = Field(min_length=1, max_length=MAX_REDIRECT_URIS)
    client_name: str | None = Field(None, max_length=256)
    grant_types: list[str] = Field(default_factory=lambda: list(GRANT_TYPES), max_length=8)
    response_types: list[str] = Field(default_factory=lambda: ["code"], max_length=8)
    token_endpoint_auth_method: str = Field("none", max_length=64)


def _metadata_error(description: str) -> OAuthError:
    return OAuthError("invalid_client_metadata", "invalid_client_metadata", description)


def _redirect_error(description: str) -> OAuthError:
    return OAuthError("invalid_redirect_uri", "invalid_redirect_uri", description)


def _split(uri: str) -> SplitResult | None:
    """The parts of an absolute http(s) URI without user info or fragment, else None."""
    if len(uri) > MAX_URI or "#" in uri or not uri.isprintable() or " " in uri:
        return None
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError:
        return None
    if parts.scheme not in {"http", "https"} or "@" in parts.netloc:
        return None
    if not parts.hostname or not HOST.fullmatch(parts.hostname):
        return None
    return parts


def check_redirect_uri(uri: str) -> str:
    """`uri` if registrable: absolute, no fragment or user info, https or loopback http."""
    parts = _split(uri)
    if parts is None:
        raise _redirect_error(
            "each redirect_uri must be an absolute http(s) URL of at most "
            f"{MAX_URI} characters, without user info or fragment"
        )
    if parts.scheme == "http" and parts.hostname not in LOOPBACK_HOSTS:
        raise _redirect_error(
            "redirect_uris must use https; plain http is allowed on localhost, "
            "127.0.0.1 and [::1] only"
        )
    return uri


def parse_metadata(body: Any) -> ClientMetadata:
    """The validated registration request, or the RFC 7591 error for it."""
    if not isinstance(body, dict):
        raise _metadata_error("send the client metadata as a JSON object")
    try:
        meta = ClientMetadata.model_validate(body)
    except ValidationError as exc:
        first = exc.errors(include_input=False, include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"]) or "body"
        if where.startswith("redirect_uris"):
            raise _redirect_error(f"{where}: {first['msg']}") from None
        raise _metadata_error(f"{where}: {first['msg']}") from None
    for uri in meta.redirect_uris:
        check_redirect_uri(uri)
    if meta.token_endpoint_auth_method != "none":  # noqa: S105 - a method name, not a password
        raise _metadata_error(
            "only public clients are registered: use token_endpoint_auth_method none (with PKCE)"
        )
    if (
        not set(meta.grant_types) <= set(GRANT_TYPES)
        or "authorization_code" not in meta.grant_types
    ):
        raise _metadata_error("grant_types may be authorization_code and refresh_token only")
    if set(meta.response_types) != {"code"}:
        raise _metadata_error('response_types must be ["code"]')
    if meta.client_name is not None and not meta.client_name.isprintable():
        raise _metadata_error("client_name must be printable text")
    return meta


def view(row: OAuthClient) -> dict[str, Any]:
    """The registration response (RFC 7591 §3.2.1); a public client has no secret."""
    return {
        "client_id": row.id,
        "client_id_issued_at": row.created,
        "client_name": row.name,
        "redirect_uris": list(row.redirect_uris),
        "grant_types": list(row.grant_types),
        "response_types": list(row.response_types),
        "token_endpoint_auth_method": "none",
    }


async def register(work: Change, meta: ClientMetadata, limit: int = MAX_CLIENTS) -> dict[str, Any]:
    """Store a new client; beyond `limit` registered clients nobody holds, the least
    recently used of those are forgotten."""
    row = OAuthClient(
        id=plain_id(secrets.token_urlsafe(16)),
        name=meta.client_name,
        redirect_uris=list(dict.fromkeys(meta.redirect_uris)),
        grant_types=list(dict.fromkeys(meta.grant_types)),
        response_types=["code"],
        created=work.now,
        last_used=work.now,
    )
    work.session.add(row)
    await _evict(work, row.id, OAuthClient.expires.is_(None), limit)
    get_logger().info("client_registered", client=row.id)
    return view(row)


def unheld(now: int) -> ColumnElement[bool]:
    """Clients no member signed in through: no consent, no live refresh family."""
    consents = select(OAuthConsent.client_id)
    families = select(OAuthFamily.client_id).where(
        OAuthFamily.revoked.is_(None), OAuthFamily.expires > now
    )
    return and_(OAuthClient.id.not_in(consents), OAuthClient.id.not_in(families))


async def _evict(work: Change, kept: str, kind: ColumnElement[bool], limit: int) -> None:
    """Forget the least recently used clients of `kind` nobody holds, beyond `limit`."""
    await work.session.flush()
    evictable = and_(kind, unheld(work.now))
    count = await work.session.scalar(select(func.count()).where(evictable)) or 0
    if count > limit:
        oldest = (
            select(OAuthClient.id)
            .where(evictable, OAuthClient.id != kept)
            .order_by(OAuthClient.last_used, OAuthClient.created, OAuthClient.id)
            .limit(count - limit)
        )
        evicted = list((await work.session.scalars(oldest)).all())
        await work.session.execute(delete(OAuthClient).where(OAuthClient.id.in_(evicted)))
        get_logger().info("client_evicted", count=len(evicted))


async def remember(
    work: Change,
    client_id: str,
    meta: ClientMetadata,
    *,
    logo_uri: str | None,
    max_age: int,
    limit: int = MAX_DOCUMENTS,
) -> None:
    """Keep what a client's metadata document says (fetched just now) for `max_age`
    seconds; beyond `limit` documents nobody holds, the least recently used are forgotten
    (never a registered client, never a held one)."""
    row = await work.session.get(OAuthClient, client_id)
    if row is None:
        row = OAuthClient(id=client_id, created=work.now)
        work.session.add(row)
    row.name = meta.client_name
    row.redirect_uris = list(dict.fromkeys(meta.redirect_uris))
    row.grant_types = list(dict.fromkeys(meta.grant_types))
    row.response_types = ["code"]
    row.logo_uri = logo_uri
    row.expires = work.now + max_age
    row.last_used = work.now
    await _evict(work, client_id, OAuthClient.expires.is_not(None), limit)
    get_logger().info("client_document_fetched", client=client_id, max_age=max_age)


async def find(session: AsyncSession, client_id: str) -> OAuthClient | None:
    longest = CLIENT_ID if client_id.startswith("https://") else MAX_CLIENT_ID
    if not client_id or len(client_id) > longest:
        return None
    return await session.get(OAuthClient, client_id)


def _loopback_match(registered: str, presented: str) -> bool:
    mine, theirs = _split(registered), _split(presented)
    if mine is None or theirs is None or mine.hostname not in LOOPBACK_HOSTS:
        return False
    return (mine.scheme, mine.hostname, mine.path, mine.query) == (
        theirs.scheme,
        theirs.hostname,
        theirs.path,
        theirs.query,
    )


def redirect_matches(registered: Sequence[str], presented: str) -> bool:
    """Whether `presented` is one of the client's redirect URIs (see the module docstring);
    every registered URI is compared, so the time taken does not say which one matched."""
    wanted = presented.encode("utf-8")
    found = False
    for uri in registered:
        exact = hmac.compare_digest(uri.encode("utf-8"), wanted)
        found = exact or _loopback_match(uri, presented) or found
    return found
