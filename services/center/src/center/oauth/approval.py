"""The consent step of `/authorize`, between the password and the code.

After a sign-in, a remembered consent that covers the request (center.oauth.consent)
gives the code at once; otherwise the consent page asks. Its form carries a one-time
token (the login form's kind, under a key of its own) that binds the exact request —
client, redirect URI, state, PKCE challenge, scope, resources — and the member who
signed in (id and password hash) and what the page offered. A swapped parameter, another
member, a password changed meanwhile or an access that changed since the page was shown
all get the expired-form page; Deny goes back with `access_denied` (RFC 6749 §4.1.2.1).
"""

from __future__ import annotations

from typing import NamedTuple
from urllib.parse import urlsplit

from fastapi import Response
from fastapi.responses import RedirectResponse

from center import nodes
from center.db.models import Member, OAuthClient
from center.log import get_logger
from center.oauth import authorize, codes, consent, documents, pages
from center.oauth.authorize import AuthorizeRequest, RedirectError
from center.oauth.consent import Choice, Offer
from center.oauth.errors import NO_STORE, OAuthError
from center.oauth.login import SignedIn
from center.oauth.server import OAuthServer
from center.principals import Principal, principal
from center.runtime import Center
from tickets import ALL_VAULTS

FIELDS = ("consent", "member", "decision", "scope")
"""The consent form's single fields; `vault` may repeat."""


class Pending(NamedTuple):
    """A checked authorization request on its way through the pages."""

    oauth: OAuthServer
    center: Center
    client: OAuthClient
    ask: AuthorizeRequest


def client_host(client: OAuthClient) -> str | None:
    """The host a client's name comes from: its metadata document's (None: it named itself)."""
    return urlsplit(client.id).hostname if documents.is_url(client.id) else None


async def signed_in(pending: Pending, signed: SignedIn) -> Response:
    """After the password: a code at once if a remembered consent covers the request,
    else the consent page."""
    _, center, client, ask = pending
    origin, code = authorize.origin(ask.redirect_uri), None
    async with center.store.change() as work:
        member = await codes.signed_in(work, client.id, ask, signed)
        made = None if isinstance(member, OAuthError) else consent.offer(member, ask.scope)
        if isinstance(member, Principal) and made is not None:
            kept = await consent.remembered(
                work.session, member.id, client.id, origin, made, named_scope=ask.scope is not None
            )
            if kept is not None:
                kept[0].used = work.now
                code = await codes.grant(work, ask, member, kept[1].permissions, kept[1].vaults)
    if isinstance(member, OAuthError):
        raise RedirectError(ask.redirect_uri, member, ask.state)
    assert made is not None  # signed_in refuses an empty scope
    get_logger().info("login_succeeded", member=member.id, client=client.id)
    if code is not None:
        get_logger().info("consent_remembered", member=member.id, client=client.id)
        return _back(center, ask, code)
    return await _page(pending, member, signed.password_hash, made)


def _back(center: Center, ask: AuthorizeRequest, code: str) -> RedirectResponse:
    target = authorize.with_params(
        ask.redirect_uri, {"code": code, "state": ask.state, "iss": center.settings.issuer}
    )
    return RedirectResponse(target, status_code=302, headers=NO_STORE)


def _binding(member_id: str, password_hash: str, made: Offer) -> tuple[bytes, ...]:
    return member_id.encode(), password_hash.encode(), *made.binding()


async def _page(
    pending: Pending,
    member: Principal,
    password_hash: str,
    made: Offer,
    error: tuple[str, Choice] | None = None,
) -> Response:
    """The consent page; `error`: what to fix, and the choice to show again."""
    oauth, center, client, ask = pending
    known: list[str] = []
    if made.vaults == (ALL_VAULTS,):
        async with center.store.read() as session:
            known = sorted(await nodes.holders(session))
    token = oauth.consents.issue(ask, center.store.now(), *_binding(member.id, password_hash, made))
    return pages.consent_page(
        client_name=client.name,
        client_host=client_host(client),
        redirect_origin=authorize.origin(ask.redirect_uri),
        action=f"authorize?{ask.query()}",
        token=token,
        member=member.id,
        scopes=pages.scope_choices(made, error[1] if error else None),
        vaults=pages.vault_choices(made, known, member.paths, error[1] if error else None),
        error=error[0] if error else None,
        status=400 if error else 200,
    )


def _stale() -> Response:
    return pages.message_page(
        400,
        "This consent form has expired",
        "Each consent form works once and for ten minutes, and only while your access stays "
        "as it was shown. Go back to the application and start the connection again.",
    )


async def decide(pending: Pending, fields: dict[str, list[str]]) -> Response:
    """The consent form posted: its token (once, for this request, this member and this
    offer), then Deny (back with access_denied) or Allow (the consent kept, and a code)."""
    oauth, center, _, ask = pending
    if any(len(fields.get(name, ())) > 1 for name in FIELDS):
        return _stale()
    one = {name: fields.get(name, [""])[0] for name in FIELDS}
    async with center.store.read() as session:
        row = await session.get(Member, one["member"]) if one["member"] else None
        member = await principal(session, row) if row is not None else None
    made = consent.offer(member, ask.scope) if member is not None else None
    if row is None or row.password_hash is None or member is None or made is None:
        return _stale()
    signed = SignedIn(member.id, row.password_hash)
    binding = _binding(member.id, row.password_hash, made)
    spent = oauth.consents.check(one["consent"], ask, center.store.now(), *binding)
    if spent is None or one["decision"] not in {"allow", "deny"}:
        return _stale()
    async with center.store.change() as work:
        fresh = await authorize.spend(work, *spent)
    if not fresh:
        return _stale()
    if one["decision"] == "deny":
        return await _deny(pending, signed, made)
    choice = consent.choose(made, one["scope"], fields.get("vault", []))
    if isinstance(choice, str):
        # The same form again (a new token: this one is spent), saying what to fix.
        shown = consent.ticked(made, one["scope"], fields.get("vault", []))
        return await _page(pending, member, row.password_hash, made, error=(choice, shown))
    return await _allow(pending, signed, made, choice)


async def _deny(pending: Pending, signed: SignedIn, made: Offer) -> Response:
    _, center, client, ask = pending
    async with center.store.change() as work:
        consent.denied(work, signed.member_id, client.id, authorize.origin(ask.redirect_uri), made)
    get_logger().info("consent_denied", member=signed.member_id, client=client.id)
    denied = OAuthError("access_denied", "consent_denied", "the member denied the request")
    raise RedirectError(ask.redirect_uri, denied, ask.state)


async def _allow(pending: Pending, signed: SignedIn, made: Offer, choice: Choice) -> Response:
    _, center, client, ask = pending
    code = None
    async with center.store.change() as work:
        member = await codes.still(work, signed)
        if member is not None and consent.offer(member, ask.scope) == made:
            origin = authorize.origin(ask.redirect_uri)
            await consent.remember(work, member.id, client, origin=origin, made=made, choice=choice)
            code = await codes.grant(work, ask, member, choice.permissions, choice.vaults)
    if code is None:
        changed = OAuthError("access_denied", "member_changed", "the member changed meanwhile")
        raise RedirectError(ask.redirect_uri, changed, ask.state)
    get_logger().info("consent_given", member=signed.member_id, client=client.id)
    return _back(center, ask, code)
