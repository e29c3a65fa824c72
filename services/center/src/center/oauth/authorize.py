"""`/authorize` (docs/design.md#authorize): the checks before anything is rendered, the login
form's one-time CSRF token, and where the browser is sent afterwards.

Order matters. An unknown client or a redirect URI it did not register gets an error
page and no redirect (redirecting there would make the center an open redirector);
only once the redirect URI is proven may errors travel to it, as RFC 6749 §4.1.2.1
says. The form's CSRF token is an HMAC over a nonce, its expiry and everything the
request binds (client, redirect URI, state, PKCE challenge, scope, resources), so a
page view stores nothing; posting the form spends the nonce in the database, once.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlencode, urlsplit, urlunsplit

from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncSession

from center.db.models import OAuthClient, OAuthNonce
from center.oauth import clients, resources
from center.oauth.errors import OAuthError
from center.oauth.keys import mac
from center.store import Change

FORM_TTL = 600
MAX_STATE = 1024
MAX_SCOPE = 512
CHALLENGE = re.compile(r"[A-Za-z0-9_-]{43}")
"""An S256 challenge: BASE64URL(SHA-256(verifier)) is always 43 characters."""
SINGLE = (
    "response_type",
    "client_id",
    "redirect_uri",
    "state",
    "code_challenge",
    "code_challenge_method",
    "scope",
)
Params = Mapping[str, Sequence[str]]


class PageError(Exception):
    """Answer with an HTML error page and no redirect."""

    def __init__(
        self, status: int, title: str, message: str, retry_after: int | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.title = title
        self.message = message
        self.retry_after = retry_after


class RedirectError(Exception):
    """Send the browser back to the (proven) redirect URI with `error`."""

    def __init__(self, redirect_uri: str, error: OAuthError, state: str | None) -> None:
        super().__init__(error.description)
        self.redirect_uri = redirect_uri
        self.error = error
        self.state = state


@dataclass(frozen=True)
class AuthorizeRequest:
    """A checked authorization request: everything the login form is bound to."""

    client_id: str
    redirect_uri: str
    state: str | None
    challenge: str
    scope: str | None
    resource: tuple[str, ...]

    def binding(self) -> tuple[bytes, ...]:
        return tuple(
            value.encode("utf-8")
            for value in (
                self.client_id,
                self.redirect_uri,
                "\x00" if self.state is None else self.state,
                self.challenge,
                "\x00" if self.scope is None else self.scope,
                "\n".join(self.resource),
            )
        )

    def query(self) -> str:
        """The request as a query string again: where the login form posts to."""
        pairs = [
            ("response_type", "code"),
            ("client_id", self.client_id),
            ("redirect_uri", self.redirect_uri),
            ("code_challenge", self.challenge),
            ("code_challenge_method", "S256"),
        ]
        if self.state is not None:
            pairs.append(("state", self.state))
        if self.scope is not None:
            pairs.append(("scope", self.scope))
        pairs.extend(("resource", url) for url in self.resource)
        return urlencode(pairs)


def _single(params: Params, name: str) -> str | None:
    """One value of a parameter (None if absent or empty); sent twice is ambiguous."""
    values = params.get(name, ())
    if len(values) > 1:
        raise ValueError(name)
    return values[0] if values and values[0] != "" else None


def _page(title: str, message: str) -> PageError:
    return PageError(400, title, message)


async def check(
    session: AsyncSession, configured: Sequence[str], params: Params
) -> tuple[OAuthClient, AuthorizeRequest]:
    """The client and the checked request; PageError before the redirect URI is proven,
    RedirectError after (in the order of docs/design.md#authorize)."""
    try:
        client_id = _single(params, "client_id")
        redirect_uri = _single(params, "redirect_uri")
    except ValueError as exc:
        raise _page("Invalid request", f"The parameter {exc} was sent twice.") from None
    client = await clients.find(session, client_id or "")
    if client is None:
        raise _page(
            "Unknown application",
            "This application is not registered here (or was forgotten). "
            "Start the connection again from the application.",
        )
    if redirect_uri is None or not clients.redirect_matches(client.redirect_uris, redirect_uri):
        raise _page(
            "Unregistered redirect address",
            "The application asked to return to an address it did not register. "
            "Nothing was sent there. Start the connection again from the application.",
        )
    try:
        values = {name: _single(params, name) for name in SINGLE}
    except ValueError as exc:
        raise RedirectError(
            redirect_uri, _invalid(f"the parameter {exc} was sent twice"), None
        ) from None
    state = values["state"]
    problem = _problem(values)
    if problem is None:
        try:
            asked = resources.parse(params.get("resource", ()))
        except OAuthError as exc:
            problem = exc
        else:
            problem = await resources.check_known(session, configured, asked)
    if problem is not None:
        raise RedirectError(redirect_uri, problem, state if _fits(state) else None)
    assert values["code_challenge"] is not None
    ask = AuthorizeRequest(
        client.id, redirect_uri, state, values["code_challenge"], values["scope"], asked
    )
    return client, ask


def _fits(state: str | None) -> bool:
    return state is None or len(state) <= MAX_STATE


def _invalid(description: str) -> OAuthError:
    return OAuthError("invalid_request", "invalid_request", description)


def _problem(values: Mapping[str, str | None]) -> OAuthError | None:
    if values["response_type"] != "code":
        return OAuthError(
            "unsupported_response_type", "unsupported_response_type", "use response_type=code"
        )
    if values["code_challenge_method"] != "S256":
        return _invalid("PKCE is required: send code_challenge_method=S256")
    if not CHALLENGE.fullmatch(values["code_challenge"] or ""):
        return _invalid("code_challenge must be BASE64URL(SHA-256(code_verifier)), 43 characters")
    if not _fits(values["state"]):
        return _invalid(f"state may have at most {MAX_STATE} characters")
    if len(values["scope"] or "") > MAX_SCOPE:
        return _invalid(f"scope may have at most {MAX_SCOPE} characters")
    return None


def with_params(uri: str, params: Mapping[str, str | None]) -> str:
    """`uri` with `params` appended to its query (a registered query is kept)."""
    parts = urlsplit(uri)
    extra = urlencode({name: value for name, value in params.items() if value is not None})
    query = f"{parts.query}&{extra}" if parts.query else extra
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, ""))


def origin(uri: str) -> str:
    parts = urlsplit(uri)
    return f"{parts.scheme}://{parts.netloc.lower()}"


class FormTokens:
    """Issues and checks a form's CSRF token (see the module docstring). The login form
    and the consent form each have their own key; the consent form's token binds `extra`
    too: the member who signed in and what the form offered."""

    def __init__(self, key: bytes) -> None:
        self.key = key

    def issue(self, ask: AuthorizeRequest, now: int, *extra: bytes) -> str:
        nonce, expires = secrets.token_urlsafe(16), str(now + FORM_TTL)
        return f"{nonce}.{expires}.{self._mac(nonce, expires, ask, extra)}"

    def check(
        self, token: str, ask: AuthorizeRequest, now: int, *extra: bytes
    ) -> tuple[str, int] | None:
        """(nonce digest, expiry) of a genuine, unexpired token for this request."""
        nonce, _, rest = token.partition(".")
        expires, _, signature = rest.partition(".")
        if not (nonce and expires.isdigit() and len(expires) <= 12 and signature):
            return None
        expected = self._mac(nonce, expires, ask, extra)
        if not hmac.compare_digest(signature.encode(), expected.encode()):
            return None
        if int(expires) <= now:
            return None
        return hashlib.sha256(nonce.encode()).hexdigest(), int(expires)

    def _mac(
        self, nonce: str, expires: str, ask: AuthorizeRequest, extra: tuple[bytes, ...]
    ) -> str:
        return mac(self.key, nonce.encode(), expires.encode(), *ask.binding(), *extra)


async def spend(work: Change, nonce_hash: str, expires: int) -> bool:
    """Spend a form's nonce; False if it was spent before. Spent nonces are kept until
    their form would have expired anyway, then pruned here."""
    await work.session.execute(delete(OAuthNonce).where(OAuthNonce.expires < work.now))
    if await work.session.get(OAuthNonce, nonce_hash) is not None:
        return False
    work.session.add(OAuthNonce(nonce_hash=nonce_hash, expires=expires))
    return True
