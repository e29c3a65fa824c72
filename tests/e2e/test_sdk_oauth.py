"""The official MCP SDK client signing in with its own OAuth support (`OAuthClientProvider`),
given nothing but the node's MCP URL: the node's 401 and RFC 9728 metadata lead it to the
center, it registers itself (RFC 7591), runs the authorization code flow with PKCE and
RFC 8707 `resource`, calls tools with the access token, and — once that token counts as
expired — rotates the refresh token and calls tools again.

The person at the browser is played over plain HTTP: open the authorization URL, fill in
the login form, post it, and take the code from the 302 (nothing listens at the redirect
URI; a native client's loopback listener would read the same query). Tokens live in
memory only.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

import httpx
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from center.oauth.testing import (
    PASSWORD,
    DocumentServer,
    answer_consent,
    consent_form,
    document_server,
    login_form,
)
from vault_node.testing import free_port

from ..deploy.conftest import CenterSetup, call
from .oauth_stack import MEMBER, VAULT, Stack, oauth_stack

pytestmark = [pytest.mark.slow, pytest.mark.asyncio]


@dataclass
class DocumentsCenter(CenterSetup):
    """A center that may fetch client metadata documents from the test's https server."""

    ca_file: Path | None = None

    def env(self) -> dict[str, str]:
        return {
            **super().env(),
            "SECONDBRAIN_CENTER_OAUTH_CLIENT_METADATA_HOSTS": '["127.0.0.1"]',
            "SECONDBRAIN_CENTER_OAUTH_CLIENT_METADATA_CA_FILE": str(self.ca_file),
        }


@pytest.fixture(scope="module")
def documents(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DocumentServer]:
    with document_server(tmp_path_factory.mktemp("client-documents")) as server:
        yield server


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, documents: DocumentServer) -> Iterator[Stack]:
    root = tmp_path_factory.mktemp("sdk-oauth")
    setup = DocumentsCenter(root / "center", ca_file=documents.ca_file)
    with oauth_stack(root, setup=setup) as running:
        yield running


@dataclass
class MemoryStorage:
    """The SDK's `TokenStorage`, in memory: what a client keeps between calls."""

    tokens: OAuthToken | None = None
    client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


@dataclass
class Person:
    """Answers the login page, and the consent page after it, the way a member at a
    browser would, over plain HTTP."""

    username: str
    password: str
    redirect_uri: str
    answers: list[AuthorizationCodeResult] = field(default_factory=list)
    pages: list[str] = field(default_factory=list)
    ask_first: str | None = None
    """The scope the first sign-in asks for instead of the SDK's (a client set to read)."""
    asked: list[bool] = field(default_factory=list)
    """Per sign-in, whether the consent page came (and was allowed as offered)."""

    async def open(self, authorization_url: str) -> None:
        """The SDK's redirect handler: sign in at `authorization_url`, keep the redirect."""
        self.pages.append(authorization_url)
        if self.ask_first is not None and len(self.pages) == 1:
            authorization_url = with_scope(authorization_url, self.ask_first)
        async with httpx.AsyncClient(timeout=30, follow_redirects=False) as browser:
            page = await browser.get(authorization_url)
            assert page.status_code == 200, page.text
            form = login_form(page)
            fields = {"username": self.username, "password": self.password, "csrf": form.csrf}
            posted = await browser.post(form.action, data=fields)
            self.asked.append(consent_form(posted) is not None)
            posted = await answer_consent(browser, posted)
        assert posted.status_code == 302, posted.text
        location = posted.headers["location"]
        assert location.startswith(f"{self.redirect_uri}?"), location
        query = {name: values[0] for name, values in parse_qs(urlsplit(location).query).items()}
        self.answers.append(
            AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query["iss"])
        )

    async def callback(self) -> AuthorizationCodeResult:
        """The SDK's callback handler: what arrived at the redirect URI."""
        return self.answers[-1]


def with_scope(url: str, scope: str) -> str:
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qs(parts.query).items() if k != "scope"]
    pairs = [(k, value) for k, values in query for value in values] + [("scope", scope)]
    return urlunsplit(parts._replace(query=urlencode(pairs)))


def scope_asked(url: str) -> set[str]:
    return set(parse_qs(urlsplit(url).query).get("scope", [""])[0].split())


@dataclass
class Wire:
    """Every request the client sent, with the status it got back."""

    seen: list[tuple[str, str, int]] = field(default_factory=list)
    token_grants: list[str] = field(default_factory=list)

    async def on_request(self, request: httpx2.Request) -> None:
        if request.url.path == "/token":
            grant = parse_qs(request.content.decode())["grant_type"][0]
            self.token_grants.append(grant)

    async def on_response(self, response: httpx2.Response) -> None:
        request = response.request
        self.seen.append((request.method, str(request.url).split("?")[0], response.status_code))


@dataclass
class OAuthClient:
    """One MCP client application: the SDK's provider, its storage, its user, its wire."""

    provider: OAuthClientProvider
    storage: MemoryStorage
    person: Person
    wire: Wire


def oauth_client(
    stack: Stack, username: str = MEMBER, documents: DocumentServer | None = None
) -> OAuthClient:
    """A client that registers itself, or with `documents` one known by the URL of its
    metadata document, which it publishes there."""
    redirect_uri = f"http://127.0.0.1:{free_port()}/callback"
    storage = MemoryStorage()
    person = Person(username, PASSWORD, redirect_uri)
    metadata = OAuthClientMetadata(
        client_name="secondbrain e2e (mcp SDK)",
        redirect_uris=[redirect_uri],  # type: ignore[list-item]  # pydantic parses the str
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )
    document_url = None
    if documents is not None:
        path = f"/clients/{free_port()}.json"
        document_url = documents.url(path)
        published = {"client_id": document_url, **metadata.model_dump(mode="json")}
        documents.publish(path, {k: v for k, v in published.items() if v is not None})
    provider = OAuthClientProvider(
        server_url=stack.mcp_url,
        client_metadata=metadata,
        storage=storage,
        redirect_handler=person.open,
        callback_handler=person.callback,
        client_metadata_url=document_url,
    )
    return OAuthClient(provider, storage, person, Wire())


@asynccontextmanager
async def session(client: OAuthClient, url: str) -> AsyncIterator[ClientSession]:
    hooks: dict[str, list[Callable[..., Any]]] = {
        "request": [client.wire.on_request],
        "response": [client.wire.on_response],
    }
    async with (
        httpx2.AsyncClient(auth=client.provider, timeout=60, event_hooks=hooks) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as mcp,
    ):
        await mcp.initialize()
        yield mcp


def claims(token: str) -> dict[str, Any]:
    """The payload of a compact JWS, unverified: the node verified it already."""
    payload = token.split(".")[1]
    padded = payload + "=" * (-len(payload) % 4)
    decoded: dict[str, Any] = json.loads(base64.urlsafe_b64decode(padded))
    return decoded


async def test_the_sdk_signs_in_from_the_node_url_alone_and_refreshes(stack: Stack) -> None:
    client = oauth_client(stack)
    async with session(client, stack.mcp_url) as mcp:
        listed = await mcp.list_tools()
        vaults = await call(mcp, "vault_list", {})
        note = await call(mcp, "note_read", {"path": "wiki/backoff.md"})
    names = {tool.name for tool in listed.tools}
    assert {"note_read", "note_create", "vault_list"} <= names
    assert "note_delete" not in names  # alice is an editor: read_write, no delete
    assert [v["name"] for v in vaults["vaults"]] == [VAULT]
    assert "Exponential backoff" in note["content"]

    node, center = stack.node.base, stack.issuer
    discovery = [(method, url) for method, url, _ in client.wire.seen[:6]]
    assert discovery == [
        ("POST", f"{node}/mcp"),  # refused: 401 with resource_metadata
        ("GET", f"{node}/.well-known/oauth-protected-resource"),
        ("GET", f"{center}/.well-known/oauth-authorization-server"),
        ("POST", f"{center}/register"),
        ("POST", f"{center}/token"),
        ("POST", f"{node}/mcp"),  # the same request again, now with the token
    ], client.wire.seen
    assert [status for *_, status in client.wire.seen[:6]] == [401, 200, 200, 201, 200, 200]
    assert client.wire.token_grants == ["authorization_code"]
    assert len(client.person.pages) == 1
    assert client.person.pages[0].startswith(f"{center}/authorize?")
    assert client.person.asked == [True]

    first = client.storage.tokens
    assert first is not None
    assert first.refresh_token is not None
    assert client.storage.client_info is not None
    granted = claims(first.access_token)
    assert granted["iss"] == center
    assert granted["aud"] == stack.mcp_url  # RFC 8707: the resource the SDK named
    assert granted["sub"] == MEMBER
    assert granted["client_id"] == client.storage.client_info.client_id
    assert set(granted["scope"].split()) == {"read", "write"}

    # The access token's lifetime runs out (the SDK keeps its expiry in its context): the
    # next request refreshes first, and the rotated tokens carry on.
    client.provider.context.token_expiry_time = time.time() - 1
    async with session(client, stack.mcp_url) as mcp:
        created = await call(mcp, "note_create", {"path": "inbox/from-sdk", "content": "hi\n"})
        again = await call(mcp, "note_read", {"path": created["path"]})
    assert again["content"].strip() == "hi"
    assert client.wire.token_grants == ["authorization_code", "refresh_token"]
    assert len(client.person.pages) == 1  # refreshed, not signed in again
    second = client.storage.tokens
    assert second is not None
    assert second.refresh_token is not None
    assert second.access_token != first.access_token
    assert second.refresh_token != first.refresh_token  # rotated
    renewed = claims(second.access_token)
    assert renewed["jti"] != granted["jti"]
    assert (renewed["sub"], renewed["aud"], renewed["client_id"]) == (
        MEMBER,
        stack.mcp_url,
        granted["client_id"],
    )

    logs = stack.logs()
    secrets_seen = (
        first.access_token,
        first.refresh_token,
        second.access_token,
        second.refresh_token,
        client.person.answers[0].code,
        PASSWORD,
    )
    for secret in secrets_seen:
        assert secret not in logs


async def test_a_refused_refresh_sends_the_sdk_back_to_the_login_page(stack: Stack) -> None:
    """The operator narrows a member's scope, which ends her sessions: the SDK's refresh is
    refused, it signs her in again, and the new token carries only what she holds now."""
    bob = {"id": "bob", "vaults": [VAULT], "role": "editor", "scope": "read_write"}
    stack.center.admin("POST", "/v1/members", {**bob, "password": PASSWORD})
    client = oauth_client(stack, username="bob")
    async with session(client, stack.mcp_url) as mcp:
        before = {tool.name for tool in (await mcp.list_tools()).tools}
    assert "note_create" in before

    stack.center.admin("PATCH", "/v1/members/bob", {"scope": "read"})
    client.provider.context.token_expiry_time = time.time() - 1
    async with session(client, stack.mcp_url) as mcp:
        after = {tool.name for tool in (await mcp.list_tools()).tools}
        read = await call(mcp, "note_read", {"path": "wiki/backoff.md"})
    assert client.wire.token_grants == ["authorization_code", "refresh_token", "authorization_code"]
    assert len(client.person.pages) == 2  # signed in again
    assert client.person.asked == [True, False]  # within what she allowed: not asked again
    assert "note_read" in after
    assert "note_create" not in after
    assert "Exponential backoff" in read["content"]
    tokens = client.storage.tokens
    assert tokens is not None
    assert claims(tokens.access_token)["scope"] == "read"


async def test_a_revoked_consent_sends_the_sdk_back_to_the_consent_page(stack: Stack) -> None:
    """The member revokes what she allowed: the SDK's refresh is refused, it signs her in
    again, and the consent page asks again before the new token comes."""
    client = oauth_client(stack)
    async with session(client, stack.mcp_url) as mcp:
        await call(mcp, "vault_list", {})
    info = client.storage.client_info
    assert info is not None
    listed = stack.center.admin("GET", f"/v1/consents?member={MEMBER}")["consents"]
    [kept] = [c for c in listed if c["client_id"] == info.client_id]
    revoked = stack.center.admin(
        "DELETE", f"/v1/consents/{kept['id']}", token=stack.member_credential
    )
    assert revoked["ended_sign_ins"] == 1

    client.provider.context.token_expiry_time = time.time() - 1
    async with session(client, stack.mcp_url) as mcp:
        note = await call(mcp, "note_read", {"path": "wiki/backoff.md"})
    assert "Exponential backoff" in note["content"]
    assert client.wire.token_grants == ["authorization_code", "refresh_token", "authorization_code"]
    assert client.person.asked == [True, True]


async def test_a_read_token_steps_up_to_write_on_the_nodes_403(stack: Stack) -> None:
    """Step-up (MCP authorization, SEP-2350): the first sign-in asks for `read` only, so
    a write is refused with 403 `insufficient_scope` naming `write`; the SDK signs in again
    asking for the union of what it had and what the node named, and the write works."""
    client = oauth_client(stack)
    client.person.ask_first = "read"
    async with session(client, stack.mcp_url) as mcp:
        before = {tool.name for tool in (await mcp.list_tools()).tools}
        first = client.storage.tokens
        created = await call(mcp, "note_create", {"path": "inbox/stepped-up", "content": "up\n"})
        again = await call(mcp, "note_read", {"path": created["path"]})
    assert first is not None
    assert claims(first.access_token)["scope"] == "read"
    assert "note_create" not in before  # the read token lists only what it may call
    assert again["content"].strip() == "up"

    refused = [(m, url, s) for m, url, s in client.wire.seen if s == 403]
    assert refused == [("POST", f"{stack.mcp_url}", 403)], client.wire.seen
    assert client.wire.token_grants == ["authorization_code", "authorization_code"]
    assert len(client.person.pages) == 2
    assert scope_asked(client.person.pages[1]) >= {"read", "write"}  # the union
    assert client.person.asked == [True, True]  # a wider scope asks for consent again
    second = client.storage.tokens
    assert second is not None
    assert set(claims(second.access_token)["scope"].split()) == {"read", "write"}
    assert claims(second.access_token)["aud"] == stack.mcp_url


async def test_the_sdk_signs_in_with_its_client_metadata_document(
    stack: Stack, documents: DocumentServer
) -> None:
    """CIMD: the SDK, given the URL of its metadata document, sees the center support it
    and skips registration; the center fetches the document and signs alice in."""
    client = oauth_client(stack, documents=documents)
    async with session(client, stack.mcp_url) as mcp:
        note = await call(mcp, "note_read", {"path": "wiki/backoff.md"})
    assert "Exponential backoff" in note["content"]
    center = stack.issuer
    assert ("POST", f"{center}/register") not in [(m, u) for m, u, _ in client.wire.seen]
    assert client.storage.client_info is not None
    url = client.storage.client_info.client_id
    assert url is not None
    assert url.startswith("https://127.0.0.1:")
    assert client.wire.token_grants == ["authorization_code"]
    tokens = client.storage.tokens
    assert tokens is not None
    assert claims(tokens.access_token)["client_id"] == url
    assert documents.hits[urlsplit(url).path] == 1
