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
from typing import Any
from urllib.parse import urlencode, urlsplit

from fastapi import Request, Response
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.routing import APIRoute
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from center import rules
from center.config import parse_rate
from center.console import sessions
from center.console.forms import Forms, fields
from center.errors import CenterError
from center.log import scrub
from center.oauth.keys import mac
from center.oauth.limits import RateLimiter
from center.oauth.login import Login
from center.principals import MANAGERS, Principal
from center.runtime import Center
from center.store import Change

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
    "Referrer-Policy": "no-referrer",
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
        self.sign_in_limit = RateLimiter(
            *parse_rate(settings.login_rate_limit), clock=center.store.clock
        )


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

    def rules(self) -> rules.Rules | None:
        """The path rules of a form's three fields (comma-separated `VAULT:FOLDER`); None
        when the form has none of them, {} when they are empty."""
        if not any(name in self.form for name in RULE_FIELDS):
            return None
        read, write, exclude = (
            [item for item in self.value(name).split(",") if item.strip()] for name in RULE_FIELDS
        )
        return rules.from_args(read, write, exclude)

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


Handler = Callable[[Page], Coroutine[Any, Any, Response]]


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
    return Page(request, console, session, form)


def signed_in(
    handler: Handler, *, post: bool = False
) -> Callable[[Request], Coroutine[Any, Any, Response]]:
    """A route for signed-in pages: no session → sign-in; a domain refusal → the error
    shown on the page the request came from (re-rendered by `handler`'s `on_error`)."""

    async def route(request: Request) -> Response:
        try:
            page = await page_for(request, post=post)
        except SignInNeededError:
            return RedirectResponse(f"{PREFIX}/sign-in", status_code=303, headers=HEADERS)
        except RefusedError:
            return render(
                "message.html", 403, title="This form cannot be used", message=STALE, back=None
            )
        try:
            return await handler(page)
        except CenterError as exc:
            section = request.url.path.removeprefix(PREFIX).strip("/").split("/")[0]
            return page.render(
                "message.html",
                exc.status,
                title="Refused",
                message=scrub(exc.message),
                back=f"{PREFIX}/{section or 'requests'}",
            )

    route.__name__ = handler.__name__
    return route


STALE = (
    "Each form works once, for an hour, in the session it was shown in. Nothing was "
    "changed. Go back, reload the page and try again."
)


class ConsoleRoute(APIRoute):
    """Console routes stay out of the API schema, and answer a failure no page handled
    (changes locked, the database away) with an HTML page instead of the API's JSON."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["include_in_schema"] = False
        super().__init__(*args, **kwargs)

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        inner = super().get_route_handler()

        async def handler(request: Request) -> Response:
            try:
                return await inner(request)
            except CenterError as exc:
                title = "Temporarily unavailable" if exc.status >= 500 else "Refused"
                return render(
                    "message.html", exc.status, title=title, message=scrub(exc.message), back=None
                )

        return handler
