"""A grant token authenticates its holder at the center (docs/design.md#grants), on both databases:
it may delegate under its own grant, ask for a grant, list its subtree and read its
session — nothing else (403) — and a revoked, expired, forged or non-grant token is 401."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from center import testing as t
from tickets import SigningKey, sign
from tickets.keys import b64url_decode


async def grant(client: httpx.AsyncClient, headers: dict[str, str], **body: Any) -> dict[str, Any]:
    response = await client.post(
        "/v1/grants", json={"vault": "team", "resource": [t.RESOURCE], **body}, headers=headers
    )
    assert response.status_code == 201, response.text
    issued: dict[str, Any] = response.json()
    return issued


async def delegate(client: httpx.AsyncClient, token: str, **body: Any) -> httpx.Response:
    return await client.post(
        "/v1/grants",
        json={"vault": "team", "resource": [t.RESOURCE], **body},
        headers=t.bearer(token),
    )


@pytest.mark.asyncio
async def test_an_anonymous_grant_delegates_under_itself(
    client: httpx.AsyncClient, clock: t.Clock
) -> None:
    root = await grant(client, t.ADMIN, scope="all", minutes=30)
    child = await delegate(client, root["token"], scope="rw", minutes=10)
    assert child.status_code == 201, child.text
    made = child.json()
    assert (made["parent"], made["depth"], made["chain"]) == (
        root["id"],
        2,
        [root["id"], made["id"]],
    )
    assert made["issued_by"] == root["grantee"]
    ticket = (await t.verifier(client, clock)).verify(made["token"])
    assert ticket.chain == (root["id"], made["id"])
    lines = (await client.get("/v1/audit", headers=t.ADMIN)).text.splitlines()
    record = json.loads(lines[-1])
    assert (record["action"], record["via_grant"], record["issued_by"]) == (
        "grant.issue",
        root["id"],
        root["grantee"],
    )
    assert root["token"] not in "\n".join(lines)


@pytest.mark.asyncio
async def test_a_delegation_never_exceeds_its_grant(client: httpx.AsyncClient) -> None:
    root = await grant(client, t.ADMIN, scope="rwd", minutes=10)
    wider = await delegate(client, root["token"], scope="all")
    t.refused(wider, 403, "forbidden", "requested permissions exceed the issuer's: manage not held")
    longer = await delegate(client, root["token"], minutes=11)
    t.refused(longer, 403, "forbidden", "the parent grant ends in 600 s")
    elsewhere = await delegate(client, root["token"], vault="ops")
    t.refused(
        elsewhere, 403, "forbidden", "only an admin or owner of vault 'ops' may issue grants in it"
    )
    other = await grant(client, t.ADMIN, scope="rwd", minutes=10)
    adopted = await delegate(client, root["token"], parent=other["id"], minutes=5)
    t.refused(adopted, 403, "forbidden", "with a grant token you delegate under grant")
    child = (await delegate(client, root["token"], minutes=5)).json()
    too_deep = await delegate(client, child["token"], minutes=1)
    assert too_deep.status_code == 403
    assert "depth" in too_deep.json()["error"]["message"]


@pytest.mark.asyncio
async def test_only_a_managers_grant_delegates(client: httpx.AsyncClient) -> None:
    await t.add_member(client, "ada", role="admin", scope="rwd")
    await t.add_member(client, "ed", role="editor", scope="rw")
    held = await grant(client, t.ADMIN, scope="rw", grantee="ada")
    passed_on = await delegate(client, held["token"], scope="read", grantee="ed", minutes=5)
    assert passed_on.status_code == 201, passed_on.text
    assert (passed_on.json()["issued_by"], passed_on.json()["grantee"]) == ("ada", "ed")
    editor = await grant(client, t.ADMIN, scope="rw", grantee="ed")
    refused = await delegate(client, editor["token"], scope="read", minutes=5)
    t.refused(
        refused, 403, "forbidden", "only an admin or owner of vault 'team' may issue grants in it"
    )


@pytest.mark.asyncio
async def test_a_grant_token_shows_its_session(client: httpx.AsyncClient, clock: t.Clock) -> None:
    await t.add_member(client, "ada", role="admin", scope="rwd")
    held = await grant(client, t.ADMIN, scope="read", grantee="ada", minutes=20)
    session = (await client.get("/v1/session", headers=t.bearer(held["token"]))).json()
    assert (session["kind"], session["grant"], session["principal"]) == ("grant", held["id"], "ada")
    assert (session["scope"], session["vaults"]) == ("read", ["team"])
    assert session["expires_at"] == int(clock()) + 1200
    assert (session["can_read"], session["can_write"]) == (True, False)


@pytest.mark.asyncio
async def test_a_named_grant_may_ask_for_a_grant(client: httpx.AsyncClient) -> None:
    await t.add_member(client, "ed", role="editor", scope="rw")
    held = await grant(client, t.ADMIN, scope="read", grantee="ed")
    asked = await client.post(
        "/v1/requests", json={"vault": "team", "scope": "rw"}, headers=t.bearer(held["token"])
    )
    assert asked.status_code == 201, asked.text
    record = json.loads((await client.get("/v1/audit", headers=t.ADMIN)).text.splitlines()[-1])
    assert (record["action"], record["actor"], record["via_grant"]) == (
        "request.create",
        "ed",
        held["id"],
    )
    anonymous = await grant(client, t.ADMIN, scope="read")
    refused = await client.post(
        "/v1/requests", json={"vault": "team"}, headers=t.bearer(anonymous["token"])
    )
    t.refused(refused, 403, "forbidden", "an anonymous grant cannot ask for grants")


@pytest.mark.asyncio
async def test_a_grant_token_cannot_decide_claim_cancel_or_mint(
    client: httpx.AsyncClient,
) -> None:
    owner = await t.add_member(client, "olga", role="owner", scope="all")
    editor = await t.add_member(client, "ed", role="editor", scope="rw")
    asked = await client.post("/v1/requests", json={"vault": "team"}, headers=t.bearer(editor))
    request_id = asked.json()["id"]
    olga = await grant(client, t.bearer(owner), scope="rwd")
    ed = await grant(client, t.ADMIN, scope="read", grantee="ed")
    calls = [
        ("POST", f"/v1/requests/{request_id}/approve", olga),
        ("POST", f"/v1/requests/{request_id}/reject", olga),
        ("POST", f"/v1/requests/{request_id}/cancel", ed),
        ("POST", f"/v1/requests/{request_id}/claim", ed),
        ("POST", "/v1/tokens", olga),
        ("GET", "/v1/tokens", olga),
        ("GET", "/v1/members", olga),
        ("GET", "/v1/audit", olga),
        ("GET", "/v1/vaults", olga),
    ]
    for method, path, held in calls:
        response = await client.request(method, path, headers=t.bearer(held["token"]), json={})
        assert response.status_code == 403, (path, response.text)
        assert "grant token may only" in response.json()["error"]["message"]
    pending = await client.get("/v1/requests", headers=t.ADMIN)
    assert pending.json()["requests"][0]["state"] == "pending"


@pytest.mark.asyncio
async def test_a_grant_token_sees_and_revokes_only_its_subtree(client: httpx.AsyncClient) -> None:
    root = await grant(client, t.ADMIN, scope="rwd", minutes=30)
    sibling = await grant(client, t.ADMIN, scope="rwd", minutes=30)
    child = (await delegate(client, root["token"], minutes=10)).json()
    listed = await client.get("/v1/grants", headers=t.bearer(root["token"]))
    assert {g["id"] for g in listed.json()["grants"]} == {root["id"], child["id"]}
    outside = await client.delete(f"/v1/grants/{sibling['id']}", headers=t.bearer(root["token"]))
    t.refused(outside, 404, "not_found", "no grant")
    revoked = await client.delete(f"/v1/grants/{child['id']}", headers=t.bearer(root["token"]))
    assert revoked.json() == {"revoked": [child["id"]]}


@pytest.mark.asyncio
async def test_a_dead_or_foreign_token_is_401(client: httpx.AsyncClient, clock: t.Clock) -> None:
    member = await t.add_member(client, "ada", role="admin", scope="rwd")
    revoked = await grant(client, t.ADMIN, scope="read", minutes=30)
    await client.delete(f"/v1/grants/{revoked['id']}", headers=t.ADMIN)
    agent = await client.post(
        "/v1/tokens", json={"resource": [t.RESOURCE]}, headers=t.bearer(member)
    )
    live = await grant(client, t.ADMIN, scope="read", minutes=30)
    header, payload, signature = live["token"].split(".")
    forged_payload = json.loads(b64url_decode(payload))
    forged = sign(
        {**forged_payload, "scope": "read write delete manage"}, SigningKey.generate(), typ="at+jwt"
    )
    tampered = f"{header}.{payload}.{signature[:-4]}AAAA"
    for token in (revoked["token"], agent.json()["token"], forged, tampered, "a.b.c"):
        response = await client.get("/v1/session", headers=t.bearer(token))
        assert response.status_code == 401, response.text
        assert response.headers["WWW-Authenticate"] == "Bearer"
    clock.advance(30 * 60)
    expired = await client.get("/v1/session", headers=t.bearer(live["token"]))
    t.refused(expired, 401, "unauthorized", "unknown, expired or revoked grant token")


@pytest.mark.asyncio
async def test_a_membership_change_kills_the_members_grant_tokens(
    client: httpx.AsyncClient,
) -> None:
    await t.add_member(client, "ada", role="admin", scope="rwd")
    held = await grant(client, t.ADMIN, scope="read", grantee="ada")
    assert (await client.get("/v1/session", headers=t.bearer(held["token"]))).status_code == 200
    await client.patch("/v1/members/ada", json={"scope": "read"}, headers=t.ADMIN)
    gone = await client.get("/v1/session", headers=t.bearer(held["token"]))
    t.refused(gone, 401, "unauthorized", "unknown, expired or revoked grant token")
