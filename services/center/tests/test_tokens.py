"""Agent tokens: a member credential exchanged for a node token, narrowed, revocable by jti."""

from __future__ import annotations

import httpx
import pytest

from center import testing as t
from tickets import TokenError


async def mint(client: httpx.AsyncClient, credential: str, **body: object) -> httpx.Response:
    return await client.post(
        "/v1/tokens", json={"resource": [t.RESOURCE], **body}, headers=t.bearer(credential)
    )


@pytest.mark.asyncio
async def test_a_member_exchanges_its_credential_for_a_node_token(
    client: httpx.AsyncClient, clock: t.Clock
) -> None:
    credential = await t.add_member(client, "alice", ["team"], role="editor", scope="rw")
    response = await mint(client, credential)
    assert response.status_code == 201
    assert response.headers["Cache-Control"] == "no-store"
    minted = response.json()
    ticket = (await t.verifier(client, clock)).verify(minted["token"])
    assert ticket.principal == "alice"
    assert ticket.permissions == {"read", "write"}
    assert ticket.vaults == ("team",)
    assert ticket.kind == "agent"
    assert ticket.exp == int(clock()) + 3600
    assert credential not in minted["token"]


@pytest.mark.asyncio
async def test_a_token_may_be_narrower_than_the_member(
    client: httpx.AsyncClient, clock: t.Clock
) -> None:
    credential = await t.add_member(client, "alice", ["ops", "team"], role="admin", scope="rwd")
    minted = (await mint(client, credential, scope="read", vaults=["ops"], minutes=5)).json()
    ticket = (await t.verifier(client, clock)).verify(minted["token"])
    assert (ticket.permissions, ticket.vaults) == ({"read"}, ("ops",))
    assert ticket.exp - int(clock()) == 300


@pytest.mark.asyncio
async def test_a_token_never_exceeds_the_member(client: httpx.AsyncClient) -> None:
    credential = await t.add_member(client, "alice", ["team"], role="editor", scope="read")
    assert (await mint(client, credential, scope="rw")).status_code == 403
    assert (await mint(client, credential, vaults=["ops"])).status_code == 403
    assert (await mint(client, credential, vaults=["*"])).status_code == 403
    assert (await mint(client, credential, minutes=90 * 24 * 60 + 1)).status_code == 422


@pytest.mark.asyncio
async def test_a_token_needs_a_node_resource(client: httpx.AsyncClient) -> None:
    credential = await t.add_member(client, "alice")
    response = await client.post("/v1/tokens", json={}, headers=t.bearer(credential))
    assert response.status_code == 400
    assert "resource" in response.json()["error"]["message"]
    plain = await mint(client, credential, resource=["http://node.example.com/mcp"])
    assert plain.status_code == 400


@pytest.mark.asyncio
async def test_listing_tokens_shows_no_token_material(client: httpx.AsyncClient) -> None:
    alice = await t.add_member(client, "alice")
    bob = await t.add_member(client, "bob")
    minted = (await mint(client, alice)).json()
    await mint(client, bob)
    own = (await client.get("/v1/tokens", headers=t.bearer(alice))).json()["tokens"]
    assert [row["jti"] for row in own] == [minted["jti"]]
    everything = await client.get("/v1/tokens", headers=t.ADMIN)
    assert len(everything.json()["tokens"]) == 2
    assert minted["token"] not in everything.text


@pytest.mark.asyncio
async def test_a_revoked_token_is_refused_by_nodes(
    client: httpx.AsyncClient, clock: t.Clock
) -> None:
    alice = await t.add_member(client, "alice")
    minted = (await mint(client, alice)).json()
    other = (await mint(client, alice)).json()
    revoked = await client.delete(f"/v1/tokens/{minted['jti']}", headers=t.bearer(alice))
    assert revoked.status_code == 200
    verifier = await t.verifier(client, clock)
    with pytest.raises(TokenError) as refused:
        verifier.verify(minted["token"])
    assert refused.value.reason == "revoked"
    assert verifier.verify(other["token"]).jti == other["jti"]
    again = await client.delete(f"/v1/tokens/{minted['jti']}", headers=t.ADMIN)
    assert again.status_code == 409


@pytest.mark.asyncio
async def test_a_member_cannot_revoke_anothers_token(client: httpx.AsyncClient) -> None:
    alice = await t.add_member(client, "alice")
    bob = await t.add_member(client, "bob")
    minted = (await mint(client, alice)).json()
    response = await client.delete(f"/v1/tokens/{minted['jti']}", headers=t.bearer(bob))
    assert response.status_code == 404


@pytest.mark.asyncio
async def test_token_issue_is_audited_without_the_token(client: httpx.AsyncClient) -> None:
    alice = await t.add_member(client, "alice")
    minted = (await mint(client, alice)).json()
    audit = (await client.get("/v1/audit", headers=t.ADMIN)).text
    assert f'"object":"token:{minted["jti"]}"' in audit
    assert minted["token"] not in audit
    assert alice not in audit
