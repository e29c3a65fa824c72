"""Signing in to the console and out again.

A member signs in with its id or e-mail and password, checked by the login page's own
`Login` (one argon2id verification whatever failed) under the same limits: failed
sign-ins per source IP and per name. The operator pastes the admin token into a
password field once — it travels in the form body, never in a URL — and gets a session
like a member's. Sign-in and sign-out are audited (`login.success`, `login.failure`,
`login.signout`, object `console`). The sign-in form's CSRF token is bound to a
pre-session cookie, so a form cannot be posted from another browser.
"""

from __future__ import annotations

import secrets

from fastapi import APIRouter, Request, Response
from fastapi.responses import HTMLResponse, RedirectResponse

from center.auth import digest
from center.console import sessions
from center.console.forms import fields
from center.console.web import (
    CHANNEL,
    HEADERS,
    PREFIX,
    STALE,
    Console,
    ConsoleRoute,
    console_of,
    render,
)
from center.db.models import Member
from center.errors import RateLimitedError
from center.principals import OPERATOR, OPERATOR_ID, principal
from center.routes.accounts import get_accounts

router = APIRouter(prefix=PREFIX, route_class=ConsoleRoute)
FAILED = "Invalid member id, e-mail or password."
BAD_TOKEN = "That is not this center's admin token."  # noqa: S105 - a message
LIMITED = "Too many failed sign-ins. Wait a minute, then try again."
PUBLIC = "public"


def _binding(pre: str) -> str:
    return "sign-in:" + digest(pre)


ENDED = {"password": "Your password was changed, and your sign-ins ended. Sign in again."}
"""Fixed notices the sign-in page shows for `?ended=`: a link cannot put words here."""


def _form(
    console: Console,
    pre: str,
    status: int = 200,
    error: str | None = None,
    *,
    username: str = "",
    notice: str | None = None,
) -> HTMLResponse:
    csrf = console.forms.issue(_binding(pre), console.center.store.now())
    response = render(
        "signin.html", status, csrf=csrf, error=error, username=username, notice=notice
    )
    response.set_cookie(
        console.pre_cookie, pre, httponly=True, samesite="strict", secure=console.secure, path="/"
    )
    return response


@router.get("", summary="The console")
async def home() -> Response:
    return RedirectResponse(f"{PREFIX}/requests", status_code=303, headers=HEADERS)


@router.get("/sign-in", summary="The console's sign-in page")
async def sign_in_page(request: Request) -> Response:
    console = console_of(request)
    await console.login.warm()
    pre = request.cookies.get(console.pre_cookie) or secrets.token_urlsafe(24)
    return _form(console, pre[:64], notice=ENDED.get(request.query_params.get("ended", "")))


async def _checked(request: Request, console: Console) -> tuple[dict[str, str], str] | None:
    """The posted fields and the pre-session, once the form's token is spent."""
    pre = request.cookies.get(console.pre_cookie, "")
    posted = await fields(request)
    if not pre or posted is None:
        return None
    form = {name: values[0] for name, values in posted.items()}
    if not await console.forms.spend(console.center.store, form.get("csrf", ""), _binding(pre)):
        return None
    return form, pre


def _ip(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def _stale(back: str) -> HTMLResponse:
    return render("message.html", 403, title="This form cannot be used", message=STALE, back=back)


async def _failed(console: Console, reason: str) -> None:
    async with console.center.store.change(CHANNEL) as work:
        work.record("login.failure", actor=PUBLIC, object="console", reason=reason)


def _signed_in(console: Console, cookie: str) -> Response:
    response = RedirectResponse(f"{PREFIX}/requests", status_code=303, headers=HEADERS)
    response.set_cookie(
        console.cookie, cookie, httponly=True, samesite="strict", secure=console.secure, path="/"
    )
    response.delete_cookie(
        console.pre_cookie, path="/", secure=console.secure, httponly=True, samesite="strict"
    )
    return response


@router.post("/sign-in", summary="Sign in as a member")
async def sign_in(request: Request) -> Response:
    console = console_of(request)
    checked = await _checked(request, console)
    if checked is None:
        return _stale(f"{PREFIX}/sign-in")
    form, pre = checked
    username, ip = form.get("username", ""), _ip(request)
    accounts = get_accounts(request, console.center)
    limited = await console.sign_in_limit.take(console.center.store, ip) is not None
    try:
        await accounts.sign_in_allowed(username)
    except RateLimitedError:
        limited = True
    if limited:
        return _form(console, pre, 429, LIMITED, username=username)
    signed = await console.login.check(console.center.store, username, form.get("password", ""))
    if signed is None:
        await accounts.sign_in_failed(username)
        await _failed(console, "invalid username or password")
        return _form(console, pre, 401, FAILED, username=username)
    await console.sign_in_limit.give_back(console.center.store, ip)
    async with console.center.store.change(CHANNEL) as work:
        member = await work.session.get(Member, signed.member_id, with_for_update=True)
        if member is None or member.password_hash != signed.password_hash:
            return _form(console, pre, 409, "The member changed while signing in; try again.")
        who = await principal(work.session, member)
        replaced = request.cookies.get(console.cookie)
        cookie = await sessions.start(work, who, who.generation, console.limits, replaced)
        work.record("login.success", actor=who.id, subject=who.id, object="console")
    return _signed_in(console, cookie)


@router.post("/sign-in/operator", summary="Sign in as the operator with the admin token")
async def sign_in_operator(request: Request) -> Response:
    console = console_of(request)
    checked = await _checked(request, console)
    if checked is None:
        return _stale(f"{PREFIX}/sign-in")
    form, pre = checked
    ip = _ip(request)
    if await console.sign_in_limit.take(console.center.store, ip) is not None:
        return _form(console, pre, 429, LIMITED)
    token = form.get("admin_token", "").strip()
    if not token or not console.center.auth.is_admin_digest(digest(token)):
        await _failed(console, "wrong admin token")
        return _form(console, pre, 401, BAD_TOKEN)
    await console.sign_in_limit.give_back(console.center.store, ip)
    async with console.center.store.change(CHANNEL) as work:
        replaced = request.cookies.get(console.cookie)
        cookie = await sessions.start(work, OPERATOR, console.operator, console.limits, replaced)
        work.record("login.success", actor=OPERATOR_ID, subject=OPERATOR_ID, object="console")
    return _signed_in(console, cookie)


@router.post("/sign-out", summary="Sign out")
async def sign_out(request: Request) -> Response:
    console = console_of(request)
    store = console.center.store
    session = await sessions.resume(
        store, request.cookies.get(console.cookie), console.limits, console.operator
    )
    posted = await fields(request) or {}
    token = (posted.get("csrf") or [""])[0]
    if session is not None:
        if not await console.forms.spend(store, token, session.id_hash):
            return _stale(f"{PREFIX}/requests")
        await sessions.end(store, session.id_hash)
        async with store.change(CHANNEL) as work:
            work.record("login.signout", actor=session.principal.id, object="console")
    response = RedirectResponse(f"{PREFIX}/sign-in", status_code=303, headers=HEADERS)
    response.delete_cookie(
        console.cookie, path="/", secure=console.secure, httponly=True, samesite="strict"
    )
    return response
