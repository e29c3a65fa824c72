"""Signing in with a real browser: Playwright drives Debian's chromium (headless) through the
center's login page and the consent page after it, and the 302 after Allow (or Deny) lands
on a callback the test serves on another loopback origin; the code it carries buys an
access token (PKCE) that a node takes.

Only a browser enforces the pages' Content-Security-Policy. Chromium applies `form-action`
to the redirect that follows a form post, so the consent page must name the client's
redirect origin there, and the login form too (also when re-rendered after a wrong
password). One test serves the consent page with that origin removed from the header and
watches chromium refuse the redirect: the callback never sees the code. The consent tests
allow, deny, narrow the scope and vaults, sign in again without being asked, and are
asked again once the consent is revoked.
Nothing is screenshotted or written outside the test's temporary directory.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
import pytest_asyncio
from playwright.async_api import ConsoleMessage, Page, Route, async_playwright, expect

from center.oauth.testing import PASSWORD, Pkce, authorize_params, exchange, pkce, register

from ..deploy.conftest import call, mcp_session
from .oauth_stack import MEMBER, VAULT, Stack, oauth_stack

pytestmark = [pytest.mark.slow, pytest.mark.asyncio]

STATE = "browser-state-0123"


@dataclass
class Callback:
    """An OAuth client's redirect endpoint on its own loopback origin: it records the
    path and query of every request it gets and answers with a small page."""

    server: ThreadingHTTPServer
    hits: list[str] = field(default_factory=list)

    @property
    def origin(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def redirect_uri(self) -> str:
        return f"{self.origin}/callback"

    @property
    def arrivals(self) -> list[str]:
        """The requests to the redirect endpoint (a browser asks for /favicon.ico too)."""
        return [hit for hit in self.hits if urlsplit(hit).path == "/callback"]

    def query(self, hit: str) -> dict[str, str]:
        return {name: values[0] for name, values in parse_qs(urlsplit(hit).query).items()}


def callback_server() -> Callback:
    hits: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            body = b"<!doctype html><title>Signed in</title><p>You may close this window.</p>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the query carries a code, which no log should hold."""

    return Callback(ThreadingHTTPServer(("127.0.0.1", 0), Handler), hits)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with oauth_stack(tmp_path_factory.mktemp("browser-login")) as running:
        yield running


@pytest.fixture
def callback() -> Iterator[Callback]:
    served = callback_server()
    thread = threading.Thread(target=served.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield served
    finally:
        served.server.shutdown()
        served.server.server_close()
        thread.join()


def chromium() -> str:
    found = shutil.which("chromium")
    if found is None:
        pytest.fail(
            "Debian's chromium is not installed (apt-get install chromium; .ci/run does); "
            "the browser tests use it and never download a browser of their own"
        )
    return found


@pytest_asyncio.fixture
async def page() -> AsyncIterator[Page]:
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium(), headless=True)
        try:
            context = await browser.new_context()
            yield await context.new_page()
        finally:
            await browser.close()


@dataclass(frozen=True)
class Attempt:
    """A registered client and the authorization URL it sends the browser to."""

    client_id: str
    proof: Pkce
    url: str


async def start(stack: Stack, callback: Callback, client_id: str | None = None) -> Attempt:
    """An authorization for a newly registered client (or `client_id`, once more)."""
    if client_id is None:
        async with httpx.AsyncClient(base_url=stack.issuer, timeout=30) as http:
            client_id = await register(http, [callback.redirect_uri])
    proof = pkce()
    params = authorize_params(
        client_id,
        proof,
        redirect_uri=callback.redirect_uri,
        state=STATE,
        resource=(stack.mcp_url,),
    )
    return Attempt(client_id, proof, f"{stack.issuer}/authorize?{urlencode(params)}")


async def audit(stack: Stack) -> list[dict[str, Any]]:
    """The center's audit log, as the operator exports it."""
    operator = {"Authorization": f"Bearer {stack.center.admin_token}"}
    async with httpx.AsyncClient(base_url=stack.issuer, headers=operator, timeout=30) as http:
        exported = await http.get("/v1/audit")
    assert exported.status_code == 200, exported.text
    return [json.loads(line) for line in exported.text.splitlines()]


def form_action(policy: str) -> list[str]:
    """The sources of the `form-action` directive of a CSP header."""
    for directive in policy.split(";"):
        words = directive.split()
        if words and words[0] == "form-action":
            return words[1:]
    return []


async def fill_in(page: Page, username: str = MEMBER) -> None:
    await page.fill("#username", username)
    await page.fill("#password", PASSWORD)


async def sign_in(page: Page) -> None:
    """Submit the filled-in login form; the consent page must come next."""
    async with page.expect_response(lambda r: r.request.method == "POST") as posted:
        await page.click("button[type=submit]")
    answer = await posted.value
    assert answer.status == 200
    # The answer is in before the browser has shown it: wait for the page, not the wire.
    await expect(page).to_have_title("Allow access · secondbrain")


async def submit_and_follow(page: Page, callback: Callback, decision: str = "allow") -> None:
    """Sign in, press Allow (or `decision`) on the consent page, and follow to the client."""
    await sign_in(page)
    await follow(page, callback, f"button[value={decision}]")


async def follow(page: Page, callback: Callback, button: str) -> None:
    """Click `button` and wait until the browser arrives at the callback; if it never does,
    fail with chromium's own words about the Content-Security-Policy that stopped it."""
    refused: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    def watch(message: ConsoleMessage) -> None:
        if "Content Security Policy" in message.text and not refused.done():
            refused.set_result(message.text)

    page.on("console", watch)
    arrived = asyncio.ensure_future(
        page.wait_for_url(lambda url: url.startswith(f"{callback.redirect_uri}?"))
    )
    await page.click(button)
    either: list[asyncio.Future[Any]] = [arrived, refused]
    await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
    if arrived.done() and arrived.exception() is None:
        return
    arrived.cancel()
    await asyncio.wait({refused}, timeout=5)  # the console may trail the aborted navigation
    why = refused.result() if refused.done() else "no Content-Security-Policy message"
    pytest.fail(f"chromium did not follow the sign-in to the client: {why}")


async def redeem(
    stack: Stack, callback: Callback, attempt: Attempt, arrivals: int = 1
) -> tuple[dict[str, str], dict[str, Any]]:
    """What the last of `arrivals` at the callback carried, and the tokens its code bought."""
    assert len(callback.arrivals) == arrivals, callback.hits
    answer = callback.query(callback.arrivals[-1])
    assert (answer["state"], answer["iss"]) == (STATE, stack.issuer)
    async with httpx.AsyncClient(base_url=stack.issuer, timeout=30) as http:
        exchanged = await exchange(
            http,
            attempt.client_id,
            answer["code"],
            attempt.proof,
            redirect_uri=callback.redirect_uri,
            resource=stack.mcp_url,
        )
    assert exchanged.status_code == 200, exchanged.text
    tokens: dict[str, Any] = exchanged.json()
    assert tokens["token_type"] == "Bearer"
    return answer, tokens


async def test_a_browser_signs_in_and_the_code_buys_a_token_a_node_takes(
    stack: Stack, callback: Callback, page: Page
) -> None:
    attempt = await start(stack, callback)
    opened = await page.goto(attempt.url)
    assert opened is not None
    assert opened.status == 200
    policy = await opened.header_value("content-security-policy")
    assert policy is not None
    assert form_action(policy) == ["'self'", callback.origin]
    assert await page.title() == "Sign in · secondbrain"

    await fill_in(page)
    await sign_in(page)
    assert "Test Client" in await page.inner_text("main")
    assert await page.is_checked("input[name=vault][value=team]")
    assert await page.is_checked("input[name=scope][value='read write']")
    for width in (375, 1440):  # a phone, a wide screen: the page never scrolls sideways
        await page.set_viewport_size({"width": width, "height": 800})
        wide = await page.evaluate("document.documentElement.scrollWidth")
        assert wide <= width, f"the consent page is {wide} px wide at {width} px"
    await follow(page, callback, "button[value=allow]")
    assert await page.inner_text("p") == "You may close this window."

    answer, tokens = await redeem(stack, callback, attempt)
    async with mcp_session(stack.mcp_url, tokens["access_token"]) as mcp:
        note = await call(mcp, "note_read", {"path": "wiki/rate-limiting.md"})
    assert "Token buckets refill continuously." in note["content"]
    for secret in (tokens["access_token"], tokens["refresh_token"], answer["code"], PASSWORD):
        assert secret not in stack.logs()


async def test_after_a_wrong_password_the_fresh_form_still_reaches_the_client(
    stack: Stack, callback: Callback, page: Page
) -> None:
    """The form re-rendered after a failure is a new document with its own policy: it must
    name the redirect origin too, or the second, correct attempt would go nowhere."""
    attempt = await start(stack, callback)
    await page.goto(attempt.url)
    await page.fill("#username", MEMBER)
    await page.fill("#password", "not the password")
    async with page.expect_response(lambda r: r.request.method == "POST") as posted:
        await page.click("button[type=submit]")
    failed = await posted.value
    assert failed.status == 401
    policy = await failed.header_value("content-security-policy")
    assert policy is not None
    assert form_action(policy) == ["'self'", callback.origin]
    assert await page.inner_text(".error") == "Invalid username or password."
    assert await page.input_value("#username") == MEMBER
    assert callback.arrivals == []

    await page.fill("#password", PASSWORD)
    await submit_and_follow(page, callback)
    _, tokens = await redeem(stack, callback, attempt)
    async with mcp_session(stack.mcp_url, tokens["access_token"]) as mcp:
        listed = await call(mcp, "vault_list", {})
    assert [vault["name"] for vault in listed["vaults"]] == [VAULT]


async def test_without_the_redirect_origin_in_form_action_the_browser_keeps_the_code(
    stack: Stack, callback: Callback, page: Page
) -> None:
    attempt = await start(stack, callback)
    narrowed: list[str] = []

    async def drop_redirect_origin(route: Route) -> None:
        """Serve the consent page (the answer to the sign-in post) with the callback's
        origin cut from `form-action`; every other request goes through untouched."""
        if "username=" not in (route.request.post_data or ""):
            await route.continue_()
            return
        response = await route.fetch(max_redirects=0)
        headers = dict(response.headers)
        policy = headers["content-security-policy"]
        headers["content-security-policy"] = policy.replace(f" {callback.origin}", "")
        narrowed.append(headers["content-security-policy"])
        await route.fulfill(response=response, headers=headers)

    await page.route(lambda url: url.startswith(f"{stack.issuer}/authorize?"), drop_redirect_origin)
    opened = await page.goto(attempt.url)
    assert opened is not None
    assert opened.status == 200

    await fill_in(page)
    await sign_in(page)
    assert len(narrowed) == 1
    assert form_action(narrowed[0]) == ["'self'"]
    async with page.expect_console_message(lambda m: "form-action" in m.text) as refused:
        await page.click("button[value=allow]")
    message = (await refused.value).text
    assert "form-action 'self'" in message, message
    assert "blocked" in message, message
    # The center did its part: alice signed in, allowed, and was sent on with a code.
    records = await audit(stack)
    signed_in = [r for r in records if r["action"] == "login.success"]
    assert signed_in[-1]["object"] == f"client:{attempt.client_id}"
    allowed = [r for r in records if r["action"] == "consent.give"]
    assert allowed[-1]["object"] == f"client:{attempt.client_id}"

    # The callback is reachable from this browser, and yet the sign-in never arrived.
    probe = await page.goto(f"{callback.origin}/reachable")
    assert probe is not None
    assert probe.status == 200
    assert "/reachable" in callback.hits
    assert callback.arrivals == []


async def test_deny_in_a_browser_lands_at_the_client_with_access_denied(
    stack: Stack, callback: Callback, page: Page
) -> None:
    attempt = await start(stack, callback)
    await page.goto(attempt.url)
    await fill_in(page)
    await submit_and_follow(page, callback, "deny")
    [arrival] = callback.arrivals
    answer = callback.query(arrival)
    assert (answer["error"], answer["state"], answer["iss"]) == (
        "access_denied",
        STATE,
        stack.issuer,
    )
    assert "code" not in answer
    denied = [r for r in await audit(stack) if r["action"] == "consent.deny"]
    assert denied[-1]["object"] == f"client:{attempt.client_id}"


async def test_a_narrowed_consent_in_a_browser_gives_a_narrowed_token(
    stack: Stack, callback: Callback, page: Page
) -> None:
    """dora holds read_write in team and archive; she allows read in team only."""
    dora = {"id": "dora", "vaults": ["archive", VAULT], "role": "editor", "scope": "read_write"}
    stack.center.admin("POST", "/v1/members", {**dora, "password": PASSWORD})
    attempt = await start(stack, callback)
    await page.goto(attempt.url)
    await fill_in(page, "dora")
    await sign_in(page)
    assert await page.is_checked("input[name=vault][value=archive]")
    await page.check("input[name=scope][value=read]")
    await page.uncheck("input[name=vault][value=archive]")
    await follow(page, callback, "button[value=allow]")
    _, tokens = await redeem(stack, callback, attempt)
    assert tokens["scope"] == "read"
    async with mcp_session(stack.mcp_url, tokens["access_token"]) as mcp:
        tools = {tool.name for tool in (await mcp.list_tools()).tools}
        listed = await call(mcp, "vault_list", {})
    assert "note_read" in tools
    assert "note_create" not in tools
    assert [vault["name"] for vault in listed["vaults"]] == [VAULT]


async def test_a_second_sign_in_skips_consent_until_it_is_revoked(
    stack: Stack, callback: Callback, page: Page
) -> None:
    first = await start(stack, callback)
    await page.goto(first.url)
    await fill_in(page)
    await submit_and_follow(page, callback)
    await redeem(stack, callback, first)

    second = await start(stack, callback, first.client_id)
    await page.goto(second.url)
    await fill_in(page)
    await follow(page, callback, "button[type=submit]")  # straight back: no consent page
    _, tokens = await redeem(stack, callback, second, arrivals=2)
    assert tokens["scope"] == "read write"

    operator = {"Authorization": f"Bearer {stack.center.admin_token}"}
    async with httpx.AsyncClient(base_url=stack.issuer, headers=operator, timeout=30) as http:
        listed = (await http.get("/v1/consents", params={"member": MEMBER})).json()
        [kept] = [c for c in listed["consents"] if c["client_id"] == first.client_id]
        revoked = await http.delete(f"/v1/consents/{kept['id']}")
    assert revoked.status_code == 200, revoked.text
    assert revoked.json()["ended_sign_ins"] == 2

    third = await start(stack, callback, first.client_id)
    await page.goto(third.url)
    await fill_in(page)
    await submit_and_follow(page, callback)  # asked again
    await redeem(stack, callback, third, arrivals=3)


async def test_the_consent_page_works_by_keyboard_alone(
    stack: Stack, callback: Callback, page: Page
) -> None:
    """Tab into the access levels, arrow down to read, tab past the vault and Deny to
    Allow, press Enter: the token reads only."""
    attempt = await start(stack, callback)
    await page.goto(attempt.url)
    await fill_in(page)
    await sign_in(page)
    focused = "document.activeElement.name + '=' + document.activeElement.value"
    await page.keyboard.press("Tab")
    assert await page.evaluate(focused) == "scope=read write"
    await page.keyboard.press("ArrowDown")
    assert await page.is_checked("input[name=scope][value=read]")
    for expected in ("vault=team", "decision=deny", "decision=allow"):
        await page.keyboard.press("Tab")
        assert await page.evaluate(focused) == expected
    arrived = page.wait_for_url(lambda url: url.startswith(f"{callback.redirect_uri}?"))
    await page.keyboard.press("Enter")
    await arrived
    _, tokens = await redeem(stack, callback, attempt)
    assert tokens["scope"] == "read"
