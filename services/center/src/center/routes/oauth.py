"""The OAuth 2.1 endpoints (DESIGN §5.7): metadata, registration, `/authorize`, `/token`.

Errors here speak OAuth, not the center's `{"error": {...}}`: RFC 6749 and RFC 7591
JSON on the machine endpoints, HTML pages on the browser's. The machine endpoints
allow any origin (no cookies are involved), so browser-based MCP clients can use them.
"""

from __future__ import annotations

import json
from typing import Annotated, Any
from urllib.parse import parse_qsl

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse, RedirectResponse

from center.errors import CenterError, RateLimitedError
from center.log import get_logger
from center.oauth import authorize, clients, codes, pages
from center.oauth import token as grants
from center.oauth.authorize import AuthorizeRequest, PageError, RedirectError
from center.oauth.errors import NO_STORE, OAuthError, invalid_client
from center.oauth.metadata import CACHE, WELL_KNOWN
from center.oauth.refresh import ANONYMOUS
from center.oauth.server import OAuthServer
from center.routes.accounts import get_accounts
from center.routes.deps import CenterDep
from center.runtime import Center

router = APIRouter(tags=["oauth"])
CORS = {"Access-Control-Allow-Origin": "*"}
PREFLIGHT = {
    **CORS,
    "Access-Control-Allow-Methods": "GET, POST, OPTIONS",
    "Access-Control-Allow-Headers": "Authorization, Content-Type, MCP-Protocol-Version",
    "Access-Control-Max-Age": "600",
}
MAX_REGISTRATION = 64 * 1024
GRANT_TYPES = ("authorization_code", "refresh_token")
FAILED = "Invalid username or password."
LIMITED = "Too many failed sign-ins from here. Wait a minute, then try again."


def get_oauth(request: Request, center: CenterDep) -> OAuthServer:
    """The app's OAuth state, made on first use (and anew for a newly opened center)."""
    server: OAuthServer | None = getattr(request.app.state, "oauth", None)
    if server is None or server.center is not center:
        server = request.app.state.oauth = OAuthServer(center)
    return server


OAuth = Annotated[OAuthServer, Depends(get_oauth)]


def _ip(request: Request) -> str:
    return request.client.host if request.client else "unknown"


async def _metadata(oauth: OAuth, suffix: str = "") -> JSONResponse:
    if suffix.strip("/") not in oauth.suffixes:
        return JSONResponse({"error": "not_found"}, status_code=404)
    return JSONResponse(oauth.metadata, headers=CACHE)


async def _preflight() -> Response:
    return Response(status_code=204, headers=PREFLIGHT)


for _name in WELL_KNOWN:
    for _path in (f"/.well-known/{_name}", f"/.well-known/{_name}/{{suffix:path}}"):
        router.add_api_route(_path, _metadata, methods=["GET"], summary="RFC 8414 metadata")
        router.add_api_route(_path, _preflight, methods=["OPTIONS"], include_in_schema=False)
for _path in ("/register", "/token"):
    router.add_api_route(_path, _preflight, methods=["OPTIONS"], include_in_schema=False)


def _client_metadata(raw: bytes) -> clients.ClientMetadata:
    if len(raw) > MAX_REGISTRATION:
        raise OAuthError(
            "invalid_client_metadata", "too_large", f"send at most {MAX_REGISTRATION} bytes"
        )
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise OAuthError(
            "invalid_client_metadata", "malformed_json", "send the metadata as JSON"
        ) from None
    return clients.parse_metadata(data)


@router.post("/register", status_code=201, summary="RFC 7591 registration of a public client")
async def register(request: Request, oauth: OAuth, center: CenterDep) -> JSONResponse:
    retry = oauth.register_limit.take(_ip(request))
    if retry is not None:
        body = {"error": "rate_limited", "error_description": "too many registrations; wait"}
        return JSONResponse(body, status_code=429, headers={**CORS, "Retry-After": str(retry)})
    try:
        meta = _client_metadata(await request.body())
    except OAuthError as exc:
        get_logger().info("registration_refused", reason=exc.reason)
        return exc.response(CORS)
    async with center.store.change() as work:
        created = await clients.register(work, meta)
    return JSONResponse(created, status_code=201, headers={**NO_STORE, **CORS})


def _params(request: Request) -> dict[str, list[str]]:
    params: dict[str, list[str]] = {}
    for name, value in request.query_params.multi_items():
        params.setdefault(name, []).append(value)
    return params


def _refuse(exc: RedirectError, issuer: str) -> RedirectResponse:
    get_logger().info("authorize_refused", reason=exc.error.reason)
    target = authorize.with_params(
        exc.redirect_uri,
        {
            "error": exc.error.error,
            "error_description": exc.error.description,
            "state": exc.state,
            "iss": issuer,
        },
    )
    return RedirectResponse(target, status_code=302, headers=NO_STORE)


def _form(
    oauth: OAuthServer,
    client_name: str | None,
    ask: AuthorizeRequest,
    **options: Any,
) -> Response:
    csrf = oauth.forms.issue(ask, oauth.center.store.now())
    return pages.login_page(
        client_name=client_name,
        redirect_origin=authorize.origin(ask.redirect_uri),
        action=f"authorize?{ask.query()}",
        csrf=csrf,
        **options,
    )


def _unavailable(exc: CenterError) -> Response:
    get_logger().warning("authorize_unavailable", code=exc.code)
    return pages.message_page(
        503, "Temporarily unavailable", "The sign-in service cannot complete this now. Try later."
    )


@router.get("/authorize", summary="The sign-in page of the authorization code flow")
async def authorize_page(request: Request, oauth: OAuth, center: CenterDep) -> Response:
    try:
        async with center.store.read() as session:
            client, ask = await authorize.check(
                session, center.settings.oauth_resources, _params(request)
            )
        await oauth.login.warm()
    except PageError as exc:
        return pages.message_page(exc.status, exc.title, exc.message)
    except RedirectError as exc:
        return _refuse(exc, center.settings.issuer)
    except CenterError as exc:
        return _unavailable(exc)
    return _form(oauth, client.name, ask)


async def _login_fields(request: Request) -> dict[str, str] | None:
    """username, password and csrf from the posted form; None if it is not one."""
    content_type = request.headers.get("content-type", "").split(";", maxsplit=1)[0].strip().lower()
    if content_type != grants.FORM:
        return None
    try:
        pairs = parse_qsl((await request.body()).decode("utf-8"), max_num_fields=8)
    except (UnicodeDecodeError, ValueError):
        return None
    fields = dict(pairs)
    if len(fields) != len(pairs) or "csrf" not in fields:
        return None
    return {name: fields.get(name, "") for name in ("username", "password", "csrf")}


def _stale() -> Response:
    return pages.message_page(
        400,
        "This sign-in form has expired",
        "Each sign-in form works once and for ten minutes. Go back to the application and "
        "start the connection again; a new form here would not help, because the "
        "application's proof (PKCE) cannot be renewed from this page.",
    )


@router.post("/authorize", summary="Sign in; on success, back to the client with a code")
async def authorize_login(request: Request, oauth: OAuth, center: CenterDep) -> Response:
    try:
        return await _login(request, oauth, center)
    except PageError as exc:
        return pages.message_page(exc.status, exc.title, exc.message)
    except RedirectError as exc:
        return _refuse(exc, center.settings.issuer)
    except CenterError as exc:
        return _unavailable(exc)


async def _login(request: Request, oauth: OAuthServer, center: Center) -> Response:
    """Spec §5.5, in its order: request, form token (once), rate limit, password, code."""
    async with center.store.read() as session:
        client, ask = await authorize.check(
            session, center.settings.oauth_resources, _params(request)
        )
    fields = await _login_fields(request)
    spent = oauth.forms.check(fields["csrf"], ask, center.store.now()) if fields else None
    if fields is None or spent is None:
        return _stale()
    async with center.store.change() as work:
        fresh = await authorize.spend(work, *spent)
    if not fresh:
        return _stale()
    log, ip = get_logger(), _ip(request)
    accounts = get_accounts(request, center)
    retry, reason = oauth.login_limit.take(ip), "rate_limited"
    if retry is None:
        try:
            accounts.sign_in_allowed(fields["username"])
        except RateLimitedError as exc:
            retry, reason = exc.retry_after, "rate_limited_identity"
    if retry is not None:
        log.warning("login_failed", reason=reason, client=client.id, ip=ip)
        return _form(
            oauth,
            client.name,
            ask,
            error=LIMITED,
            status=429,
            retry_after=retry,
            username=fields["username"],
        )
    signed = await oauth.login.check(center.store, fields["username"], fields["password"])
    if signed is None:
        accounts.sign_in_failed(fields["username"])
        log.warning("login_failed", reason="bad_credentials", client=client.id, ip=ip)
        async with center.store.change() as work:
            work.record(
                "login.failure",
                actor=ANONYMOUS,
                object=f"client:{client.id}",
                reason="invalid username or password",
            )
        return _form(oauth, client.name, ask, error=FAILED, status=401, username=fields["username"])
    oauth.login_limit.give_back(ip)
    async with center.store.change() as work:
        code = await codes.grant(work, client.id, ask, signed)
    if isinstance(code, OAuthError):
        raise RedirectError(ask.redirect_uri, code, ask.state)
    log.info("login_succeeded", member=signed.member_id, client=client.id)
    target = authorize.with_params(
        ask.redirect_uri, {"code": code, "state": ask.state, "iss": center.settings.issuer}
    )
    return RedirectResponse(target, status_code=302, headers=NO_STORE)


@router.post("/token", summary="Exchange a code or a refresh token for tokens")
async def token(request: Request, oauth: OAuth, center: CenterDep) -> JSONResponse:
    grant, client = "other", None
    try:
        ask = grants.parse(await request.body(), request.headers.get("content-type", ""))
        grant = ask.grant_type if ask.grant_type in GRANT_TYPES else "other"
        async with center.store.read() as session:
            client = await clients.find(session, ask.client_id)
        if client is None:
            raise invalid_client("unknown client_id; register the client again")
        outcome = await _grant(oauth, center, ask, client.grant_types)
        if isinstance(outcome, OAuthError):
            raise outcome
    except OAuthError as exc:
        get_logger().warning(
            "token_failed",
            reason=exc.reason,
            error=exc.error,
            grant_type=grant,
            client=client.id if client else None,
        )
        return exc.response(CORS)
    except CenterError as exc:
        get_logger().warning("token_failed", reason=exc.code, error="temporarily_unavailable")
        unavailable = OAuthError("temporarily_unavailable", exc.code, "retry later", status=503)
        return unavailable.response(CORS)
    get_logger().info("token_issued", grant_type=grant, client=client.id)
    return JSONResponse(outcome, headers={**NO_STORE, **CORS})


async def _grant(
    oauth: OAuthServer, center: Center, ask: grants.TokenRequest, allowed: list[str]
) -> grants.Outcome:
    flows = {"authorization_code": grants.redeem_code, "refresh_token": grants.rotate_refresh}
    flow = flows.get(ask.grant_type)
    if flow is None:
        return OAuthError(
            "unsupported_grant_type",
            "unsupported_grant_type",
            "use authorization_code or refresh_token",
        )
    if ask.grant_type not in allowed:
        return OAuthError(
            "unauthorized_client", "grant_not_registered", "the client did not register this grant"
        )
    async with center.store.change() as work:
        return await flow(work, oauth.minter, ask)
