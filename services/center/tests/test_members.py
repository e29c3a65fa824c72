"""Members CRUD: the operator's admin token only, credentials shown once, generations kept."""

from __future__ import annotations

import hashlib

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from center import testing as t
from center.db import Member
from center.runtime import Center


def center_of(app: FastAPI) -> Center:
    center: Center = app.state.center
    return center


@pytest.mark.asyncio
async def test_a_new_member_gets_a_credential_shown_once(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/v1/members", json={"id": "alice", "vaults": ["team"]}, headers=t.ADMIN
    )
    assert response.status_code == 201
    assert response.headers["Cache-Control"] == "no-store"
    created = response.json()
    assert created["credential"].startswith("sbm_")
    assert (created["role"], created["scope"], created["generation"]) == ("reader", "read", 1)
    for later in (
        await client.get("/v1/members/alice", headers=t.ADMIN),
        await client.get("/v1/members", headers=t.ADMIN),
    ):
        assert created["credential"] not in later.text
        assert "credential" not in later.text


@pytest.mark.asyncio
async def test_only_the_credential_digest_is_stored(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    credential = await t.add_member(client, "alice")
    async with center_of(app).store.read() as session:
        row = await session.scalar(select(Member).where(Member.id == "alice"))
    assert row is not None
    assert row.credential_hash == hashlib.sha256(credential.encode()).hexdigest()
    assert credential not in repr(row.__dict__)


@pytest.mark.asyncio
async def test_member_crud_needs_the_admin_token(client: httpx.AsyncClient) -> None:
    member = await t.add_member(client, "alice", role="owner", scope="allow_all")
    body = {"id": "bob", "vaults": ["team"]}
    for method, path, payload in [
        ("GET", "/v1/members", None),
        ("POST", "/v1/members", body),
        ("GET", "/v1/members/alice", None),
        ("PATCH", "/v1/members/alice", {"scope": "read"}),
        ("DELETE", "/v1/members/alice", None),
    ]:
        anonymous = await client.request(method, path, json=payload)
        t.refused(anonymous, 401, "unauthorized", "send Authorization:")
        as_member = await client.request(method, path, json=payload, headers=t.bearer(member))
        t.refused(as_member, 403, "forbidden", "only the operator's admin token may do this")


@pytest.mark.asyncio
async def test_duplicate_and_reserved_ids_are_refused(client: httpx.AsyncClient) -> None:
    await t.add_member(client, "alice")
    again = await client.post("/v1/members", json={"id": "alice", "vaults": ["x"]}, headers=t.ADMIN)
    t.refused(again, 409, "exists", "member 'alice' already exists")
    reserved = await client.post(
        "/v1/members", json={"id": "center-admin", "vaults": ["x"]}, headers=t.ADMIN
    )
    assert reserved.status_code == 400
    assert "reserved" in reserved.json()["error"]["message"]


@pytest.mark.asyncio
async def test_a_scope_above_the_role_cap_is_refused(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/v1/members",
        json={"id": "bob", "vaults": ["team"], "role": "reader", "scope": "read_write"},
        headers=t.ADMIN,
    )
    assert response.status_code == 400
    assert "cap of role reader" in response.json()["error"]["message"]


@pytest.mark.asyncio
async def test_a_member_may_see_every_vault(client: httpx.AsyncClient) -> None:
    await t.add_member(client, "root", ["*"], role="owner", scope="allow_all")
    assert (await client.get("/v1/members/root", headers=t.ADMIN)).json()["vaults"] == ["*"]
    mixed = await client.post(
        "/v1/members", json={"id": "m", "vaults": ["*", "team"]}, headers=t.ADMIN
    )
    t.refused(mixed, 400, "invalid_argument", "vaults: name at least one vault")


@pytest.mark.asyncio
async def test_changing_authority_bumps_the_generation(client: httpx.AsyncClient) -> None:
    await t.add_member(client, "alice", role="editor", scope="read")
    changed = await client.patch("/v1/members/alice", json={"scope": "read_write"}, headers=t.ADMIN)
    assert changed.status_code == 200
    assert (changed.json()["scope"], changed.json()["generation"]) == ("read_write", 2)
    same = await client.patch("/v1/members/alice", json={"scope": "rw"}, headers=t.ADMIN)
    assert same.json()["generation"] == 2


@pytest.mark.asyncio
async def test_raising_the_scope_past_the_role_says_what_to_pass(client: httpx.AsyncClient) -> None:
    await t.add_member(client, "alice")
    response = await client.patch("/v1/members/alice", json={"scope": "rw"}, headers=t.ADMIN)
    assert response.status_code == 400
    assert "role reader" in response.json()["error"]["message"]


@pytest.mark.asyncio
async def test_rotating_the_credential_kills_the_old_one(client: httpx.AsyncClient) -> None:
    old = await t.add_member(client, "alice")
    rotated = await client.patch(
        "/v1/members/alice", json={"rotate_credential": True}, headers=t.ADMIN
    )
    new = rotated.json()["credential"]
    assert new != old
    assert rotated.json()["generation"] == 2
    t.refused(
        await client.get("/v1/session", headers=t.bearer(old)),
        401,
        "unauthorized",
        "unknown or revoked credential",
    )
    assert (await client.get("/v1/session", headers=t.bearer(new))).status_code == 200


@pytest.mark.asyncio
async def test_a_removed_member_keeps_its_generation_when_recreated(
    client: httpx.AsyncClient,
) -> None:
    old = await t.add_member(client, "alice")
    removed = await client.delete("/v1/members/alice", headers=t.ADMIN)
    assert removed.json()["generation"] == 2
    t.refused(
        await client.get("/v1/session", headers=t.bearer(old)),
        401,
        "unauthorized",
        "unknown or revoked credential",
    )
    t.refused(
        await client.get("/v1/members/alice", headers=t.ADMIN),
        404,
        "not_found",
        "no member 'alice'",
    )
    await t.add_member(client, "alice")
    assert (await client.get("/v1/members/alice", headers=t.ADMIN)).json()["generation"] == 2


@pytest.mark.asyncio
async def test_unknown_members_are_404(client: httpx.AsyncClient) -> None:
    for method in ("GET", "PATCH", "DELETE"):
        response = await client.request(method, "/v1/members/ghost", json={}, headers=t.ADMIN)
        t.refused(response, 404, "not_found", "no member 'ghost'")


@pytest.mark.asyncio
async def test_a_password_is_stored_as_argon2id_only(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    password = "correct horse battery staple"
    await t.add_member(client, "alice", password=password)
    listed = (await client.get("/v1/members/alice", headers=t.ADMIN)).json()
    assert listed["password"] is True
    async with center_of(app).store.read() as session:
        row = await session.get(Member, "alice")
    assert row is not None
    assert row.password_hash is not None
    assert row.password_hash.startswith("$argon2id$v=19$m=65536,t=3,p=1$")
    assert await center_of(app).passwords.verify(row.password_hash, password)


@pytest.mark.asyncio
async def test_a_short_password_is_refused_without_echo(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/v1/members", json={"id": "a", "vaults": ["t"], "password": "TELLTALE"}, headers=t.ADMIN
    )
    assert response.status_code == 400
    assert "TELLTALE" not in response.text


@pytest.mark.asyncio
async def test_member_changes_are_audited(client: httpx.AsyncClient) -> None:
    await t.add_member(client, "alice")
    await client.patch("/v1/members/alice", json={"role": "admin"}, headers=t.ADMIN)
    await client.delete("/v1/members/alice", headers=t.ADMIN)
    lines = (await client.get("/v1/audit", headers=t.ADMIN)).text.splitlines()
    actions = [line.split('"action":"')[1].split('"')[0] for line in lines]
    assert actions[-3:] == ["member.add", "member.set", "member.remove"]
