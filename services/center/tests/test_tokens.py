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
    t.refused(
        await mint(client, credential, scope="rw"),
        403,
        "forbidden",
        "requested permissions exceed the issuer's: write not held",
    )
    t.refused(
        await mint(client, credential, vaults=["ops"]), 403, "forbidden", "vault 'ops' is not yours"
    )
    t.refused(
        await mint(client, credential, vaults=["*"]),
        403,
        "forbidden",
        "you may not ask for every vault",
    )
    t.refused(
        await mint(client, credential, minutes=90 * 24 * 60 + 1),
        422,
        "invalid_request",
        "minutes: Input should be less than or equal to 129600",
    )


@pytest.mark.asyncio
async def test_a_token_needs_a_node_resource(client: httpx.AsyncClient) -> None:
    credential = await t.add_member(client, "alice")
    response = await client.post("/v1/tokens", json={}, headers=t.bearer(credential))
    assert response.status_code == 400
    assert response.json()["error"]["message"] == (
        "vault: no node reports vault 'team'; known vaults: none yet (start a node)"
    )
    plain = await mint(client, credential, resource=["http://node.example.com/mcp"])
    t.refused(plain, 400, "invalid_argument", "resource: plain http is only allowed on loopback")
    unknown = await mint(client, credential, resource=["https://evil.example.com/mcp"])
    assert unknown.status_code == 400
    assert unknown.json()["error"] == {
        "code": "invalid_target",
        "message": "resource: no registered node has the resource https://evil.example.com/mcp;"
        " registered nodes: none yet (register one with `node add`)",
    }


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
    t.refused(again, 409, "conflict", "is already revoked")


@pytest.mark.asyncio
async def test_a_member_cannot_revoke_anothers_token(client: httpx.AsyncClient) -> None:
    alice = await t.add_member(client, "alice")
    bob = await t.add_member(client, "bob")
    minted = (await mint(client, alice)).json()
    response = await client.delete(f"/v1/tokens/{minted['jti']}", headers=t.bearer(bob))
    t.refused(response, 404, "not_found", "no token")


@pytest.mark.asyncio
async def test_token_issue_is_audited_without_the_token(client: httpx.AsyncClient) -> None:
    alice = await t.add_member(client, "alice")
    minted = (await mint(client, alice)).json()
    audit = (await client.get("/v1/audit", headers=t.ADMIN)).text
    assert f'"object":"token:{minted["jti"]}"' in audit
    assert minted["token"] not in audit
    assert alice not in audit


# ---------------------------------------------------------------- for another member
# docs/design.md#tokens: an admin or owner mints agent tokens for a member, for clients that can
# only send a static header.


@pytest.mark.asyncio
async def test_an_admin_mints_a_token_for_a_member_of_its_vault(
    client: httpx.AsyncClient, clock: t.Clock
) -> None:
    admin = await t.add_member(client, "ada", ["team"], role="admin", scope="rwd")
    alice = await t.add_member(client, "alice", ["team", "ops"], role="editor", scope="rw")
    response = await mint(client, admin, member="alice", minutes=90 * 24 * 60)
    assert response.status_code == 201, response.text
    minted = response.json()
    ticket = (await t.verifier(client, clock)).verify(minted["token"])
    assert (ticket.principal, ticket.role, ticket.kind) == ("alice", "editor", "agent")
    assert ticket.permissions == {"read", "write"}
    assert ticket.vaults == ("team",)  # ada manages team, not ops
    # Both the member and its issuer see it and may revoke it; nobody else.
    for credential in (alice, admin):
        listed = (await client.get("/v1/tokens", headers=t.bearer(credential))).json()
        assert [row["jti"] for row in listed["tokens"]] == [minted["jti"]]
    audit = (await client.get("/v1/audit", headers=t.ADMIN)).text
    assert '"actor":"ada"' in audit
    assert '"subject":"alice"' in audit
    assert minted["token"] not in audit


@pytest.mark.asyncio
async def test_a_token_for_another_member_never_exceeds_either_of_them(
    client: httpx.AsyncClient, clock: t.Clock
) -> None:
    admin = await t.add_member(client, "ada", ["team"], role="admin", scope="read")
    await t.add_member(client, "olga", ["team"], role="owner", scope="allow_all")
    minted = (await mint(client, admin, member="olga")).json()
    ticket = (await t.verifier(client, clock)).verify(minted["token"])
    assert ticket.permissions == {"read"}  # olga holds more; ada cannot hand it out
    t.refused(
        await mint(client, admin, member="olga", scope="rw"),
        403,
        "forbidden",
        "requested permissions exceed the issuer's: write not held",
    )
    t.refused(
        await mint(client, admin, member="olga", vaults=["ops"]),
        403,
        "forbidden",
        "vault 'ops' is not one you manage and member 'olga' holds",
    )
    t.refused(
        await mint(client, admin, member="olga", vaults=["*"]),
        403,
        "forbidden",
        "name the vaults: every vault is more than you both hold",
    )


@pytest.mark.asyncio
async def test_only_admins_and_owners_mint_for_others(client: httpx.AsyncClient) -> None:
    editor = await t.add_member(client, "eve", ["team"], role="editor", scope="rw")
    admin = await t.add_member(client, "ada", ["ops"], role="admin", scope="rwd")
    await t.add_member(client, "alice", ["team"])
    t.refused(
        await mint(client, editor, member="alice"),
        403,
        "forbidden",
        "only an admin or owner may mint a token for another member",
    )
    t.refused(
        await mint(client, admin, member="alice"),
        403,
        "forbidden",
        "you manage none of the vaults of member 'alice'",
    )  # not its vault
    t.refused(await mint(client, admin, member="nobody"), 404, "not_found", "no member 'nobody'")
    operator = await client.post(
        "/v1/tokens", json={"resource": [t.RESOURCE], "member": "alice"}, headers=t.ADMIN
    )
    t.refused(operator, 401, "unauthorized", "the admin token is not accepted here")


@pytest.mark.parametrize("change", ["demote", "remove"])
@pytest.mark.asyncio
async def test_tokens_minted_for_others_die_with_their_issuers_authority(
    client: httpx.AsyncClient, clock: t.Clock, change: str
) -> None:
    admin = await t.add_member(client, "ada", ["team"], role="admin", scope="rwd")
    await t.add_member(client, "alice", ["team"], role="editor", scope="rw")
    for_alice = (await mint(client, admin, member="alice")).json()
    own = (await mint(client, admin)).json()
    if change == "demote":
        patched = await client.patch(
            "/v1/members/ada", json={"role": "reader", "scope": "read"}, headers=t.ADMIN
        )
        assert patched.status_code == 200
    else:
        assert (await client.delete("/v1/members/ada", headers=t.ADMIN)).status_code == 200
    verifier = await t.verifier(client, clock)
    with pytest.raises(TokenError) as refused:
        verifier.verify(for_alice["token"])
    assert refused.value.reason == "revoked"
    with pytest.raises(TokenError) as own_refused:
        verifier.verify(own["token"])
    assert own_refused.value.reason == "generation"


@pytest.mark.asyncio
async def test_every_vault_passes_on_only_when_both_hold_every_vault(
    client: httpx.AsyncClient, clock: t.Clock
) -> None:
    owner = await t.add_member(client, "olga", ["*"], role="owner", scope="allow_all")
    admin = await t.add_member(client, "ada", ["team"], role="admin", scope="rwd")
    await t.add_member(client, "wide", ["*"], role="editor", scope="rw")
    verifier = await t.verifier(client, clock)
    from_owner = (await mint(client, owner, member="wide")).json()
    assert verifier.verify(from_owner["token"]).vaults == ("*",)
    from_admin = (await mint(client, admin, member="wide")).json()
    assert verifier.verify(from_admin["token"]).vaults == ("team",)
