"""The console's requests page: a member asks, an approver narrows and approves or
rejects with a reason; the page refuses what the API refuses, with its words."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable

import httpx
import pytest
import pytest_asyncio
from fastapi import FastAPI

from center import testing as t
from center.config import Settings
from center.console.testing import Browser
from center.oauth import testing as o

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


async def api(
    app: FastAPI, method: str, path: str, credential: str = t.ADMIN_TOKEN, **kw: object
) -> httpx.Response:
    async with t.client(app) as http:
        return await http.request(method, path, headers=t.bearer(credential), **kw)  # type: ignore[arg-type]


async def records(app: FastAPI, action: str) -> list[dict[str, object]]:
    exported = await api(app, "GET", "/v1/audit")
    return [r for line in exported.text.splitlines() if (r := json.loads(line))["action"] == action]


async def ask(browser: Browser, **form: str) -> str:
    await browser.get("/console/requests")
    made = await browser.post(
        "/console/requests", **{"vault": "team", "scope": "read_write", "minutes": "30", **form}
    )
    assert made.status_code == 303, made.text
    page = await browser.get("/console/requests")
    return page.text.split('action="/console/requests/')[1].split("/")[0]


async def test_a_member_asks_and_the_operator_narrows_and_approves(
    browsers: Callable[[], Browser], app: FastAPI
) -> None:
    alice, operator = browsers(), browsers()
    await alice.sign_in()
    request_id = await ask(alice, reason="incident 42")
    await operator.sign_in_operator()
    pending = await operator.get("/console/requests")
    assert "alice asks for <strong>read_write</strong> in <strong>team</strong>" in pending.text
    assert "incident 42" in pending.text
    approved = await operator.post(
        f"/console/requests/{request_id}/approve", scope="read", minutes="10"
    )
    assert approved.status_code == 303
    listed = (await api(app, "GET", "/v1/requests")).json()["requests"]
    row = next(r for r in listed if r["id"] == request_id)
    assert (row["state"], row["scope"], row["minutes"]) == ("approved", "read", 10)
    assert (row["asked_scope"], row["asked_minutes"]) == ("read_write", 30)
    record = (await records(app, "request.approve"))[-1]
    assert record["channel"] == "console"
    assert record["scope"] == "read"
    assert "narrowed from read_write for 30 min to read for 10 min" in str(record["reason"])
    assert "request.create" in [r["action"] for r in await records(app, "request.create")]


async def test_a_second_decision_is_refused_with_the_apis_message(
    browsers: Callable[[], Browser], app: FastAPI
) -> None:
    alice, operator = browsers(), browsers()
    await alice.sign_in()
    request_id = await ask(alice)
    await operator.sign_in_operator()
    await operator.get("/console/requests")
    token = operator.csrf
    assert (
        await operator.post(f"/console/requests/{request_id}/approve", csrf=token)
    ).status_code == 303
    from_api = await api(app, "POST", f"/v1/requests/{request_id}/approve")
    assert from_api.status_code == 409
    await operator.get("/console/requests")
    again = await operator.post(f"/console/requests/{request_id}/reject", reason="late")
    assert again.status_code == 409
    assert from_api.json()["error"]["message"] in again.text


async def test_an_expired_request_is_refused_like_the_cli_does(
    browsers: Callable[[], Browser], app: FastAPI, clock: t.Clock
) -> None:
    alice, bob = browsers(), browsers()
    await alice.sign_in()
    request_id = await ask(alice)
    await bob.sign_in("bob")
    await bob.get("/console/requests")
    clock.advance(8 * 86400)
    await alice.sign_in()
    await bob.sign_in("bob")
    page = await bob.get("/console/requests")
    assert "expired" in page.text
    refused = await bob.post(f"/console/requests/{request_id}/approve")
    assert refused.status_code == 409
    assert f"request {request_id} is already expired" in refused.text


async def test_a_rejection_carries_its_reason_to_the_requester(
    browsers: Callable[[], Browser], app: FastAPI
) -> None:
    alice, bob = browsers(), browsers()
    await alice.sign_in()
    request_id = await ask(alice)
    await bob.sign_in("bob")
    await bob.get("/console/requests")
    assert (
        await bob.post(f"/console/requests/{request_id}/reject", reason="use the ops vault")
    ).status_code == 303
    mine = await alice.get("/console/requests")
    assert "use the ops vault" in mine.text
    assert (await records(app, "request.reject"))[-1]["reason"] == "use the ops vault"


async def test_an_approver_may_not_widen_what_was_asked(
    browsers: Callable[[], Browser],
) -> None:
    alice, bob = browsers(), browsers()
    await alice.sign_in()
    request_id = await ask(alice, scope="read", minutes="10")
    await bob.sign_in("bob")
    await bob.get("/console/requests")
    wider = await bob.post(f"/console/requests/{request_id}/approve", scope="read_write")
    assert wider.status_code == 403
    assert "more than the read asked for" in wider.text
    await bob.get("/console/requests")
    longer = await bob.post(f"/console/requests/{request_id}/approve", minutes="20")
    t.refused(longer, 403, None, "approve 1 to 10 minutes, the most that was asked for")


async def test_a_member_sees_and_decides_only_what_the_api_lets_it(
    browsers: Callable[[], Browser],
) -> None:
    alice, carol = browsers(), browsers()
    await alice.sign_in()
    request_id = await ask(alice)
    await carol.sign_in("carol")
    page = await carol.get("/console/requests")
    assert request_id not in page.text
    for verb in ("approve", "reject", "cancel"):
        await carol.get("/console/requests")
        refused = await carol.post(f"/console/requests/{request_id}/{verb}")
        t.refused(refused, 404, None, "no request")
    await alice.get("/console/requests")
    own = await alice.post(f"/console/requests/{request_id}/approve")
    assert own.status_code == 403
    assert "you cannot decide your own request" in own.text


async def test_the_requester_withdraws_its_request(browsers: Callable[[], Browser]) -> None:
    alice = browsers()
    await alice.sign_in()
    request_id = await ask(alice)
    await alice.get("/console/requests")
    assert (await alice.post(f"/console/requests/{request_id}/cancel")).status_code == 303
    assert "cancelled" in (await alice.get("/console/requests")).text


async def test_the_api_approves_narrower_too(app: FastAPI) -> None:
    async with t.client(app) as http:
        alice = await t.add_member(http, "dave", role="editor", scope="read_write")
        made = await http.post(
            "/v1/requests",
            json={"vault": "team", "scope": "read_write", "minutes": 20},
            headers=t.bearer(alice),
        )
        request_id = made.json()["id"]
        approved = await http.post(
            f"/v1/requests/{request_id}/approve",
            json={"scope": "read", "minutes": 5},
            headers=t.ADMIN,
        )
    assert approved.status_code == 200, approved.text
    assert (approved.json()["scope"], approved.json()["minutes"]) == ("read", 5)


async def test_a_member_asks_for_folders_and_the_approver_narrows_them(
    browsers: Callable[[], Browser], app: FastAPI
) -> None:
    alice, operator = browsers(), browsers()
    await alice.sign_in()
    request_id = await ask(alice, read_paths="team:projects/acme")
    assert await operator.sign_in_operator()
    page = await operator.get("/console/requests")
    assert 'Path rules asked for: <span class="small">team: read projects/acme' in page.text
    assert 'name="read_paths" value="team:projects/acme"' in page.text
    wider = await operator.post(
        f"/console/requests/{request_id}/approve", read_paths="team:projects"
    )
    t.refused(wider, 403, None, "reach further than the rules asked for")
    await operator.get("/console/requests")
    approved = await operator.post(
        f"/console/requests/{request_id}/approve",
        scope="read_write",
        read_paths="team:projects/acme",
        write_paths="team:projects/acme/inbox",
    )
    assert approved.status_code == 303, approved.text
    done = (await operator.get("/console/requests")).text
    assert "(asked: team: read projects/acme; write projects/acme)" in done
    [record] = await records(app, "request.approve")
    assert json.loads(str(record["paths"]))["team"]["write"] == ["projects/acme/inbox"]


async def test_a_member_with_only_a_password_claims_its_approved_request_in_the_console(
    browsers: Callable[[], Browser], app: FastAPI
) -> None:
    """The member never saw a credential: the console claims, and shows the token once."""
    resource = "https://node-b.test/mcp"
    async with t.client(app) as http:
        node = await o.add_node(http, resource=resource, node_id="node-b")
        beat = await http.post(
            "/v1/nodes/heartbeat", json={"vaults": ["team"]}, headers=t.bearer(node)
        )
        assert beat.status_code == 200, beat.text
    alice, operator = browsers(), browsers()
    await alice.sign_in()
    request_id = await ask(alice, scope="read")
    await operator.sign_in_operator()
    await operator.get("/console/requests")
    assert (await operator.post(f"/console/requests/{request_id}/approve")).status_code == 303
    listed = await alice.get("/console/requests")
    assert f'action="/console/requests/{request_id}/claim"' in listed.text
    assert "secondbrain-center request claim" not in listed.text
    claimed = await alice.post(f"/console/requests/{request_id}/claim")
    assert claimed.status_code == 200, claimed.text
    assert claimed.headers["cache-control"] == "no-store"
    token = claimed.text.split('id="token" value="')[1].split('"')[0]
    grant = (await api(app, "GET", "/v1/grants")).json()["grants"]
    assert [(g["grantee"], g["request_id"], g["scope"]) for g in grant] == [
        ("alice", request_id, "read")
    ]
    assert grant[0]["id"] in claimed.text
    assert resource in claimed.text
    assert token.count(".") == 2  # a JWS
    again = await alice.post(f"/console/requests/{request_id}/claim")
    assert "only an approved one is claimed" in again.text
    assert token not in again.text
    stolen = await operator.post(f"/console/requests/{request_id}/claim")
    assert token not in stolen.text
