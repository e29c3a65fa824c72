"""Authorization codes (docs/design.md#authorize): 32 random bytes, single use, 60 seconds,
stored as their SHA-256 digest and bound to member, client, redirect URI, PKCE challenge, scope,
resources and the vaults consented to. A spent code is remembered a while longer, with
the family of tokens it started, so a replay can revoke that family (RFC 6749 §4.1.2).
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence

from sqlalchemy import delete, update

from center import principals
from center.auth import digest
from center.db.models import Member, OAuthClient, OAuthCode
from center.oauth.authorize import AuthorizeRequest
from center.oauth.errors import OAuthError
from center.oauth.login import SignedIn
from center.principals import Principal
from center.store import Change
from tickets import PERMISSIONS, SCOPES, Permissions
from tickets.scopes import EXPANSION, as_permissions, scope_name, to_claim

CODE_TTL = 60
KEEP = 600
"""Spent and expired codes are forgotten this long after they expired."""


async def issue(
    work: Change,
    ask: AuthorizeRequest,
    member_id: str,
    generation: int,
    *,
    scope: str,
    vaults: list[str] | None = None,
) -> str:
    """A new code for `ask`; the response that carries it is the only place it appears."""
    await work.session.execute(delete(OAuthCode).where(OAuthCode.expires < work.now - KEEP))
    code = secrets.token_urlsafe(32)
    work.session.add(
        OAuthCode(
            code_hash=digest(code),
            client_id=ask.client_id,
            member_id=member_id,
            redirect_uri=ask.redirect_uri,
            challenge=ask.challenge,
            scope=scope,
            resource=list(ask.resource),
            generation=generation,
            vaults=vaults,
            created=work.now,
            expires=work.now + CODE_TTL,
        )
    )
    return code


async def take(work: Change, code: str) -> OAuthCode | None:
    """The code's row, locked for this change (None if unknown or long forgotten)."""
    return await work.session.get(OAuthCode, digest(code), with_for_update=True)


def granted_scope(scope: str | None, held: Permissions) -> Permissions:
    """What a sign-in grants: the permissions the `scope` parameter names (atomic ones
    like `read`, or wire scopes like `read_write`) that the member holds; all it holds
    when the parameter names none (`openid`, `offline_access` and the like are ignored)."""
    asked: set[str] = set()
    for word in (scope or "").split():
        if word in PERMISSIONS:
            asked.add(word)
        elif word in SCOPES:
            asked |= EXPANSION[word]
    return held & as_permissions(asked) if asked else held


async def signed_in(
    work: Change, client_id: str, ask: AuthorizeRequest, signed: SignedIn
) -> Principal | OAuthError:
    """The member who just signed in, as it stands, or the error to send the client back
    with. The sign-in is audited either way."""
    member = await still(work, signed)
    if member is None:
        return OAuthError("access_denied", "member_changed", "the member changed during sign-in")
    row = await work.session.get(Member, signed.member_id)
    assert row is not None  # locked by still()
    row.last_sign_in = work.now
    permissions = granted_scope(ask.scope, member.permissions)
    work.record(
        "login.success",
        actor=member.id,
        subject=member.id,
        scope=scope_name(permissions) or to_claim(permissions) or None,
        object=f"client:{client_id}",
    )
    if not permissions:
        return OAuthError("invalid_scope", "scope_not_held", "the member holds none of the scope")
    return member


async def still(work: Change, signed: SignedIn) -> Principal | None:
    """The member, locked for this change, if its password is still the one verified."""
    member = await work.session.get(Member, signed.member_id, with_for_update=True)
    if member is None or member.password_hash != signed.password_hash:
        return None
    return await principals.principal(work.session, member)


async def grant(
    work: Change,
    ask: AuthorizeRequest,
    member: Principal,
    permissions: Permissions,
    vaults: Sequence[str],
) -> str:
    """The code for a member who consented to `permissions` in `vaults`."""
    await work.session.execute(
        update(OAuthClient).where(OAuthClient.id == ask.client_id).values(last_used=work.now)
    )
    return await issue(
        work, ask, member.id, member.generation, scope=to_claim(permissions), vaults=list(vaults)
    )
