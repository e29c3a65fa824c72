"""Login CSRF by cookie tossing: a page on another port of the center's host can set the
console's pre-session cookie (cookies know no ports) and post the sign-in form with the
token that cookie was issued with. Every console post from another origin is refused, by
its `Origin` or `Sec-Fetch-Site` header, before anything reads it. Real HTTP throughout: a
center and an attacker's page on two 127.0.0.1 ports, and a browser's cookie jar."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from html.parser import HTMLParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from center import testing as t
from center.config import Settings
from center.console.testing import CSRF
from center.oauth import testing as o

MALLORY_PASSWORD = "mallory's own password, known to mallory"
SIGNED_IN = (303, "/console/requests")


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """Plain http on loopback, as a center run on a laptop is (cookies not `Secure`)."""
    return settings.model_copy(update={"issuer": "http://127.0.0.1"})


class _Form(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.action = ""
        self.fields: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        if tag == "form":
            self.action = values["action"]
        elif tag == "input":
            self.fields[values["name"]] = values.get("value", "")


def _attacker_page(center: str) -> tuple[str, str]:
    """What the attacker prepares with its own browser: a pre-session cookie of the
    center's, and a page that sets it and posts the sign-in form as mallory."""
    with httpx.Client(base_url=center) as own:
        page = own.get("/console/sign-in")
        found = CSRF.search(page.text)
        assert found is not None, page.text
        pre = own.cookies["sb_console_pre"]
    html = (
        f'<form method="post" action="{center}/console/sign-in">'
        f'<input type="hidden" name="csrf" value="{found.group(1)}">'
        '<input type="hidden" name="username" value="mallory">'
        f'<input type="hidden" name="password" value="{MALLORY_PASSWORD}">'
        "</form>"
    )
    return pre, html


@pytest.fixture
def attacker(server: str) -> Iterator[str]:
    """The attacker's page on another port of 127.0.0.1; yields its origin."""
    with httpx.Client(base_url=server, headers=t.ADMIN) as operator:
        body = {"id": "mallory", "vaults": ["team"], "password": MALLORY_PASSWORD}
        assert operator.post("/v1/members", json=body).status_code == 201
    pre, html = _attacker_page(server)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = html.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Set-Cookie", f"sb_console_pre={pre}; Path=/; SameSite=Strict")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    evil = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=evil.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{evil.server_address[1]}"
    finally:
        evil.shutdown()
        evil.server_close()


def _visit(browser: httpx.Client, attacker: str, **headers: str) -> httpx.Response:
    """The victim's browser opens the attacker's page (which tosses the cookie) and its
    form is submitted, with the headers a browser sends for it."""
    page = browser.get(attacker)
    assert browser.cookies.get("sb_console_pre")  # tossed: set by another port
    form = _Form()
    form.feed(page.text)
    return browser.post(form.action, data=form.fields, headers=headers)


def _outcome(response: httpx.Response) -> tuple[int, str | None]:
    return response.status_code, response.headers.get("location")


@pytest.mark.parametrize(
    "headers",
    [
        # Chromium, Firefox, Safari 16.4+: a form posted across ports is same-site.
        {"Origin": "ATTACKER", "Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "navigate"},
        {"Origin": "ATTACKER"},  # a browser without Fetch Metadata
        {"Sec-Fetch-Site": "same-site"},  # one that withholds Origin
        {"Origin": "null", "Sec-Fetch-Site": "cross-site"},  # a sandboxed frame
        {"Origin": "null"},  # a page with Referrer-Policy: no-referrer, older browser
        {"Origin": "ATTACKER", "Sec-Fetch-Site": "none"},  # not what a page can send
    ],
)
def test_a_page_on_another_port_cannot_sign_the_browser_in_as_its_member(
    server: str, attacker: str, headers: dict[str, str]
) -> None:
    sent = {name: attacker if value == "ATTACKER" else value for name, value in headers.items()}
    with httpx.Client() as browser:
        answer = _visit(browser, attacker, **sent)
        assert answer.status_code == 403, _outcome(answer)
        assert "another site or another port" in answer.text
        assert "sb_console" not in browser.cookies
        assert _outcome(browser.get(f"{server}/console/requests")) == (303, "/console/sign-in")


def test_the_same_form_posted_from_the_console_itself_signs_in(server: str) -> None:
    with httpx.Client(base_url=server) as browser:
        page = browser.get("/console/sign-in")
        found = CSRF.search(page.text)
        assert found is not None
        body = {"csrf": found.group(1), "username": "alice", "password": o.PASSWORD}
        with httpx.Client(base_url=server, headers=t.ADMIN) as operator:
            member = {"id": "alice", "vaults": ["team"], "password": o.PASSWORD}
            assert operator.post("/v1/members", json=member).status_code == 201
        headers = {"Origin": server, "Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "navigate"}
        assert _outcome(browser.post("/console/sign-in", data=body, headers=headers)) == SIGNED_IN
        page = browser.get("/console/requests")
        assert page.status_code == 200
        assert "alice" in page.text


def test_every_console_post_from_another_origin_is_refused(server: str, attacker: str) -> None:
    """A signed-in session, its own valid form token, and still: another origin's post of
    any console form changes nothing (here: signing out, and withdrawing nothing)."""
    with httpx.Client(base_url=server) as browser:
        page = browser.get("/console/sign-in")
        found = CSRF.search(page.text)
        assert found is not None
        body = {"csrf": found.group(1), "username": "mallory", "password": MALLORY_PASSWORD}
        assert _outcome(browser.post("/console/sign-in", data=body)) == SIGNED_IN  # curl-like
        page = browser.get("/console/requests")
        token = CSRF.search(page.text)
        assert token is not None
        foreign = {"Origin": attacker, "Sec-Fetch-Site": "same-site"}
        out = browser.post("/console/sign-out", data={"csrf": token.group(1)}, headers=foreign)
        assert out.status_code == 403
        assert browser.get("/console/requests").status_code == 200  # still signed in
        same = {"Origin": server, "Sec-Fetch-Site": "same-origin"}
        out = browser.post("/console/sign-out", data={"csrf": token.group(1)}, headers=same)
        assert _outcome(out) == (303, "/console/sign-in")
