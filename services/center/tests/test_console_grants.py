"""The console's grants and tokens pages: delegation trees a page at a time, revoking a
grant after seeing its descendants, minting (shown once), listing and revoking tokens."""

from __future__ import annotations

import contextvars
import json
import re
from collections.abc import AsyncIterator, Callable

import pytest
import pytest_asyncio
from fastapi import FastAPI
from sqlalchemy import event

from center import testing as t
from center.config import Settings
from center.console.testing import Browser
from center.db import Grant
from center.oauth import testing as o
from center.runtime import Center

pytestmark = pytest.mark.asyncio


@pytest_asyncio.fixture
async def app(settings: Settings, clock: t.Clock) -> AsyncIterator[FastAPI]:
    async with t.running(settings, clock, passwords=o.fast_passwords()) as running:
        async with t.client(running) as http:
            await o.add_node(http)
            await o.add_member(http, "alice", role="editor", scope="read_write")
            await o.add_member(http, "bob", role="admin", scope="read_write_delete")
            await o.add_member(http, "carol", vaults=("other",), role="admin", scope="read_write")
        yield running


async def issue(app: FastAPI, credential: str = t.ADMIN_TOKEN, **body: object) -> dict[str, object]:
    async with t.client(app) as http:
        answer = await http.post(
            "/v1/grants",
            json={"vault": "team", "minutes": 30, "resource": [t.RESOURCE], **body},
            headers=t.bearer(credential),
        )
    assert answer.status_code == 201, answer.text
    issued: dict[str, object] = answer.json()
    return issued


async def test_grants_show_as_trees_and_revoking_lists_the_descendants_first(
    browsers: Callable[[], Browser], app: FastAPI
) -> None:
    root = await issue(app, grantee="bob", scope="read_write_delete")
    child = await issue(app, str(root["token"]), grantee="alice", scope="read")
    operator = browsers()
    await operator.sign_in_operator()
    page = await operator.get("/console/grants")
    assert page.status_code == 200
    nested = re.search(rf"{root['id']}.*?<ul class=\"tree\">.*?{child['id']}", page.text, re.S)
    assert nested is not None, "the child grant is drawn inside its parent's branch"
    confirm = await operator.get(f"/console/grants/{root['id']}/revoke")
    assert str(child["id"]) in confirm.text
    async with t.client(app) as http:
        live = (await http.get("/v1/grants", headers=t.ADMIN)).json()["grants"]
    assert all(g["revoked"] is None for g in live)
    done = await operator.post(f"/console/grants/{root['id']}/revoke")
    assert done.status_code == 303
    async with t.client(app) as http:
        after = (await http.get("/v1/grants", headers=t.ADMIN)).json()["grants"]
        exported = await http.get("/v1/audit", headers=t.ADMIN)
    assert all(g["revoked"] is not None for g in after)
    revokes = [json.loads(x) for x in exported.text.splitlines() if '"grant.revoke"' in x]
    assert [r["channel"] for r in revokes] == ["console", "console"]


async def test_a_member_sees_and_revokes_only_what_the_api_lets_it(
    browsers: Callable[[], Browser], app: FastAPI
) -> None:
    theirs = await issue(app, grantee="bob", scope="read")
    elsewhere = await issue(app, vault="other", grantee="carol", scope="read")
    carol, alice = browsers(), browsers()
    await carol.sign_in("carol")
    page = await carol.get("/console/grants")
    assert str(elsewhere["id"]) in page.text
    assert str(theirs["id"]) not in page.text
    t.refused(await carol.get(f"/console/grants/{theirs['id']}/revoke"), 404, None, "no grant")
    await carol.get("/console/grants")
    t.refused(await carol.post(f"/console/grants/{theirs['id']}/revoke"), 404, None, "no grant")
    await alice.sign_in("alice")
    assert str(theirs["id"]) not in (await alice.get("/console/grants")).text


async def test_ten_thousand_grants_cost_the_same_queries_as_ten(
    browsers: Callable[[], Browser], app: FastAPI, clock: t.Clock
) -> None:
    center: Center = app.state.center
    operator = browsers()
    await operator.sign_in_operator()

    async def add(count: int, start: int) -> None:
        async with center.store.change() as work:
            for n in range(start, start + count):
                work.session.add(
                    Grant(
                        id=f"{n:032x}",
                        issued_by="center-admin",
                        grantee="alice",
                        scope="read",
                        role="editor",
                        vault="team",
                        chain=[f"{n:032x}"],
                        depth=1,
                        issuer_generation=0,
                        grantee_generation=1,
                        created=work.now,
                        expires=work.now + 3600,
                    )
                )

    statements: list[str] = []
    # Only the page's own statements count: the app's background loops (failover, moves,
    # pruning) run in tasks started before the page was asked for, outside this context.
    asking = contextvars.ContextVar("asking", default=False)

    def count(*args: object) -> None:
        if asking.get():
            statements.append(str(args[2]))

    async def queries_for_a_page() -> int:
        statements.clear()
        event.listen(center.store.engine.sync_engine, "before_cursor_execute", count)
        token = asking.set(True)
        try:
            page = await operator.get("/console/grants")
        finally:
            asking.reset(token)
            event.remove(center.store.engine.sync_engine, "before_cursor_execute", count)
        assert page.status_code == 200
        assert statements, "the listener saw none of the page's statements"
        return len(statements)

    await add(10, 0)
    few = await queries_for_a_page()
    await add(9_990, 10)
    many = await queries_for_a_page()
    assert many == few
    page = await operator.get("/console/grants")
    assert "10000 delegation tree(s)" in page.text
    assert page.text.count('class="grant"') == 50
    assert (await operator.get("/console/grants", offset="9950")).text.count('class="grant"') == 50


async def test_a_member_mints_a_token_shown_once_and_revokes_it(
    browsers: Callable[[], Browser], app: FastAPI
) -> None:
    alice = browsers()
    await alice.sign_in()
    await alice.get("/console/tokens")
    minted = await alice.post(
        "/console/tokens", scope="read", days="7", resource=t.RESOURCE, vaults="team"
    )
    assert minted.status_code == 200, minted.text
    token = re.search(r'id="token" value="([^"]+)"', minted.text)
    assert token is not None
    verifier = None
    async with t.client(app) as http:
        verifier = await t.verifier(http, t.Clock())
    claims = verifier.verify(token.group(1))
    assert claims.principal == "alice"
    listing = await alice.get("/console/tokens")
    assert claims.jti in listing.text
    assert token.group(1) not in listing.text
    done = await alice.post(f"/console/tokens/{claims.jti}/revoke")
    assert done.status_code == 303
    async with t.client(app) as http:
        tokens = (await http.get("/v1/tokens", headers=t.ADMIN)).json()["tokens"]
        exported = await http.get("/v1/audit", headers=t.ADMIN)
    assert next(x for x in tokens if x["jti"] == claims.jti)["revoked"] is not None
    actions = [json.loads(x) for x in exported.text.splitlines()]
    issued = [r for r in actions if r["action"] == "token.issue"][-1]
    assert (issued["actor"], issued["channel"]) == ("alice", "console")


async def test_the_operator_cannot_mint_as_the_api_refuses_it(
    browsers: Callable[[], Browser],
) -> None:
    operator = browsers()
    await operator.sign_in_operator()
    await operator.get("/console/tokens")
    refused = await operator.post("/console/tokens", scope="read", resource=t.RESOURCE)
    assert refused.status_code == 401
    assert "the admin token is not accepted here" in refused.text


async def test_a_member_cannot_revoke_anothers_token(
    browsers: Callable[[], Browser], app: FastAPI
) -> None:
    bob, alice = browsers(), browsers()
    await bob.sign_in("bob")
    await bob.get("/console/tokens")
    minted = await bob.post("/console/tokens", scope="read", resource=t.RESOURCE)
    jti = re.search(r"by its jti <code>([^<]+)</code>", minted.text)
    assert jti is not None
    await alice.sign_in()
    assert jti.group(1) not in (await alice.get("/console/tokens")).text
    refused = await alice.post(f"/console/tokens/{jti.group(1)}/revoke")
    t.refused(refused, 404, None, "no token")


async def test_a_member_lists_the_grants_it_received(app: FastAPI) -> None:
    """Through the API as on the page: a reader or editor sees grants made out to it."""
    async with t.client(app) as http:
        alice = (
            await http.patch("/v1/members/alice", json={"rotate_credential": True}, headers=t.ADMIN)
        ).json()
        received = await issue(app, grantee="alice", scope="read")
        listed = await http.get("/v1/grants", headers=t.bearer(alice["credential"]))
    assert [g["id"] for g in listed.json()["grants"]] == [received["id"]]


async def test_the_tokens_page_shows_fifty_newest_first_and_pages_on(
    browsers: Callable[[], Browser], app: FastAPI, clock: t.Clock
) -> None:
    async with t.client(app) as http:
        credential = (
            await http.patch("/v1/members/alice", json={"rotate_credential": True}, headers=t.ADMIN)
        ).json()["credential"]
        jtis = []
        for _ in range(55):
            clock.advance(1)
            minted = await http.post(
                "/v1/tokens", json={"resource": [t.RESOURCE]}, headers=t.bearer(credential)
            )
            jtis.append(minted.json()["jti"])
    alice = browsers()
    await alice.sign_in()
    first = await alice.get("/console/tokens")
    shown = re.findall(r'<td data-label="Token \(jti\)" class="mono">([^<]+)</td>', first.text)
    assert shown == jtis[::-1][:50]
    assert "1–50 of 55" in first.text
    rest = await alice.get("/console/tokens", offset="50")
    assert (
        re.findall(r'<td data-label="Token \(jti\)" class="mono">([^<]+)</td>', rest.text)
        == jtis[::-1][50:]
    )
