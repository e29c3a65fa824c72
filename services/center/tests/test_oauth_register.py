"""RFC 7591 registration (docs/design.md#client-registration): public clients only, strict
redirect URIs, a body and a rate limit per source IP, and a bounded client table that forgets
the least recently used client first."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import pytest_asyncio
from fastapi import FastAPI
from sqlalchemy import select

from center import testing as t
from center.config import Settings
from center.db.models import OAuthClient
from center.oauth import clients
from center.oauth import testing as o
from center.runtime import Center


@pytest_asyncio.fixture
async def http(center: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with t.client(center) as client:
        yield client


def running(app: FastAPI) -> Center:
    center: Center = app.state.center
    return center


@pytest.mark.asyncio
async def test_a_public_client_is_registered(http: httpx.AsyncClient, clock: t.Clock) -> None:
    body = {
        "client_name": "Claude",
        "redirect_uris": ["https://claude.ai/api/mcp/auth_callback", "http://localhost/cb"],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "scope": "read write",
        "logo_uri": "https://claude.ai/logo.png",
    }
    response = await http.post("/register", json=body)
    assert response.status_code == 201, response.text
    assert response.headers["cache-control"] == "no-store"
    created = response.json()
    assert len(created["client_id"]) == 22
    assert created["client_id_issued_at"] == int(clock())
    assert created["token_endpoint_auth_method"] == "none"
    assert "client_secret" not in created
    for name in ("client_name", "redirect_uris", "grant_types", "response_types"):
        assert created[name] == body[name]


@pytest.mark.asyncio
async def test_defaults_fill_what_a_client_leaves_out(http: httpx.AsyncClient) -> None:
    response = await http.post("/register", json={"redirect_uris": ["https://app.test/cb"]})
    assert response.status_code == 201, response.text
    created = response.json()
    assert created["grant_types"] == ["authorization_code", "refresh_token"]
    assert created["response_types"] == ["code"]
    assert created["client_name"] is None


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "uris",
    [
        [],
        ["http://app.test/cb"],
        ["https://app.test/cb#fragment"],
        ["https://user:pw@app.test/cb"],
        ["/relative/cb"],
        ["javascript:alert(1)"],
        ["cursor://anysphere.cursor/cb"],
        ["https://app.test/" + "x" * 2048],
        ["https://app test/cb"],
        ["https://app.test;evil/cb"],
        ["http://127.0.0.1:99999/cb"],
        ["https://app.test/cb\u0000"],
        [42],
        "https://app.test/cb",
        [f"https://app.test/{n}" for n in range(11)],
    ],
)
async def test_bad_redirect_uris_are_refused(http: httpx.AsyncClient, uris: Any) -> None:
    response = await http.post("/register", json={"redirect_uris": uris})
    assert response.status_code == 400, response.text
    assert response.json()["error"] == "invalid_redirect_uri"


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "change",
    [
        {"token_endpoint_auth_method": "client_secret_post"},
        {"token_endpoint_auth_method": "client_secret_basic"},
        {"grant_types": ["client_credentials"]},
        {"grant_types": ["refresh_token"]},
        {"response_types": ["token"]},
        {"client_name": "x" * 257},
        {"client_name": "bell\u0007"},
        {"client_name": 7},
    ],
)
async def test_other_metadata_is_checked(http: httpx.AsyncClient, change: dict[str, Any]) -> None:
    response = await http.post("/register", json={"redirect_uris": [o.REDIRECT], **change})
    assert response.status_code == 400, response.text
    assert response.json()["error"] == "invalid_client_metadata"
    assert response.json()["error_description"]


@pytest.mark.asyncio
@pytest.mark.parametrize("body", [b"{", b"[]", b"\xff", b"null", b'"redirect_uris"'])
async def test_a_body_that_is_no_json_object_is_refused(
    http: httpx.AsyncClient, body: bytes
) -> None:
    response = await http.post(
        "/register", content=body, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_client_metadata"


@pytest.mark.asyncio
async def test_an_oversized_body_is_refused_before_it_is_read(http: httpx.AsyncClient) -> None:
    body = {"redirect_uris": [o.REDIRECT], "padding": "x" * 70_000}
    response = await http.post("/register", json=body)
    t.refused(response, 413, "too_large", "request body exceeds 65536 bytes")


@pytest.mark.asyncio
async def test_the_registration_limit_is_64_kib_even_when_bodies_may_be_larger(
    settings: Settings, clock: t.Clock
) -> None:
    roomy = settings.model_copy(update={"max_body_bytes": 1 << 20})
    async with t.running(roomy, clock) as app, t.client(app) as http:
        body = {"redirect_uris": [o.REDIRECT], "padding": "x" * 70_000}
        response = await http.post("/register", json=body)
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_client_metadata"


@pytest.mark.asyncio
async def test_twenty_registrations_an_hour_per_source_ip(center: FastAPI, clock: t.Clock) -> None:
    body = {"redirect_uris": [o.REDIRECT]}
    async with t.client(center, "192.0.2.1") as first, t.client(center, "192.0.2.2") as second:
        for _ in range(20):
            assert (await first.post("/register", json=body)).status_code == 201
        limited = await first.post("/register", json=body)
        assert limited.status_code == 429
        assert int(limited.headers["retry-after"]) > 0
        assert (await second.post("/register", json=body)).status_code == 201
        clock.advance(3600 / 20)
        assert (await first.post("/register", json=body)).status_code == 201


@pytest.mark.asyncio
async def test_an_ipv6_network_registers_twenty_an_hour_whichever_of_its_addresses_it_uses(
    center: FastAPI,
) -> None:
    """A /64's 2**64 addresses are one subscriber's: cycling through them buys nothing."""
    body = {"redirect_uris": [o.REDIRECT]}
    for n in range(20):
        async with t.client(center, f"2001:db8:1:2::{n + 1:x}") as one:
            assert (await one.post("/register", json=body)).status_code == 201
    async with (
        t.client(center, "2001:db8:1:2:ffff::1") as same,
        t.client(center, "2001:db8:1:3::1") as other,
    ):
        assert (await same.post("/register", json=body)).status_code == 429
        assert (await other.post("/register", json=body)).status_code == 201


@pytest.mark.asyncio
async def test_the_client_table_forgets_the_least_recently_used_nobody_signed_in_through(
    center: FastAPI, http: httpx.AsyncClient, clock: t.Clock
) -> None:
    """The first client is the oldest but held (alice signed in through it): of the
    registered clients nobody holds, beyond two, the least recently used goes."""
    store = running(center).store
    meta = clients.parse_metadata({"redirect_uris": [o.REDIRECT]})
    made = []
    for _ in range(3):
        async with store.change() as work:
            made.append((await clients.register(work, meta, limit=3))["client_id"])
        clock.advance(1)
    await o.add_node(http)
    await o.add_member(http)
    await o.code_for(http, made[0], o.pkce())  # signing in marks the first one used
    clock.advance(1)
    async with store.change() as work:
        newest = (await clients.register(work, meta, limit=2))["client_id"]
    async with store.read() as session:
        kept = set((await session.scalars(select(OAuthClient.id))).all())
    assert kept == {made[0], made[2], newest}
    forgotten = await http.get("/authorize", params=o.authorize_params(made[1], o.pkce()))
    t.refused(forgotten, 400, None, "This application is not registered here")


@pytest.mark.asyncio
async def test_a_registered_client_survives_a_restart(settings: Settings, clock: t.Clock) -> None:
    async with t.running(settings, clock) as app, t.client(app) as http:
        client_id = await o.register(http)
    async with t.running(settings, clock) as app, t.client(app) as http:
        await o.add_node(http)
        page = await http.get("/authorize", params=o.authorize_params(client_id, o.pkce()))
    assert page.status_code == 200
    assert "<strong>Test Client</strong>" in page.text  # the login page, for this client
    assert o.login_form(page).csrf
