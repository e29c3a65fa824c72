"""The HTML the browser sees: the login page, the consent page and the error pages,
self-contained.

No external asset, no script; the one inline style carries a per-response nonce. The
headers follow docs/design.md#authorize, and `form-action` names the validated redirect URI's origin
besides `'self'`: browsers apply `form-action` to the redirect that follows a form
post too, so with `'self'` alone the 302 to the client's callback is silently dropped.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass

from fastapi.responses import HTMLResponse
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from center.oauth.consent import Choice, Offer, scope_options
from tickets import ALL_VAULTS, Paths
from tickets.scopes import scope_name, to_claim

_templates = Environment(
    loader=PackageLoader("center.oauth", "templates"),
    autoescape=select_autoescape(["html"]),
    undefined=StrictUndefined,
)


LABELS = {
    "read": "Read your notes",
    "write": "Add notes without reading any (write only)",
    "read_write": "Read and change your notes",
    "read_write_delete": "Read, change and delete your notes",
    "allow_all": "Everything: read, change and delete notes, and create vaults",
}


@dataclass(frozen=True)
class Option:
    """One radio button or check box of the consent form."""

    value: str
    label: str
    checked: bool
    rules: str | None = None


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
    client_host: str | None,
    redirect_origin: str,
    action: str,
    csrf: str,
    username: str = "",
    error: str | None = None,
    status: int = 200,
    retry_after: int | None = None,
) -> HTMLResponse:
    """The sign-in form; it posts `username`, `password` and `csrf` to `action`. The
    client is marked as described by `client_host` (a metadata document's host) or, for a
    registered one, as unverified: it named itself."""
    nonce = secrets.token_urlsafe(16)
    html = _templates.get_template("login.html").render(
        nonce=nonce,
        client_name=client_name,
        client_host=client_host,
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


def scope_choices(made: Offer, chosen: Choice | None) -> list[Option]:
    """The access levels to pick from, the offer's (or the one chosen before) checked."""
    picked = chosen.permissions if chosen else made.permissions
    return [
        Option(
            to_claim(option),
            LABELS.get(scope_name(option) or "", f"Permissions: {', '.join(sorted(option))}"),
            option == picked,
        )
        for option in scope_options(made.permissions)
    ]


def vault_choices(
    made: Offer, known: Sequence[str], paths: Paths, chosen: Choice | None
) -> list[Option]:
    """A box per vault offered (every vault: one for all of them, now and later, then one
    per vault the center knows), each with the member's path rules in it."""
    picked = set(chosen.vaults) if chosen else set(made.vaults)
    everything = made.vaults == (ALL_VAULTS,)
    names = sorted(known) if everything else list(made.vaults)
    found = [
        Option(
            name,
            name,
            name in picked,
            f"Only: {reach.describe()}" if (reach := paths.reach(name)) else None,
        )
        for name in names
    ]
    if not everything:
        return found
    rules = "; ".join(f"{v}: {r.describe()}" for v, r in sorted(paths.vaults.items()))
    every = Option(
        ALL_VAULTS,
        "Every vault, now and later",
        ALL_VAULTS in picked,
        f"Folder rules still apply ({rules})" if rules else None,
    )
    return [every, *found]


def consent_page(
    *,
    client_name: str | None,
    client_host: str | None,
    redirect_origin: str,
    action: str,
    token: str,
    member: str,
    scopes: list[Option],
    vaults: list[Option],
    error: str | None = None,
    status: int = 200,
) -> HTMLResponse:
    """The consent form: Allow or Deny, with the access level and the vaults to narrow;
    it posts `consent`, `member`, `decision`, `scope` and `vault` (repeated) to `action`."""
    nonce = secrets.token_urlsafe(16)
    html = _templates.get_template("consent.html").render(
        nonce=nonce,
        client_name=client_name,
        client_host=client_host,
        redirect_origin=redirect_origin,
        action=action,
        token=token,
        member=member,
        scopes=scopes,
        vaults=vaults,
        error=error,
    )
    return HTMLResponse(html, status_code=status, headers=headers(nonce, redirect_origin))
