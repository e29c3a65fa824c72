"""What every console page shares: its state per running center, the signed-in session,
the headers (a strict CSP: no inline script or style, `frame-ancestors 'none'`), the
templates, and one place that turns a domain error into the page's error message.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Coroutine, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any
from urllib.parse import urlencode, urlsplit

from fastapi import Depends, Request, Response
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.routing import APIRoute
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from center import rules
from center.config import parse_rate
from center.console import sessions
from center.console.forms import Forms, fields
from center.errors import CenterError
from center.log import scrub
from center.names import Rules, rules_from_args
from center.oauth import authorize
from center.oauth.keys import mac
from center.oauth.login import Login
from center.principals import MANAGERS, Principal
from center.runtime import Center
from center.store import Change
from center.throttles import Bucket

PREFIX = "/console"
CHANNEL = "console"
COOKIE, SECURE_COOKIE = "sb_console", "__Host-sb_console"
PRE_COOKIE, SECURE_PRE_COOKIE = "sb_console_pre", "__Host-sb_console_pre"
PAGE_SIZE = 50
POLICY = "; ".join(
    (
        "default-src 'none'",
        "style-src 'self'",
        "script-src 'self'",
        "img-src 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
    )
)
HEADERS = {
    "Content-Security-Policy": POLICY,
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "X-Content-Type-Options": "nosniff",
}


def _when(value: int | None) -> str:
    if value is None:
        return "—"
    return datetime.fromtimestamp(value, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _iso(value: int | None) -> str:
    return "" if value is None else datetime.fromtimestamp(value, UTC).isoformat()


def _ago(seconds: int | None) -> str:
    if seconds is None:
        return "never"
    for size, unit in ((86400, "d"), (3600, "h"), (60, "min")):
        if seconds >= size:
            return f"{seconds // size} {unit}"
    return f"{seconds} s"


templates = Environment(
    loader=PackageLoader("center.console", "templates"),
    autoescape=select_autoescape(["html"]),
    undefined=StrictUndefined,
)


def _rule_field(paths: Mapping[str, Any] | None, key: str) -> str:
    """One list of path rules as a form field shows it: `team:projects/acme, team:x`."""
    return ", ".join(f"{v}:{f}" for v, r in sorted((paths or {}).items()) for f in r.get(key) or ())


templates.filters.update(
    when=_when, iso=_iso, ago=_ago, rules=rules.describe, rule_field=_rule_field
)
RULE_FIELDS = ("read_paths", "write_paths", "exclude_paths")


class Console:
    """The console's state in one running center: form keys, limits and the login check."""

    def __init__(self, center: Center) -> None:
        settings = center.settings
        self.center = center
        self.forms = Forms(settings.secret.get_secret_value())
        self.limits = sessions.Lifetimes(
            settings.console_idle_minutes * 60, settings.console_hours * 3600
        )
        self.secure = urlsplit(settings.issuer).scheme == "https"
        self.cookie = SECURE_COOKIE if self.secure else COOKIE
        self.pre_cookie = SECURE_PRE_COOKIE if self.secure else PRE_COOKIE
        self.operator = sessions.operator_fingerprint(settings.admin_token_value())
        self.login = Login(center.passwords)
        self.sign_in_limit = Bucket("console.sign_in", *parse_rate(settings.login_rate_limit))


def console_of(request: Request) -> Console:
    center: Center = request.app.state.center
    found: Console | None = getattr(request.app.state, "console", None)
    if found is None or found.center is not center:
        found = request.app.state.console = Console(center)
    return found


class SignInNeededError(Exception):
    """No live session: the browser goes to the sign-in page."""


class RefusedError(Exception):
    """A form that may not be acted on (CSRF token missing, forged, spent)."""


@dataclass
class Page:
    """One request to a signed-in page: the console, the session and the posted form."""

    request: Request
    console: Console
    session: sessions.Session
    form: Mapping[str, Sequence[str]]

    @property
    def center(self) -> Center:
        return self.console.center

    @property
    def me(self) -> Principal:
        return self.session.principal

    def change(self) -> AbstractAsyncContextManager[Change]:
        """A change of the store, its records marked `channel: console`."""
        return self.center.store.change(CHANNEL)

    def see_other(self, path: str, notice: str | None = None) -> RedirectResponse:
        """After a change: to `path` (303), with a notice only this session's pages show
        (it is signed, so a link from elsewhere cannot put words on a console page)."""
        target = f"{PREFIX}{path}"
        if notice:
            query = urlencode({"notice": notice, "sig": self._sign(notice)})
            target += ("&" if "?" in target else "?") + query
        return RedirectResponse(target, status_code=303, headers=HEADERS)

    def notice(self) -> str | None:
        text, sig = self.request.query_params.get("notice"), self.request.query_params.get("sig")
        if not text or not sig or not hmac.compare_digest(sig, self._sign(text)):
            return None
        return text

    def _sign(self, notice: str) -> str:
        binding = self.session.id_hash.encode()
        return mac(self.console.forms.key, b"notice", binding, notice.encode())

    def csrf(self) -> str:
        return self.console.forms.issue(self.session.id_hash, self.center.store.now())

    def value(self, name: str, default: str = "") -> str:
        return self.raw(name, default).strip()

    def raw(self, name: str, default: str = "") -> str:
        """A field as posted (or in the query), not stripped: passwords keep their spaces."""
        values = self.form.get(name) or self.request.query_params.getlist(name)
        return values[0] if values else default

    def rules(self) -> Rules | None:
        """The path rules of a form's three fields (comma-separated `VAULT:FOLDER`); None
        when the form has none of them, {} when they are empty."""
        if not any(name in self.form for name in RULE_FIELDS):
            return None
        read, write, exclude = (
            [item for item in self.value(name).split(",") if item.strip()] for name in RULE_FIELDS
        )
        return rules_from_args(read, write, exclude)

    def offset(self) -> int:
        """Where a paged list starts (`?offset=`), 0 unless a number is given."""
        value = self.value("offset", "0")
        return int(value) if value.isdigit() else 0

    def render(self, template: str, status: int = 200, **context: Any) -> HTMLResponse:
        context.setdefault("notice", self.notice())
        return render(template, status, page=self, me=self.me, csrf=self.csrf(), **context)


def render(template: str, status: int = 200, **context: Any) -> HTMLResponse:
    context.setdefault("page", None)
    context.setdefault("me", None)
    context.setdefault("notice", None)
    context.setdefault("error", None)
    context.setdefault("csrf", "")
    html = templates.get_template(template).render(prefix=PREFIX, nav=_nav, **context)
    return HTMLResponse(html, status_code=status, headers=HEADERS)


def _nav(me: Principal | None) -> list[tuple[str, str]]:
    if me is None:
        return []
    if me.is_operator:
        names = ["requests", "members", "grants", "tokens", "nodes", "audit"]
    else:
        names = ["me", "requests", "grants", "tokens"]
        names += ["audit"] if me.role in MANAGERS else []
    titles = {"me": "My access"}
    return [(f"{PREFIX}/{name}", titles.get(name, name.capitalize())) for name in names]


async def page_for(request: Request, *, post: bool) -> Page:
    """The signed-in page, with its form checked and spent if it is a post."""
    console = console_of(request)
    session = await sessions.resume(
        console.center.store, request.cookies.get(console.cookie), console.limits, console.operator
    )
    if session is None:
        raise SignInNeededError
    form: dict[str, list[str]] = {}
    if post:
        form = await fields(request) or {}
        token = (form.get("csrf") or [""])[0]
        if not await console.forms.spend(console.center.store, token, session.id_hash):
            raise RefusedError
    page = Page(request, console, session, form)
    request.state.console_page = page
    return page


async def _shown(request: Request) -> Page:
    return await page_for(request, post=False)


async def _posted(request: Request) -> Page:
    return await page_for(request, post=True)


SignedIn = Annotated[Page, Depends(_shown)]
"""A signed-in page (`@router.get`): without a live session the browser goes to sign in."""
Posted = Annotated[Page, Depends(_posted)]
"""A signed-in page's form (`@router.post`): its one-time form token checked and spent
before the handler runs; a spent or forged one is refused and nothing changes."""


STALE = (
    "Each form works once, for an hour, in the session it was shown in. Nothing was "
    "changed. Go back, reload the page and try again."
)


FOREIGN = (
    "This form was sent from another site or another port of this host, so it was refused. "
    "Nothing was changed. Open the console at its own address and try again."
)


def foreign(request: Request) -> bool:
    """Whether the browser says a post comes from another origin. `Sec-Fetch-Site`, where
    sent, decides: only `same-origin` passes. Otherwise `Origin` must be the issuer's
    origin or the one the request was sent to (`null` is neither). Another port of the
    same host is another origin (though the same site, whose cookies it can set: cookie
    tossing). A post with neither header (curl, or a browser from before 2020) is judged
    by its one-time form token alone. The pages' `Referrer-Policy: same-origin` keeps
    browsers sending the console's own posts with their real `Origin` (`no-referrer`
    would make it `null`)."""
    site = request.headers.get("sec-fetch-site")
    if site is not None:
        return site != "same-origin"
    origin = request.headers.get("origin")
    if origin is None:
        return False
    own = {
        authorize.origin(request.app.state.center.settings.issuer),
        f"{request.url.scheme}://{request.headers.get('host', '')}".lower(),
    }
    return origin.lower() not in own


def refused(request: Request, exc: CenterError) -> HTMLResponse:
    """A domain refusal as HTML: on a signed-in page, the page's own message with a way
    back to its section; elsewhere (changes locked, the database away) a bare one."""
    page: Page | None = getattr(request.state, "console_page", None)
    if page is None:
        title = "Temporarily unavailable" if exc.status >= 500 else "Refused"
        return render(
            "message.html", exc.status, title=title, message=scrub(exc.message), back=None
        )
    section = request.url.path.removeprefix(PREFIX).strip("/").split("/")[0]
    return page.render(
        "message.html",
        exc.status,
        title="Refused",
        message=scrub(exc.message),
        back=f"{PREFIX}/{section or 'requests'}",
    )


class ConsoleRoute(APIRoute):
    """How every console route is served: out of the API schema; a post another origin
    sent (see `foreign`) refused before anything reads it; a page without a live session
    sent to sign in, a spent form refused; a domain refusal shown as HTML (`refused`),
    never the API's JSON. Pages take `SignedIn` or `Posted` and register with
    `@router.get` and `@router.post`, as the API's routes do."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["include_in_schema"] = False
        super().__init__(*args, **kwargs)

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        inner = super().get_route_handler()

        async def handler(request: Request) -> Response:
            if request.method == "POST" and foreign(request):
                return render(
                    "message.html",
                    403,
                    title="This form cannot be used",
                    message=FOREIGN,
                    back=None,
                )
            try:
                return await inner(request)
            except SignInNeededError:
                return RedirectResponse(f"{PREFIX}/sign-in", status_code=303, headers=HEADERS)
            except RefusedError:
                return render(
                    "message.html", 403, title="This form cannot be used", message=STALE, back=None
                )
            except CenterError as exc:
                return refused(request, exc)

        return handler
