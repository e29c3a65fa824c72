"""The OAuth 2.1 flow end to end: metadata, registration, the login page, code, tokens,
refresh — over real HTTP against a center on loopback, then verified as a node would."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import pytest_asyncio
from authlib.oauth2.rfc8414 import AuthorizationServerMetadata  # type: ignore[import-untyped]
from fastapi import FastAPI

from center import testing as t
from center.config import Settings
from center.oauth import testing as o
from tickets import KeySet, RevocationState, TokenError, Verifier


async def node_verifier(http: httpx.AsyncClient, audience: str = t.RESOURCE) -> Verifier:
    """A node's Verifier against the live center (real clock)."""
    keys = KeySet.from_jwks((await http.get("/.well-known/jwks.json")).json())
    state = RevocationState()
    snapshot = (await http.get("/v1/revocations")).json()["snapshot"]
    state.accept(snapshot, keys, issuer=t.ISSUER, now=time.time())
    return Verifier(keys=keys, issuer=t.ISSUER, audience=audience, revocation=state)


@pytest.mark.asyncio
async def test_the_whole_flow_over_real_http(server: str) -> None:
    async with httpx.AsyncClient(base_url=server, timeout=30) as http:
        await o.add_node(http)
        await o.add_member(http, email="Alice@Example.org")
        metadata = (await http.get("/.well-known/oauth-authorization-server")).json()
        assert metadata["code_challenge_methods_supported"] == ["S256"]
        assert metadata["token_endpoint"] == f"{t.ISSUER}/token"

        client_id = await o.register(http)
        proof = o.pkce()
        params = o.authorize_params(client_id, proof, state="the-state")
        page = await http.get("/authorize", params=params)
        assert page.status_code == 200
        assert "Test Client" in page.text
        form = o.login_form(page)
        assert form.action.startswith(f"{server}/authorize?")
        posted = await http.post(
            form.action,
            data={"username": "alice@example.org", "password": o.PASSWORD, "csrf": form.csrf},
        )
        assert posted.status_code == 200
        assert "Allow access to your vaults?" in posted.text
        allowed = await o.answer_consent(http, posted)
        back = o.redirect_params(allowed)
        assert allowed.headers["location"].startswith(o.REDIRECT + "?")
        assert back["state"] == "the-state"
        assert back["iss"] == t.ISSUER

        issued = await o.exchange(http, client_id, back["code"], proof, redirect_uri=o.REDIRECT)
        assert issued.status_code == 200, issued.text
        assert issued.headers["cache-control"] == "no-store"
        tokens = issued.json()
        assert tokens["token_type"] == "Bearer"
        assert tokens["expires_in"] == 3600
        assert tokens["scope"] == "read write"

        verifier = await node_verifier(http)
        ticket = verifier.verify(tokens["access_token"])
        assert (ticket.principal, ticket.client_id, ticket.role) == ("alice", client_id, "editor")
        assert ticket.vaults == ("team",)
        assert ticket.granted == {"read", "write"}

        renewed = await o.refresh(http, client_id, tokens["refresh_token"])
        assert renewed.status_code == 200, renewed.text
        fresh = renewed.json()
        assert fresh["refresh_token"] != tokens["refresh_token"]
        assert verifier.verify(fresh["access_token"]).principal == "alice"
        again = await o.refresh(http, client_id, fresh["refresh_token"])
        assert again.status_code == 200, again.text


@pytest_asyncio.fixture
async def http(center: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with t.client(center) as client:
        await o.add_node(client)
        await o.add_member(client)
        yield client


async def audit_actions(http: httpx.AsyncClient) -> list[dict[str, Any]]:
    lines = (await http.get("/v1/audit", headers=t.ADMIN)).text.splitlines()
    return [json.loads(line) for line in lines]


async def tokens_for(http: httpx.AsyncClient, **options: Any) -> tuple[str, dict[str, Any]]:
    """Register a client and run the flow for alice; (client_id, token response)."""
    client_id, proof = await o.register(http), o.pkce()
    code = await o.code_for(http, client_id, proof, **options)
    response = await o.exchange(http, client_id, code, proof)
    assert response.status_code == 200, response.text
    return client_id, response.json()


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "path",
    [
        "/.well-known/oauth-authorization-server",
        "/.well-known/oauth-authorization-server/mcp",
        "/.well-known/openid-configuration",
        "/.well-known/openid-configuration/mcp",
    ],
)
async def test_metadata_is_served_where_mcp_clients_look(
    http: httpx.AsyncClient, path: str
) -> None:
    response = await http.get(path)
    assert response.status_code == 200
    assert response.headers["cache-control"] == "max-age=300"
    assert response.headers["access-control-allow-origin"] == "*"
    document = response.json()
    AuthorizationServerMetadata(document).validate()
    assert document["issuer"] == t.ISSUER
    assert document["code_challenge_methods_supported"] == ["S256"]
    assert document["token_endpoint_auth_methods_supported"] == ["none"]
    assert document["grant_types_supported"] == ["authorization_code", "refresh_token"]
    assert document["registration_endpoint"] == f"{t.ISSUER}/register"
    assert document["jwks_uri"] == f"{t.ISSUER}/.well-known/jwks.json"


@pytest.mark.asyncio
async def test_metadata_under_another_suffix_is_not_found(http: httpx.AsyncClient) -> None:
    response = await http.get("/.well-known/oauth-authorization-server/elsewhere")
    t.refused(response, 404, "not_found")


@pytest.mark.asyncio
async def test_browser_clients_may_preflight_the_machine_endpoints(
    http: httpx.AsyncClient,
) -> None:
    for path in ("/register", "/token", "/.well-known/oauth-authorization-server"):
        response = await http.options(path, headers={"Origin": "http://localhost:6274"})
        assert response.status_code == 204, path
        assert response.headers["access-control-allow-origin"] == "*"
        assert "POST" in response.headers["access-control-allow-methods"]


@pytest.mark.asyncio
async def test_a_narrower_scope_gives_a_narrower_token(
    http: httpx.AsyncClient, clock: t.Clock
) -> None:
    _, issued = await tokens_for(http, scope="read offline_access")
    assert issued["scope"] == "read"
    ticket = (await t.verifier(http, clock)).verify(issued["access_token"])
    assert ticket.granted == {"read"}


@pytest.mark.asyncio
async def test_a_scope_the_member_lacks_sends_invalid_scope_back(http: httpx.AsyncClient) -> None:
    client_id, proof = await o.register(http), o.pkce()
    params = o.authorize_params(client_id, proof, scope="delete manage")
    back = o.redirect_params(await o.sign_in(http, params))
    assert back["error"] == "invalid_scope"
    assert back["state"] == "xyz"
    assert "code" not in back


@pytest.mark.asyncio
async def test_without_resource_the_token_is_for_the_nodes_holding_the_vaults(
    http: httpx.AsyncClient, clock: t.Clock
) -> None:
    other = "https://node-b.test/mcp"
    credential = await o.add_node(http, other, "node-b")
    beat = await http.post(
        "/v1/nodes/heartbeat", json={"vaults": ["team"]}, headers=t.bearer(credential)
    )
    assert beat.status_code == 200, beat.text
    _, issued = await tokens_for(http, resource=())
    verifier = await t.verifier(http, clock, audience=other)
    assert verifier.verify(issued["access_token"]).principal == "alice"
    with pytest.raises(TokenError):
        (await t.verifier(http, clock)).verify(issued["access_token"])


@pytest.mark.asyncio
async def test_the_token_request_may_narrow_the_resources(
    http: httpx.AsyncClient, clock: t.Clock
) -> None:
    other = "https://node-b.test/mcp"
    await o.add_node(http, other, "node-b")
    client_id, proof = await o.register(http), o.pkce()
    code = await o.code_for(http, client_id, proof, resource=(t.RESOURCE, other))
    issued = await o.exchange(http, client_id, code, proof, resource=other)
    assert issued.status_code == 200, issued.text
    token = issued.json()["access_token"]
    assert (await t.verifier(http, clock, audience=other)).verify(token)
    with pytest.raises(TokenError):
        (await t.verifier(http, clock)).verify(token)


@pytest.mark.asyncio
async def test_access_tokens_live_an_hour_and_refresh_keeps_the_session(
    http: httpx.AsyncClient, clock: t.Clock
) -> None:
    client_id, issued = await tokens_for(http)
    clock.advance(3600 + 61)  # the lifetime and the 60 s clock skew nodes allow
    with pytest.raises(TokenError):
        (await t.verifier(http, clock)).verify(issued["access_token"])
    renewed = await o.refresh(http, client_id, issued["refresh_token"])
    assert renewed.status_code == 200, renewed.text
    ticket = (await t.verifier(http, clock)).verify(renewed.json()["access_token"])
    assert ticket.client_id == client_id


@pytest.mark.asyncio
async def test_oauth_access_tokens_are_listed_and_revocable_by_jti(
    http: httpx.AsyncClient, clock: t.Clock
) -> None:
    _, issued = await tokens_for(http)
    ticket = (await t.verifier(http, clock)).verify(issued["access_token"])
    listed = (await http.get("/v1/tokens", headers=t.ADMIN)).json()["tokens"]
    assert [row["jti"] for row in listed] == [ticket.jti]
    assert issued["access_token"] not in str(listed)
    revoked = await http.delete(f"/v1/tokens/{ticket.jti}", headers=t.ADMIN)
    assert revoked.status_code == 200, revoked.text
    with pytest.raises(TokenError, match="revoked"):
        (await t.verifier(http, clock)).verify(issued["access_token"])


@pytest.mark.asyncio
async def test_every_issue_and_refresh_is_audited_without_token_material(
    http: httpx.AsyncClient, settings: Settings
) -> None:
    client_id, issued = await tokens_for(http)
    renewed = (await o.refresh(http, client_id, issued["refresh_token"])).json()
    records = await audit_actions(http)
    actions = [record["action"] for record in records]
    assert actions[-4:] == ["login.success", "consent.give", "token.issue", "token.refresh"]
    login, _, issue, _ = records[-4:]
    assert (login["subject"], login["object"]) == ("alice", f"client:{client_id}")
    assert issue["object"].startswith("token:")
    assert client_id in issue["reason"]
    exported = (await http.get("/v1/audit", headers=t.ADMIN)).text
    for secret in (*issued.values(), *renewed.values()):
        if isinstance(secret, str) and len(secret) > 20:
            assert secret not in exported


@pytest.mark.asyncio
async def test_clients_and_refresh_tokens_survive_a_restart(
    settings: Settings, clock: t.Clock
) -> None:
    passwords = o.fast_passwords()
    async with t.running(settings, clock, passwords=passwords) as app, t.client(app) as http:
        await o.add_node(http)
        await o.add_member(http)
        client_id, issued = await tokens_for(http)
        proof = o.pkce()
        code = await o.code_for(http, client_id, proof)
    async with t.running(settings, clock, passwords=passwords) as app, t.client(app) as http:
        renewed = await o.refresh(http, client_id, issued["refresh_token"])
        assert renewed.status_code == 200, renewed.text
        redeemed = await o.exchange(http, client_id, code, proof)
        assert redeemed.status_code == 200, redeemed.text
        page = await http.get("/authorize", params=o.authorize_params(client_id, o.pkce()))
        assert page.status_code == 200
        assert "<strong>Test Client</strong>" in page.text  # the login page, for this client
        assert o.login_form(page).csrf


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "change",
    [
        ("PATCH", {"scope": "read"}),
        ("PATCH", {"rotate_credential": True}),
        ("DELETE", None),
    ],
)
async def test_a_member_change_kills_its_refresh_tokens(
    http: httpx.AsyncClient, change: tuple[str, dict[str, Any] | None]
) -> None:
    client_id, issued = await tokens_for(http)
    proof = o.pkce()
    code = await o.code_for(http, client_id, proof)
    method, body = change
    changed = await http.request(method, "/v1/members/alice", json=body, headers=t.ADMIN)
    assert changed.status_code == 200, changed.text
    refused = await o.refresh(http, client_id, issued["refresh_token"])
    assert refused.status_code == 400
    assert refused.json()["error"] == "invalid_grant"
    redeemed = await o.exchange(http, client_id, code, proof)
    assert redeemed.json()["error"] == "invalid_grant"


@pytest.mark.asyncio
async def test_a_new_password_ends_every_sign_in_but_not_agent_tokens(
    http: httpx.AsyncClient, clock: t.Clock
) -> None:
    client_id, issued = await tokens_for(http)
    admin = await t.add_member(http, "ada", ["team"], role="admin", scope="rwd")
    agent = await http.post(
        "/v1/tokens", json={"resource": [t.RESOURCE], "member": "alice"}, headers=t.bearer(admin)
    )
    assert agent.status_code == 201, agent.text
    body = {"password": "a completely new passphrase"}
    changed = await http.patch("/v1/members/alice", json=body, headers=t.ADMIN)
    assert changed.status_code == 200, changed.text
    refused = await o.refresh(http, client_id, issued["refresh_token"])
    assert refused.json()["error"] == "invalid_grant"
    verifier = await t.verifier(http, clock)
    with pytest.raises(TokenError) as revoked:
        verifier.verify(issued["access_token"])
    assert revoked.value.reason == "revoked"
    assert verifier.verify(agent.json()["token"]).principal == "alice"
    audit = (await http.get("/v1/audit", headers=t.ADMIN)).text
    assert "member.set password: sign-in ended with 1 access token(s)" in audit
