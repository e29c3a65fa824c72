"""The HTML the browser sees: the login page and the error pages, self-contained.

No external asset, no script; the one inline style carries a per-response nonce. The
headers follow spec §5.4, and `form-action` names the validated redirect URI's origin
besides `'self'`: browsers apply `form-action` to the redirect that follows a form
post too, so with `'self'` alone the 302 to the client's callback is silently dropped.
"""

from __future__ import annotations

import secrets

from fastapi.responses import HTMLResponse
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

_templates = Environment(
    loader=PackageLoader("center.oauth", "templates"),
    autoescape=select_autoescape(["html"]),
    undefined=StrictUndefined,
)


def headers(nonce: str, redirect_origin: str | None) -> dict[str, str]:
    form_action = f"'self' {redirect_origin}" if redirect_origin else "'none'"
    policy = "; ".join(
        (
            "default-src 'none'",
            f"style-src 'nonce-{nonce}'",
            f"form-action {form_action}",
            "frame-ancestors 'none'",
            "base-uri 'none'",
        )
    )
    return {
        "Content-Security-Policy": policy,
        "Cache-Control": "no-store",
        "Pragma": "no-cache",
        "X-Frame-Options": "DENY",
        "Referrer-Policy": "no-referrer",
        "X-Content-Type-Options": "nosniff",
    }


def login_page(
    *,
    client_name: str | None,
    redirect_origin: str,
    action: str,
    csrf: str,
    username: str = "",
    error: str | None = None,
    status: int = 200,
    retry_after: int | None = None,
) -> HTMLResponse:
    """The sign-in form; it posts `username`, `password` and `csrf` to `action`."""
    nonce = secrets.token_urlsafe(16)
    html = _templates.get_template("login.html").render(
        nonce=nonce,
        client_name=client_name,
        redirect_origin=redirect_origin,
        action=action,
        csrf=csrf,
        username=username,
        error=error,
    )
    extra = {"Retry-After": str(retry_after)} if retry_after is not None else {}
    return HTMLResponse(
        html, status_code=status, headers={**headers(nonce, redirect_origin), **extra}
    )


def message_page(status: int, title: str, message: str) -> HTMLResponse:
    """An error page with no form and no link onwards."""
    nonce = secrets.token_urlsafe(16)
    html = _templates.get_template("message.html").render(nonce=nonce, title=title, message=message)
    return HTMLResponse(html, status_code=status, headers=headers(nonce, None))
