"""`POST /token` (docs/design.md#token-endpoint): the authorization-code grant with PKCE S256
only, and the refresh grant with rotation. Access tokens are the Ed25519 JWS every node verifies
(`client_id` claim, the member's role, the vaults consented to that the member holds,
their path rules, the member's generation, `aud` from RFC 8707).

A refusal that changed state — a code spent by a failed redemption, a family killed by
a replay — must commit those changes, so the flows return an OAuthError rather than
raise it inside the store's change.
"""

from __future__ import annotations

import hmac
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from authlib.oauth2.rfc7636.challenge import (  # type: ignore[import-untyped]
    CODE_VERIFIER_PATTERN,
    create_s256_code_challenge,
)

from center import rules
from center.db.models import OAuthFamily, OAuthRefresh, Token
from center.keyring import Keyring
from center.oauth import codes, refresh, resources
from center.oauth.consent import meet
from center.oauth.errors import OAuthError, invalid_grant, invalid_request
from center.principals import Principal, find
from center.store import Change
from center.tokens import claims_for, with_deployment
from tickets.scopes import from_claim, scope_name, to_claim

FORM = "application/x-www-form-urlencoded"
MAX_FIELDS = 32
SINGLE = ("grant_type", "client_id", "code", "code_verifier", "redirect_uri", "refresh_token")
Outcome = dict[str, Any] | OAuthError
SIGN_IN_AGAIN = "sign in again from the client"


@dataclass(frozen=True)
class TokenRequest:
    """The token request's parameters, each sent at most once (`resource` may repeat)."""

    grant_type: str
    client_id: str
    code: str | None = None
    code_verifier: str | None = None
    redirect_uri: str | None = None
    refresh_token: str | None = None
    resource: tuple[str, ...] = ()


@dataclass(frozen=True)
class Minter:
    """What issuing tokens needs from the running center."""

    keyring: Keyring
    issuer: str
    configured: tuple[str, ...]
    access_seconds: int
    refresh_seconds: int
    successor_key: bytes


def parse(body: bytes, content_type: str) -> TokenRequest:
    """The form-encoded request (RFC 6749 §3.2: no parameter twice, `resource` aside)."""
    if content_type.split(";", maxsplit=1)[0].strip().lower() != FORM:
        raise invalid_request("bad_content_type", f"send the parameters as {FORM}")
    try:
        pairs = parse_qsl(
            body.decode("utf-8"),
            keep_blank_values=True,
            strict_parsing=False,
            max_num_fields=MAX_FIELDS,
        )
    except (UnicodeDecodeError, ValueError):
        raise invalid_request("malformed_body", "the body is not a valid form") from None
    values: dict[str, list[str]] = {}
    for name, value in pairs:
        values.setdefault(name, []).append(value)
    for name in SINGLE:
        if len(values.get(name, [])) > 1:
            raise invalid_request("repeated_parameter", f"{name} was sent more than once")
    one = {name: values[name][0] or None for name in SINGLE if name in values}
    grant_type, client_id = one.get("grant_type"), one.get("client_id")
    if grant_type is None:
        raise invalid_request("missing_grant_type", "send grant_type")
    if client_id is None:
        raise invalid_request("missing_client_id", "send client_id (public clients only)")
    return TokenRequest(
        grant_type=grant_type,
        client_id=client_id,
        code=one.get("code"),
        code_verifier=one.get("code_verifier"),
        redirect_uri=one.get("redirect_uri"),
        refresh_token=one.get("refresh_token"),
        resource=resources.parse(values.get("resource", [])),
    )


def _same(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode("utf-8"), b.encode("utf-8"))


def consented(member: Principal, vaults: Sequence[str] | None) -> tuple[str, ...] | OAuthError:
    """The vaults a token gets: those consented to (all, for a code or family from before
    consent) that the member still holds."""
    if vaults is None:
        return member.vaults
    left = meet(member.vaults, vaults)
    if not left:
        return OAuthError(
            "invalid_scope",
            "no_vault",
            f"the member holds none of the vaults consented to; {SIGN_IN_AGAIN}",
        )
    return left


async def _audience(
    work: Change,
    minter: Minter,
    member: Principal,
    *,
    asked: Sequence[str],
    signed_in_for: Sequence[str],
    vaults: Sequence[str] | None,
) -> list[str] | OAuthError:
    """The new tokens' audience: the resources `asked` for among those the sign-in was for,
    holding a vault the member consented to and still holds (`consented`), and the
    deployment's one address when set."""
    kept = consented(member, vaults)
    if isinstance(kept, OAuthError):
        return kept
    aud = await resources.audience(work.session, minter.configured, asked, signed_in_for, kept)
    if isinstance(aud, OAuthError):
        return aud
    return with_deployment(aud, minter.keyring.deployment)


async def _member(work: Change, member_id: str, generation: int) -> Principal | None:
    """The member as it is now, if it still exists with the generation it signed in at."""
    member = await find(work.session, member_id)
    return member if member is not None and member.generation == generation else None


async def redeem_code(work: Change, minter: Minter, ask: TokenRequest) -> Outcome:
    """Exchange a code for tokens. The code is spent by any attempt, whatever its fate."""
    if ask.code is None or ask.code_verifier is None:
        return invalid_request("missing_parameter", "send code and code_verifier")
    row = await codes.take(work, ask.code)
    if row is None:
        return invalid_grant("unknown_code", f"the code is unknown or expired; {SIGN_IN_AGAIN}")
    if row.used is not None:
        family = await work.session.get(OAuthFamily, row.family) if row.family else None
        if family is not None and family.revoked is None:
            await refresh.kill(work, family, "code_reused", "authorization code redeemed twice")
        return invalid_grant("code_reused", f"the code was used before; {SIGN_IN_AGAIN}")
    row.used = work.now
    if row.expires <= work.now:
        return invalid_grant("code_expired", f"the code expired; {SIGN_IN_AGAIN}")
    if not _same(row.client_id, ask.client_id):
        return invalid_grant("client_mismatch", "the code was issued to another client")
    if ask.redirect_uri is not None and not _same(row.redirect_uri, ask.redirect_uri):
        return invalid_grant("redirect_uri_mismatch", "redirect_uri differs from /authorize")
    if not CODE_VERIFIER_PATTERN.fullmatch(ask.code_verifier):
        return invalid_grant("bad_verifier", "code_verifier must be 43-128 of A-Z a-z 0-9 - . _ ~")
    if not _same(create_s256_code_challenge(ask.code_verifier), row.challenge):
        return invalid_grant("pkce_mismatch", "code_verifier does not match the code_challenge")
    member = await _member(work, row.member_id, row.generation)
    if member is None:
        return invalid_grant(
            "member_changed", f"the member changed or was removed; {SIGN_IN_AGAIN}"
        )
    aud = await _audience(
        work, minter, member, asked=ask.resource, signed_in_for=row.resource, vaults=row.vaults
    )
    if isinstance(aud, OAuthError):
        return aud
    family, token = await refresh.start(
        work,
        client_id=row.client_id,
        member_id=member.id,
        scope=row.scope,
        resource=aud,
        generation=row.generation,
        lifetime=minter.refresh_seconds,
        vaults=row.vaults,
    )
    row.family = family.id
    return await _respond(
        work,
        minter,
        family=family,
        member=member,
        aud=aud,
        refresh_token=token,
        grant="authorization_code",
    )


async def rotate_refresh(work: Change, minter: Minter, ask: TokenRequest) -> Outcome:
    """Exchange a refresh token for new tokens, rotating it (see `center.oauth.refresh`)."""
    if ask.refresh_token is None:
        return invalid_request("missing_parameter", "send refresh_token")
    found = await refresh.find(work, ask.refresh_token)
    if found is None:
        return invalid_grant("unknown_refresh_token", f"unknown refresh token; {SIGN_IN_AGAIN}")
    row, family = found
    if family.revoked is not None:
        return invalid_grant("family_revoked", f"this session was revoked; {SIGN_IN_AGAIN}")
    if not _same(family.client_id, ask.client_id):
        await refresh.kill(work, family, "client_mismatch", "refresh token sent by another client")
        return invalid_grant(
            "client_mismatch", f"the token belongs to another client; {SIGN_IN_AGAIN}"
        )
    successor = refresh.successor_of(minter.successor_key, ask.refresh_token)
    repeat = row.rotated is not None
    if repeat and (replayed := await _replayed(work, row, family, successor)):
        return replayed
    if row.expires <= work.now:
        return invalid_grant("refresh_expired", f"the refresh token expired; {SIGN_IN_AGAIN}")
    member = await _member(work, family.member_id, family.generation)
    if member is None:
        family.revoked = work.now
        return invalid_grant(
            "member_changed", f"the member changed or was removed; {SIGN_IN_AGAIN}"
        )
    aud = await _audience(
        work,
        minter,
        member,
        asked=ask.resource,
        signed_in_for=family.resource,
        vaults=family.vaults,
    )
    if isinstance(aud, OAuthError):
        return aud
    if not repeat:
        refresh.rotate(work, row, family, successor, minter.refresh_seconds)
    assert row.rotated is not None
    return await _respond(
        work,
        minter,
        family=family,
        member=member,
        aud=aud,
        refresh_token=successor,
        grant="refresh_token",
        # Claims fixed by the rotation, so a duplicate is signed the same bytes again.
        jti=refresh.access_jti(minter.successor_key, ask.refresh_token),
        issued_at=row.rotated,
        repeat=repeat,
    )


async def _replayed(
    work: Change, row: OAuthRefresh, family: OAuthFamily, successor: str
) -> OAuthError | None:
    """The refusal of a rotated token presented again, or None for a duplicate within the
    grace (counted: more than MAX_DUPLICATES of them are a replay too)."""
    if not await refresh.duplicate(work, row, successor):
        await refresh.kill(work, family, "refresh_reused", "rotated refresh token presented again")
        return invalid_grant(
            "refresh_reused", f"the refresh token was used before; {SIGN_IN_AGAIN}"
        )
    row.duplicates += 1
    if row.duplicates <= refresh.MAX_DUPLICATES:
        return None
    await refresh.kill(
        work,
        family,
        "refresh_repeated",
        f"refresh token presented {row.duplicates + 1} times within the grace",
    )
    return invalid_grant("refresh_reused", f"the refresh token was used before; {SIGN_IN_AGAIN}")


async def _respond(
    work: Change,
    minter: Minter,
    *,
    family: OAuthFamily,
    member: Principal,
    aud: list[str],
    refresh_token: str,
    grant: str,
    jti: str | None = None,
    issued_at: int | None = None,
    repeat: bool = False,
) -> Outcome:
    """Sign the access token, remember its jti, audit the issue; the token response.

    `repeat`: the token of an earlier answer (same `jti` and `issued_at`) goes out again;
    it is remembered already, so only the audit record is new."""
    permissions = from_claim(family.scope) & member.permissions
    if not permissions:
        return OAuthError("invalid_scope", "no_permission", "the member holds none of the scope")
    vaults = consented(member, family.vaults)
    if isinstance(vaults, OAuthError):
        return vaults
    claims = claims_for(
        iss=minter.issuer,
        sub=member.id,
        aud=aud,
        scope=permissions,
        vaults=list(vaults),
        role=member.role,
        now=work.now if issued_at is None else issued_at,
        mgen=member.generation,
        client_id=family.client_id,
        lifetime=minter.access_seconds,
        jti=jti,
        paths=rules.only(member.paths, vaults),
    )
    access_token = await minter.keyring.sign(work, claims)
    # A duplicate's token is known already, unless its rotation predates derived jtis.
    if not repeat or await work.session.get(Token, claims.jti) is None:
        work.session.add(
            Token(
                jti=claims.jti,
                subject=member.id,
                issued_by=member.id,
                scope=to_claim(permissions),
                vaults=list(claims.vaults),
                created=work.now,
                expires=claims.exp,
                paths=rules.stored(claims.paths),
            )
        )
        refresh.remember_access(family, claims.jti, claims.exp, work.now)
    work.record(
        "token.issue" if grant == "authorization_code" else "token.refresh",
        actor=member.id,
        subject=member.id,
        scope=scope_name(permissions) or to_claim(permissions),
        vault=claims.vaults[0] if len(claims.vaults) == 1 else None,
        expiry=claims.exp,
        object=f"token:{claims.jti}",
        reason=f"oauth {grant}{' again (a duplicate)' if repeat else ''}, "
        f"client {family.client_id}, family {family.id}",
        **rules.audit(claims.paths),
    )
    return {
        "access_token": access_token,
        "token_type": "Bearer",
        "expires_in": claims.exp - work.now,
        "refresh_token": refresh_token,
        "scope": to_claim(permissions),
    }
