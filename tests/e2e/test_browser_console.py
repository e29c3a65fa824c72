"""The console in a real browser: Playwright drives Debian's chromium (headless) against a
real center (`secondbrain-center serve`, on SQLite and on PostgreSQL) and a real node.

The operator signs in with the admin token, sees the request a member filed from the CLI,
narrows it and approves it; the member claims it from the CLI and reads through the
official MCP SDK client on the node; the operator revokes the grant on the grants page
and the node refuses the token; the audit page shows those records and "chain verified".
Scripting off, and with the keyboard alone, the forms work the same. Every page is
screenshotted at 375 px and 1440 px into `.artifacts/console/` (ignored by git; set
SECONDBRAIN_ARTIFACTS to put them elsewhere) and checked not to scroll sideways or break
its own Content-Security-Policy.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from mcp.shared.exceptions import MCPError
from playwright.async_api import (
    Browser,
    BrowserContext,
    ConsoleMessage,
    Page,
    async_playwright,
    expect,
)

from center.oauth.testing import PASSWORD

from ..deploy.conftest import call, clean_env, mcp_session, postgres_database
from .oauth_stack import MEMBER, VAULT, Stack, oauth_stack
from .test_browser_login import chromium

pytestmark = [pytest.mark.slow, pytest.mark.asyncio]

REPO = Path(__file__).resolve().parents[2]
WIDTHS = (375, 1440)
PAGE_TIMEOUT = 90_000
"""Milliseconds Playwright waits for a page: generous, the machine may be busy."""
REFUSAL_DEADLINE = 90.0
"""The node polls the feed every 10 s by default: many intervals, for a loaded machine."""


def artifacts() -> Path:
    folder = Path(os.environ.get("SECONDBRAIN_ARTIFACTS", REPO / ".artifacts")) / "console"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def stack(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Stack]:
    root = tmp_path_factory.mktemp(f"console-{request.param}")
    if request.param == "sqlite":
        with oauth_stack(root) as running:
            yield running
        return
    with postgres_database() as url, oauth_stack(root, database_url=url) as running:
        yield running


@pytest_asyncio.fixture
async def browser() -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=chromium(), headless=True)
        try:
            yield launched
        finally:
            await launched.close()


class Watched:
    """A page whose console is watched for Content-Security-Policy violations."""

    def __init__(self, page: Page, backend: str) -> None:
        self.page = page
        self.backend = backend
        self.violations: list[str] = []
        page.on("console", self._watch)

    def _watch(self, message: ConsoleMessage) -> None:
        if "Content Security Policy" in message.text:
            self.violations.append(message.text)

    async def shoot(self, name: str) -> None:
        """Screenshots at both widths; at each, the page must not scroll sideways."""
        for width in WIDTHS:
            await self.page.set_viewport_size({"width": width, "height": 900})
            wide = await self.page.evaluate("document.documentElement.scrollWidth")
            assert wide <= width, f"{name} scrolls sideways at {width} px ({wide} px wide)"
            path = artifacts() / f"{self.backend}-{name}-{width}.png"
            await self.page.screenshot(path=str(path), full_page=True)
        await self.page.set_viewport_size({"width": 1440, "height": 900})


async def open_page(
    browser: Browser, stack: Stack, *, scripts: bool = True, zone: str = "UTC"
) -> tuple[BrowserContext, Watched]:
    context = await browser.new_context(
        java_script_enabled=scripts, timezone_id=zone, viewport={"width": 1440, "height": 900}
    )
    context.set_default_timeout(PAGE_TIMEOUT)
    backend = "postgresql" if stack.center.database_url else "sqlite"
    return context, Watched(await context.new_page(), backend)


def cli(stack: Stack, *args: str, credential: str | None = None) -> dict[str, Any]:
    """`secondbrain-center ARGS --json` as a member (its credential in the environment)."""
    env = clean_env(
        SECONDBRAIN_CENTER_URL=stack.issuer,
        SECONDBRAIN_CENTER_TOKEN=credential or stack.member_credential,
    )
    command = [sys.executable, "-c", "from center.cli import main; main()", *args, "--json"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def node_answer(stack: Stack, token: str) -> int:
    """The HTTP status of one tool call on the node with `token`."""
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "vault_stats", "arguments": {}},
    }
    headers = {"Authorization": f"Bearer {token}"}
    return httpx.post(stack.mcp_url, json=message, headers=headers, timeout=30).status_code


def audit(stack: Stack) -> list[dict[str, Any]]:
    operator = {"Authorization": f"Bearer {stack.center.admin_token}"}
    exported = httpx.get(f"{stack.issuer}/v1/audit", headers=operator, timeout=30)
    return [json.loads(line) for line in exported.text.splitlines()]


async def sign_in_operator(watched: Watched, stack: Stack) -> None:
    page = watched.page
    await page.goto(f"{stack.issuer}/console/sign-in")
    await page.fill("#admin_token", stack.center.admin_token)
    await page.get_by_role("button", name="Sign in as operator").click()
    await page.wait_for_url(f"{stack.issuer}/console/requests")


async def test_request_narrowed_approved_claimed_used_and_revoked_in_a_browser(
    stack: Stack, browser: Browser
) -> None:
    asked = cli(
        stack,
        "request",
        "create",
        "--vault",
        VAULT,
        "--scope",
        "read_write",
        "--minutes",
        "30",
        "--reason",
        "quarterly review",
    )
    request_id = asked["id"]
    context, operator = await open_page(browser, stack, zone="Europe/Berlin")
    page = operator.page
    opened = await page.goto(f"{stack.issuer}/console/sign-in")
    assert opened is not None
    policy = await opened.header_value("content-security-policy") or ""
    assert "frame-ancestors 'none'" in policy
    assert "script-src 'self'" in policy
    await operator.shoot("sign-in")
    await sign_in_operator(operator, stack)
    session = next(c for c in await context.cookies() if c["name"] == "sb_console")
    assert session["httpOnly"] is True
    assert session["sameSite"] == "Strict"
    assert session["secure"] is False  # plain http on loopback; https makes it Secure
    assert stack.center.admin_token not in page.url

    card = page.locator("section.card", has_text=f"{MEMBER} asks for")
    assert "quarterly review" in await card.inner_text()
    assert "(Europe/Berlin)" in await page.inner_text("footer")
    await operator.shoot("requests-pending")
    await page.select_option(f"#scope-{request_id}", "read")
    await page.fill(f"#minutes-{request_id}", "10")
    await page.click(f'form[action="/console/requests/{request_id}/approve"] button')
    await page.wait_for_selector(".notice")
    assert "read for 10 min" in await page.inner_text(".notice")
    await operator.shoot("requests-decided")

    claimed = cli(stack, "request", "claim", request_id, "--resource", stack.mcp_url)
    assert (claimed["scope"], claimed["vault"]) == ("read", VAULT)
    token = claimed["token"]
    async with mcp_session(stack.mcp_url, token) as mcp:
        note = await call(mcp, "note_read", {"path": "wiki/rate-limiting.md"})
        with pytest.raises(MCPError):  # the approval narrowed the grant to read
            await mcp.call_tool("inbox_capture", {"text": "narrowed to read"})
    assert "Token buckets refill continuously." in note["content"]

    await page.goto(f"{stack.issuer}/console/grants")
    await operator.shoot("grants")
    await page.click(f'a[href="/console/grants/{claimed["id"]}/revoke"]')
    assert claimed["id"] in await page.inner_text("main")
    await operator.shoot("grant-revoke-confirm")
    await page.click(f'form[action="/console/grants/{claimed["id"]}/revoke"] button')
    await page.wait_for_selector(".notice")

    deadline = time.monotonic() + REFUSAL_DEADLINE
    while node_answer(stack, token) != 401:
        assert time.monotonic() < deadline, "the node kept taking the revoked grant's token"
        time.sleep(0.5)

    await page.goto(f"{stack.issuer}/console/audit")
    assert "Chain verified" in await page.inner_text(".ok")
    table = await page.inner_text("table")
    for action in ("request.create", "request.approve", "request.claim", "grant.revoke"):
        assert action in table
    await operator.shoot("audit")
    records = audit(stack)
    approve = next(r for r in records if r["action"] == "request.approve")
    revoke = next(r for r in records if r["action"] == "grant.revoke")
    assert (approve["channel"], revoke["channel"]) == ("console", "console")
    assert "channel" not in next(r for r in records if r["action"] == "request.claim")

    for name in ("members", "tokens", "nodes"):
        await page.goto(f"{stack.issuer}/console/{name}")
        await operator.shoot(name)
    await page.goto(f"{stack.issuer}/console/members/{MEMBER}")
    await operator.shoot("member")
    assert operator.violations == []
    await context.close()
    for secret in (stack.center.admin_token, stack.member_credential, token, PASSWORD):
        assert secret not in stack.logs()


async def test_with_scripting_off_and_the_keyboard_alone_the_forms_work(
    stack: Stack, browser: Browser
) -> None:
    context, member = await open_page(browser, stack, scripts=False)
    page = member.page
    await page.goto(f"{stack.issuer}/console/sign-in")
    await expect(page.locator("#username")).to_be_focused()  # autofocus, no script needed
    await page.keyboard.type(MEMBER)
    await page.keyboard.press("Tab")
    await page.keyboard.type(PASSWORD)
    await page.keyboard.press("Enter")
    await page.wait_for_url(f"{stack.issuer}/console/requests")
    await page.goto(f"{stack.issuer}/console/me")
    assert VAULT in await page.inner_text("main")
    await member.shoot("me")
    await page.select_option("#ask-scope", "read")
    await page.fill("#ask-reason", "asked with scripts off")
    await page.get_by_role("button", name="Ask", exact=True).click()
    await page.wait_for_selector(".notice")
    await member.shoot("requests-member")
    assert "Times are shown in UTC" in await page.inner_text("footer")

    other, operator = await open_page(browser, stack, scripts=False)
    await sign_in_operator(operator, stack)
    card = operator.page.locator("section.card", has_text="asked with scripts off")
    await card.locator('input[name="reason"]').fill("not this quarter")
    await card.get_by_role("button", name="Reject", exact=True).click()
    await operator.page.wait_for_selector(".notice")
    await page.goto(f"{stack.issuer}/console/requests")
    assert "not this quarter" in await page.inner_text("main")
    await other.close()

    await page.goto(f"{stack.issuer}/console/tokens")
    await page.fill("#mint-days", "1")
    await page.fill("#mint-resource", stack.mcp_url)
    await page.get_by_role("button", name="Mint", exact=True).click()
    minted = await page.input_value("#token")
    await expect(page.locator("button[data-copy]")).to_be_hidden()  # it needs a script
    assert node_answer(stack, minted) == 200
    await member.shoot("token-minted")

    await page.goto(f"{stack.issuer}/console/me")
    await page.fill("#current", PASSWORD)
    await page.fill("#new", PASSWORD)
    await page.fill("#repeat", PASSWORD)
    await page.get_by_role("button", name="Change password", exact=True).click()
    await page.wait_for_url(f"{stack.issuer}/console/sign-in?ended=password")
    assert "sign-ins ended" in await page.inner_text(".notice")
    await page.goto(f"{stack.issuer}/console/me")
    assert page.url == f"{stack.issuer}/console/sign-in"
    assert member.violations == []
    await context.close()
    for secret in (minted, PASSWORD, stack.center.admin_token):
        assert secret not in stack.logs()


async def test_a_member_with_only_a_password_claims_its_grant_in_a_browser(
    stack: Stack, browser: Browser
) -> None:
    """Asked and claimed in the console, by a member that never saw a credential: the token
    it copies from the page works on the node."""
    context, member = await open_page(browser, stack)
    page = member.page
    await page.goto(f"{stack.issuer}/console/sign-in")
    await page.fill("#username", MEMBER)
    await page.fill("#password", PASSWORD)
    await page.get_by_role("button", name="Sign in", exact=True).click()
    await page.wait_for_url(f"{stack.issuer}/console/requests")
    await page.select_option("#ask-scope", "read")
    await page.fill("#ask-reason", "claimed in the browser")
    await page.get_by_role("button", name="Ask", exact=True).click()
    await page.wait_for_selector(".notice")
    operator = {"Authorization": f"Bearer {stack.center.admin_token}"}
    listed = httpx.get(f"{stack.issuer}/v1/requests", headers=operator, timeout=30).json()
    asked = next(r for r in listed["requests"] if r["reason"] == "claimed in the browser")
    approved = httpx.post(
        f"{stack.issuer}/v1/requests/{asked['id']}/approve", headers=operator, timeout=30
    )
    assert approved.status_code == 200, approved.text
    await page.goto(f"{stack.issuer}/console/requests")
    await page.click(f'form[action="/console/requests/{asked["id"]}/claim"] button')
    await page.wait_for_selector("#token")
    token = await page.input_value("#token")
    assert stack.mcp_url in await page.inner_text("main")
    await member.shoot("request-claimed")
    assert node_answer(stack, token) == 200
    assert member.violations == []
    await context.close()
    assert token not in stack.logs()
