"""The OAuth 2.1 endpoints (docs/design.md#oauth): metadata, registration, `/authorize`, `/token`.

Errors here speak OAuth, not the center's `{"error": {...}}`: RFC 6749 and RFC 7591
JSON on the machine endpoints, HTML pages on the browser's. The machine endpoints
allow any origin (no cookies are involved), so browser-based MCP clients can use them.
"""

from __future__ import annotations

import json
from typing import Annotated, Any
from urllib.parse import parse_qsl, urlsplit

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse
from pydantic import Field

from center.db.models import OAuthClient
from center.errors import CenterError, RateLimitedError
from center.log import get_logger
from center.oauth import approval, authorize, clients, consent, documents, pages
from center.oauth import token as grants
from center.oauth.approval import Pending, client_host
from center.oauth.authorize import AuthorizeRequest, PageError, RedirectError
from center.oauth.errors import NO_STORE, OAuthError, invalid_client
from center.oauth.limits import source
from center.oauth.metadata import CACHE, WELL_KNOWN
from center.oauth.refresh import ANONYMOUS
from center.oauth.server import OAuthServer
from center.routes.accounts import get_accounts
from center.routes.deps import CenterDep, Out
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
MAX_FIELDS = 8 + consent.MAX_VAULTS


class OAuthErrorBody(Out):
    """RFC 6749 §5.2 (and RFC 7591 §3.2.2): OAuth's error shape, not the center's."""

    error: str = Field(description="e.g. invalid_grant, invalid_client, rate_limited")
    error_description: str | None = Field(None, description="What to do next")


class ServerMetadata(Out):
    """RFC 8414 authorization server metadata."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    registration_endpoint: str
    jwks_uri: str
    response_types_supported: list[str]
    response_modes_supported: list[str]
    grant_types_supported: list[str]
    code_challenge_methods_supported: list[str]
    token_endpoint_auth_methods_supported: list[str]
    scopes_supported: list[str]
    authorization_response_iss_parameter_supported: bool
    client_id_metadata_document_supported: bool


class Client(Out):
    """RFC 7591 §3.2.1: a registered public client (it has no secret)."""

    client_id: str
    client_id_issued_at: int = Field(description="Unix time, seconds")
    client_name: str | None
    redirect_uris: list[str]
    grant_types: list[str]
    response_types: list[str]
    token_endpoint_auth_method: str


class Tokens(Out):
    """RFC 6749 §5.1: an access token and the refresh token that replaces the one sent."""

    access_token: str
    token_type: str
    expires_in: int = Field(description="Seconds")
    refresh_token: str
    scope: str


def _oauth_errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    return {status: {"model": OAuthErrorBody, "description": "Refused"} for status in statuses}


HTML: dict[str, Any] = {"content": {"text/html": {}}}
SIGN_IN: dict[int | str, dict[str, Any]] = {
    200: {"description": "The sign-in page, or after the password the consent page"},
    302: {"description": "Back to the client's redirect URI, with a code or an error"},
    "4XX": {"description": "A page saying what is wrong (or the form again, with why)", **HTML},
    "5XX": {"description": "A page saying the sign-in service is unavailable", **HTML},
}


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
        router.add_api_route(
            _path,
            _metadata,
            methods=["GET"],
            summary="RFC 8414 metadata",
            response_model=ServerMetadata,
            responses=_oauth_errors(404),
        )
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


@router.post(
    "/register",
    status_code=201,
    summary="RFC 7591 registration of a public client",
    response_model=Client,
    responses=_oauth_errors(400, 429),
)
async def register(request: Request, oauth: OAuth, center: CenterDep) -> JSONResponse:
    retry = await oauth.register_limit.take(center.store, source(_ip(request)))
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
    client: OAuthClient,
    ask: AuthorizeRequest,
    **options: Any,
) -> Response:
    csrf = oauth.forms.issue(ask, oauth.center.store.now())
    return pages.login_page(
        client_name=client.name,
        client_host=client_host(client),
        redirect_origin=authorize.origin(ask.redirect_uri),
        action=f"authorize?{ask.query()}",
        csrf=csrf,
        **options,
    )


def _page(exc: PageError) -> Response:
    page = pages.message_page(exc.status, exc.title, exc.message)
    if exc.retry_after is not None:
        page.headers["Retry-After"] = str(exc.retry_after)
    return page


def _unavailable(exc: CenterError) -> Response:
    get_logger().warning("authorize_unavailable", code=exc.code)
    return pages.message_page(
        503, "Temporarily unavailable", "The sign-in service cannot complete this now. Try later."
    )


async def _fetch_document(
    oauth: OAuthServer, center: Center, params: authorize.Params, ip: str
) -> None:
    """Fetch the metadata document a URL client_id names, unless the one kept is fresh:
    within the fetches allowed per source address and, for a URL not known yet, per host."""
    named = params.get("client_id", ())
    if len(named) != 1 or not documents.is_url(named[0]):
        return
    url = named[0]
    async with center.store.read() as session:
        row = await clients.find(session, url)
    if row is not None and row.expires is not None and row.expires > center.store.now():
        return
    try:
        documents.check_url(url)
        await _spend_fetch(oauth, center, ip, None if row is not None else urlsplit(url).hostname)
        found = await oauth.documents.fetch(url)
    except documents.DocumentError as exc:
        get_logger().info("client_document_refused", reason=exc.reason)
        raise PageError(
            400,
            "Application metadata unavailable",
            f"{exc.message} Nothing was sent to the application; it may be misconfigured.",
        ) from None
    async with center.store.change() as work:
        await clients.remember(
            work, url, found.meta, logo_uri=found.logo_uri, max_age=found.max_age
        )


async def _spend_fetch(oauth: OAuthServer, center: Center, ip: str, new_host: str | None) -> None:
    """Spend one fetch of the source address's (and of the host's, for a new client), or
    PageError 429 saying how long to wait."""
    retry = await oauth.document_limit.take(center.store, source(ip))
    if retry is None and new_host is not None:
        retry = await oauth.document_host_limit.take(center.store, new_host.lower())
    if retry is not None:
        get_logger().warning("client_document_refused", reason="rate_limited", ip=ip)
        raise PageError(
            429,
            "Too many applications looked up",
            "This center has fetched too many application descriptions for this address or "
            f"this application's host just now. Wait {retry} seconds, then start the "
            "connection again from the application. Applications you signed in with before "
            "are not affected.",
            retry_after=retry,
        )


async def _asked(
    request: Request, oauth: OAuthServer, center: Center
) -> tuple[OAuthClient, AuthorizeRequest]:
    """The client and the request its query asks for (its metadata document fetched first
    when it names one): PageError or RedirectError when they cannot be served."""
    params = _params(request)
    await _fetch_document(oauth, center, params, _ip(request))
    async with center.store.read() as session:
        return await authorize.check(session, center.settings.vouched_resources, params)


@router.get(
    "/authorize",
    summary="The sign-in page of the authorization code flow",
    response_class=HTMLResponse,
    responses=SIGN_IN,
)
async def authorize_page(request: Request, oauth: OAuth, center: CenterDep) -> Response:
    try:
        client, ask = await _asked(request, oauth, center)
        await oauth.login.warm()
    except PageError as exc:
        return _page(exc)
    except RedirectError as exc:
        return _refuse(exc, center.settings.issuer)
    except CenterError as exc:
        return _unavailable(exc)
    return _form(oauth, client, ask)


async def _posted(request: Request) -> dict[str, list[str]] | None:
    """The posted form, each name with its values; None if it is not a form."""
    content_type = request.headers.get("content-type", "").split(";", maxsplit=1)[0].strip().lower()
    if content_type != grants.FORM:
        return None
    try:
        pairs = parse_qsl((await request.body()).decode("utf-8"), max_num_fields=MAX_FIELDS)
    except (UnicodeDecodeError, ValueError):
        return None
    fields: dict[str, list[str]] = {}
    for name, value in pairs:
        fields.setdefault(name, []).append(value)
    return fields


def _one(fields: dict[str, list[str]], names: tuple[str, ...]) -> dict[str, str] | None:
    """One value per name (empty if absent); None if any came twice."""
    if any(len(fields.get(name, ())) > 1 for name in names):
        return None
    return {name: fields.get(name, [""])[0] for name in names}


def _login_fields(fields: dict[str, list[str]]) -> dict[str, str] | None:
    """username, password and csrf of the sign-in form; None if it is not that form."""
    if "csrf" not in fields or any(len(values) > 1 for values in fields.values()):
        return None
    return _one(fields, ("username", "password", "csrf"))


def _stale() -> Response:
    return pages.message_page(
        400,
        "This sign-in form has expired",
        "Each sign-in form works once and for ten minutes. Go back to the application and "
        "start the connection again; a new form here would not help, because the "
        "application's proof (PKCE) cannot be renewed from this page.",
    )


@router.post(
    "/authorize",
    summary="Sign in, then allow or deny; back to the client with a code or an error",
    response_class=HTMLResponse,
    responses=SIGN_IN,
)
async def authorize_login(request: Request, oauth: OAuth, center: CenterDep) -> Response:
    try:
        client, ask = await _asked(request, oauth, center)
        pending = Pending(oauth, center, client, ask)
        fields = await _posted(request) or {}
        if "consent" in fields:
            return await approval.decide(pending, fields)
        return await _login(request, pending, _login_fields(fields))
    except PageError as exc:
        return _page(exc)
    except RedirectError as exc:
        return _refuse(exc, center.settings.issuer)
    except CenterError as exc:
        return _unavailable(exc)


async def _login(request: Request, pending: Pending, fields: dict[str, str] | None) -> Response:
    """In the order of docs/design.md#authorize: request, form token (once), rate limit, password;
    then
    consent (remembered, or its page)."""
    oauth, center, client, ask = pending
    spent = oauth.forms.check(fields["csrf"], ask, center.store.now()) if fields else None
    if fields is None or spent is None:
        return _stale()
    async with center.store.change() as work:
        fresh = await authorize.spend(work, *spent)
    if not fresh:
        return _stale()
    log, ip = get_logger(), _ip(request)
    accounts = get_accounts(request, center)
    retry, reason = await oauth.login_limit.take(center.store, ip), "rate_limited"
    if retry is None:
        try:
            await accounts.sign_in_allowed(fields["username"])
        except RateLimitedError as exc:
            retry, reason = exc.retry_after, "rate_limited_identity"
    if retry is not None:
        log.warning("login_failed", reason=reason, client=client.id, ip=ip)
        return _form(
            oauth,
            client,
            ask,
            error=LIMITED,
            status=429,
            retry_after=retry,
            username=fields["username"],
        )
    signed = await oauth.login.check(center.store, fields["username"], fields["password"])
    if signed is None:
        await accounts.sign_in_failed(fields["username"])
        log.warning("login_failed", reason="bad_credentials", client=client.id, ip=ip)
        async with center.store.change() as work:
            work.record(
                "login.failure",
                actor=ANONYMOUS,
                object=f"client:{client.id}",
                reason="invalid username or password",
            )
        return _form(oauth, client, ask, error=FAILED, status=401, username=fields["username"])
    await oauth.login_limit.give_back(center.store, ip)
    return await approval.signed_in(pending, signed)


@router.post(
    "/token",
    summary="Exchange a code or a refresh token for tokens",
    response_model=Tokens,
    responses=_oauth_errors(400, 401, 503),
)
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
