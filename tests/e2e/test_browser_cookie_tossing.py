"""Login CSRF by cookie tossing, in a real browser: Playwright drives Debian's chromium
(headless) to an attacker's page on another 127.0.0.1 port. Cookies know no ports, so
that page can set the console's pre-session cookie; its form carries the sign-in token
the attacker fetched for that cookie and mallory's password, and submits itself. The
center (`secondbrain-center serve`) refuses the post by the `Origin` and
`Sec-Fetch-Site` chromium sends with it, and the browser stays signed out; the console's
own sign-in form, filled in the same browser, still signs in.
"""

from __future__ import annotations

import re
import threading
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from playwright.async_api import Page, async_playwright

from center.oauth.testing import PASSWORD

from ..deploy.conftest import CenterSetup
from .test_browser_login import chromium

pytestmark = [pytest.mark.slow, pytest.mark.asyncio]

MALLORY_PASSWORD = "mallory's own password, 2026"
CSRF = re.compile(r'name="csrf" value="([^"]+)"')
PAGE_TIMEOUT = 90_000
"""Milliseconds Playwright waits for a page: generous, the machine may be busy."""


@pytest.fixture(scope="module")
def center(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CenterSetup]:
    root = tmp_path_factory.mktemp("tossing")
    setup = CenterSetup(root / "center")
    service = setup.start(root / "center.log")
    try:
        for member, password in (("alice", PASSWORD), ("mallory", MALLORY_PASSWORD)):
            body = {"id": member, "vaults": ["team"], "password": password}
            setup.admin("POST", "/v1/members", body)
        yield setup
    finally:
        service.stop()


@pytest.fixture
def attacker(center: CenterSetup) -> Iterator[str]:
    """The attacker's page on another port: it tosses a pre-session cookie the attacker
    got from the console and posts the sign-in form as mallory on load."""
    with httpx.Client(base_url=center.url) as own:
        form = own.get("/console/sign-in")
        token = CSRF.search(form.text)
        assert token is not None
        pre = own.cookies["sb_console_pre"]
    html = (
        "<!doctype html><title>Free stickers</title>"
        f'<form method="post" action="{center.url}/console/sign-in">'
        f'<input type="hidden" name="csrf" value="{token.group(1)}">'
        '<input type="hidden" name="username" value="mallory">'
        f'<input type="hidden" name="password" value="{MALLORY_PASSWORD}"></form>'
        "<script>document.forms[0].submit()</script>"
    ).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Set-Cookie", f"sb_console_pre={pre}; Path=/; HttpOnly")
            self.send_header("Content-Length", str(len(html)))
            self.end_headers()
            self.wfile.write(html)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/stickers"
    finally:
        server.shutdown()
        server.server_close()


@pytest_asyncio.fixture
async def page() -> AsyncIterator[Page]:
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium(), headless=True)
        try:
            context = await browser.new_context()
            context.set_default_timeout(PAGE_TIMEOUT)
            yield await context.new_page()
        finally:
            await browser.close()


async def test_a_page_on_another_port_cannot_sign_chromium_in_as_its_member(
    center: CenterSetup, attacker: str, page: Page, tmp_path: Path
) -> None:
    sent: list[dict[str, str]] = []
    page.on(
        "request",
        lambda request: sent.append(request.headers) if request.method == "POST" else None,
    )
    await page.goto(attacker)
    await page.wait_for_url(f"{center.url}/console/**")  # the form submitted itself
    answer = await page.content()
    assert page.url == f"{center.url}/console/sign-in", f"signed in as mallory: {page.url}"
    assert "another site or another port" in answer, answer
    tossed = {c["name"] for c in await page.context.cookies(center.url)}
    assert "sb_console_pre" in tossed  # the cookie did reach the center's origin
    assert "sb_console" not in tossed  # and no session came of it
    assert sent, "the attacker's form was not posted"
    assert sent[0].get("origin") == attacker.rsplit("/", 1)[0]  # what chromium says
    await page.goto(f"{center.url}/console/requests")
    assert page.url == f"{center.url}/console/sign-in"

    # The console's own form, in the same browser (its tossed cookie still there).
    await page.fill("#username", "alice")
    await page.fill("#password", PASSWORD)
    async with page.expect_navigation():
        await page.click("form[action='/console/sign-in'] button")
    assert page.url == f"{center.url}/console/requests", await page.content()
    assert "alice" in await page.content()
