"""The console's sign-in, sessions, headers and CSRF tokens, through its pages as a
browser sees them (in process, on SQLite and PostgreSQL)."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable

import httpx
import pytest
import pytest_asyncio
from fastapi import FastAPI

from center import testing as t
from center.config import Settings
from center.console.testing import SENT_TO_SIGN_IN, Browser, redirect
from center.oauth import testing as o

pytestmark = pytest.mark.asyncio


@pytest_asyncio.fixture
async def app(settings: Settings, clock: t.Clock) -> AsyncIterator[FastAPI]:
    async with t.running(settings, clock, passwords=o.fast_passwords()) as running:
        async with t.client(running) as http:
            await o.add_node(http)
            await o.add_member(http, "alice", role="editor", scope="read_write")
            await o.add_member(http, "bob", role="admin", scope="read_write_delete")
        yield running


async def audit(app: FastAPI) -> list[dict[str, object]]:
    async with t.client(app) as http:
        exported = await http.get("/v1/audit", headers=t.ADMIN)
    return [json.loads(line) for line in exported.text.splitlines()]


def cookie_header(response: httpx.Response, name: str) -> str:
    return next(v for v in response.headers.get_list("set-cookie") if v.startswith(f"{name}="))


# ---------------------------------------------------------------- sign-in and headers


async def test_the_pages_carry_a_strict_policy_and_no_inline_script(
    browsers: Callable[[], Browser],
) -> None:
    page = await browsers().get("/console/sign-in")
    assert page.status_code == 200
    policy = page.headers["content-security-policy"]
    for directive in ("default-src 'none'", "script-src 'self'", "frame-ancestors 'none'"):
        assert directive in policy
    assert "unsafe-inline" not in policy
    assert page.headers["x-frame-options"] == "DENY"
    assert page.headers["cache-control"] == "no-store"
    assert "<script>" not in page.text
    assert "style=" not in page.text
    assert "<style" not in page.text


async def test_a_member_signs_in_with_a_session_cookie_that_is_httponly_strict_and_secure(
    browsers: Callable[[], Browser], app: FastAPI
) -> None:
    alice = browsers()
    signed = await alice.sign_in()
    assert signed.status_code == 303
    assert signed.headers["location"] == "/console/requests"
    cookie = cookie_header(signed, "__Host-sb_console").lower()
    for flag in ("httponly", "samesite=strict", "secure", "path=/"):
        assert flag in cookie
    page = await alice.get("/console/requests")
    assert page.status_code == 200
    assert "alice" in page.text
    records = [r for r in await audit(app) if r["action"] == "login.success"]
    assert records[-1]["actor"] == "alice"
    assert records[-1]["object"] == "console"
    assert records[-1]["channel"] == "console"


async def test_on_plain_http_the_cookie_is_not_secure(settings: Settings, clock: t.Clock) -> None:
    loopback = settings.model_copy(update={"issuer": "http://127.0.0.1:2021"})
    async with t.running(loopback, clock) as running, t.client(running) as http:
        signed = await Browser(http).sign_in_operator()
    cookie = cookie_header(signed, "sb_console").lower()
    assert "httponly" in cookie
    assert "samesite=strict" in cookie
    assert "secure" not in cookie


async def test_a_wrong_password_is_refused_and_audited(
    browsers: Callable[[], Browser], app: FastAPI
) -> None:
    alice = browsers()
    failed = await alice.sign_in(password="not the password at all")
    assert failed.status_code == 401
    assert "Invalid member id, e-mail or password." in failed.text
    assert redirect(await alice.get("/console/requests")) == SENT_TO_SIGN_IN
    failure = [r for r in await audit(app) if r["action"] == "login.failure"][-1]
    assert (failure["actor"], failure["channel"]) == ("public", "console")


async def test_the_operator_signs_in_with_the_admin_token_in_the_form_body(
    browsers: Callable[[], Browser],
) -> None:
    operator = browsers()
    t.refused(
        await operator.sign_in_operator("x" * 40),
        401,
        None,
        "That is not this center's admin token.",
    )
    signed = await operator.sign_in_operator()
    assert signed.status_code == 303
    assert t.ADMIN_TOKEN not in signed.headers["location"]
    page = await operator.get("/console/requests")
    assert page.status_code == 200
    assert "operator" in page.text


async def test_without_a_session_every_page_sends_the_browser_to_sign_in(
    browsers: Callable[[], Browser],
) -> None:
    stranger = browsers()
    for path in ("/console/requests", "/console/members", "/console/audit", "/console/me"):
        answer = await stranger.get(path)
        assert answer.status_code in (303, 404), path
        if answer.status_code == 303:
            assert redirect(answer) == SENT_TO_SIGN_IN


# ---------------------------------------------------------------- CSRF


async def test_a_form_without_its_token_is_refused(browsers: Callable[[], Browser]) -> None:
    alice = browsers()
    await alice.sign_in()
    await alice.get("/console/requests")
    refused = await alice.post("/console/requests", csrf="", vault="team", scope="read")
    assert refused.status_code == 403
    assert "This form cannot be used" in refused.text


async def test_a_spent_token_is_refused_the_second_time(browsers: Callable[[], Browser]) -> None:
    alice = browsers()
    await alice.sign_in()
    await alice.get("/console/requests")
    token = alice.csrf
    first = await alice.post("/console/requests", csrf=token, vault="team", scope="read")
    assert first.status_code == 303
    replayed = await alice.post("/console/requests", csrf=token, vault="team", scope="read")
    t.refused(replayed, 403, None, "Each form works once")


async def test_a_token_from_another_session_is_refused(browsers: Callable[[], Browser]) -> None:
    alice, bob = browsers(), browsers()
    await alice.sign_in()
    await bob.sign_in("bob")
    await bob.get("/console/requests")
    refused = await alice.post("/console/requests", csrf=bob.csrf, vault="team", scope="read")
    t.refused(refused, 403, None, "Each form works once")


async def test_a_sign_in_form_from_another_browser_is_refused(
    browsers: Callable[[], Browser],
) -> None:
    alice, mallory = browsers(), browsers()
    await mallory.get("/console/sign-in")
    await alice.get("/console/sign-in")
    refused = await alice.post(
        "/console/sign-in", csrf=mallory.csrf, username="alice", password=o.PASSWORD
    )
    t.refused(refused, 403, None, "Each form works once")


# ---------------------------------------------------------------- sessions end


async def test_sign_out_ends_the_session_on_the_server(browsers: Callable[[], Browser]) -> None:
    alice = browsers()
    signed = await alice.sign_in()
    cookie = cookie_header(signed, "__Host-sb_console").split(";")[0].split("=", 1)[1]
    await alice.get("/console/requests")
    out = await alice.post("/console/sign-out")
    assert redirect(out) == SENT_TO_SIGN_IN
    assert "Max-Age=0" in cookie_header(out, "__Host-sb_console")
    replay = browsers()
    replay.http.cookies.set("__Host-sb_console", cookie)
    assert redirect(await replay.get("/console/requests")) == SENT_TO_SIGN_IN


async def test_idle_and_absolute_timeouts_end_a_session(
    browsers: Callable[[], Browser], clock: t.Clock
) -> None:
    alice = browsers()
    await alice.sign_in()
    clock.advance(29 * 60)
    assert (await alice.get("/console/requests")).status_code == 200
    clock.advance(31 * 60)
    assert redirect(await alice.get("/console/requests")) == SENT_TO_SIGN_IN
    await alice.sign_in()
    for _ in range(12 * 3):
        clock.advance(20 * 60)
        if (await alice.get("/console/requests")).status_code != 200:
            break
    assert redirect(await alice.get("/console/requests")) == SENT_TO_SIGN_IN


async def test_a_member_change_or_removal_ends_its_sessions(
    browsers: Callable[[], Browser], app: FastAPI
) -> None:
    alice, bob = browsers(), browsers()
    await alice.sign_in()
    await bob.sign_in("bob")
    async with t.client(app) as http:
        changed = await http.patch(
            "/v1/members/alice", json={"email": "a@example.org"}, headers=t.ADMIN
        )
        assert changed.status_code == 200, changed.text
        assert redirect(await alice.get("/console/requests")) == SENT_TO_SIGN_IN
        removed = await http.delete("/v1/members/bob", headers=t.ADMIN)
        assert removed.status_code == 200, removed.text
    assert redirect(await bob.get("/console/requests")) == SENT_TO_SIGN_IN


async def test_no_password_token_or_credential_reaches_a_log_line(
    browsers: Callable[[], Browser], capsys: pytest.CaptureFixture[str]
) -> None:
    operator, alice = browsers(), browsers()
    await operator.sign_in_operator()
    await operator.get("/console/members")
    created = await operator.post(
        "/console/members", id="erin", vaults="team", password="erin's long password"
    )
    credential = re.search(r'value="(sbm_[^"]+)"', created.text)
    assert credential is not None
    await alice.sign_in()
    await alice.get("/console/tokens")
    minted = await alice.post("/console/tokens", scope="read", resource=t.RESOURCE)
    token = re.search(r'id="token" value="([^"]+)"', minted.text)
    assert token is not None
    await alice.sign_in(password="a wrong password, logged?")
    logged = capsys.readouterr().out
    assert "/console/tokens" in logged
    secrets = (t.ADMIN_TOKEN, o.PASSWORD, "erin's long password", credential.group(1))
    for secret in (*secrets, token.group(1), "a wrong password, logged?", operator.csrf):
        assert secret not in logged


async def test_with_changes_locked_the_console_answers_with_a_page(
    browsers: Callable[[], Browser], app: FastAPI
) -> None:
    alice = browsers()
    await alice.sign_in()
    app.state.center.store.locked = "a test locked it"
    try:
        shown = await alice.get("/console/requests")
        posted = await alice.post("/console/requests", vault="team", scope="read")
        signing_in = await browsers().sign_in()
    finally:
        app.state.center.store.locked = None
    assert shown.status_code == 200
    for answer in (posted, signing_in):
        assert answer.status_code == 503
        assert answer.headers["content-type"].startswith("text/html")
        assert "changes are locked" in answer.text


async def test_signing_in_again_ends_the_browsers_previous_session(
    browsers: Callable[[], Browser],
) -> None:
    alice = browsers()
    first = await alice.sign_in()
    old = cookie_header(first, "__Host-sb_console").split(";")[0].split("=", 1)[1]
    await alice.sign_in_operator()
    replay = browsers()
    replay.http.cookies.set("__Host-sb_console", old)
    assert redirect(await replay.get("/console/requests")) == SENT_TO_SIGN_IN
    assert "operator" in (await alice.get("/console/requests")).text
