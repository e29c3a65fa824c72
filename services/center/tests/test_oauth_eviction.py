"""Nobody can sign a registered application out by flooding `/authorize` with new client
metadata documents: fetches are limited per source address and per host, and however
many documents arrive, from however many addresses, none displaces a client a member
signed in through. Real https document server on loopback, SQLite and PostgreSQL."""

from __future__ import annotations

import secrets
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
import pytest_asyncio
from fastapi import FastAPI
from sqlalchemy import func, select

from center import testing as t
from center.config import Settings
from center.db.models import OAuthClient
from center.oauth import clients
from center.oauth import testing as o
from center.runtime import Center

pytestmark = pytest.mark.asyncio
FLOOD = 1001
"""One more than the table used to hold: enough to evict any client before."""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[o.DocumentServer]:
    with o.document_server(tmp_path_factory.mktemp("documents")) as running:
        yield running


def _allowed(settings: Settings, server: o.DocumentServer, **extra: Any) -> Settings:
    return settings.model_copy(
        update={
            "oauth_client_metadata_hosts": ("127.0.0.1",),
            "oauth_client_metadata_ca_file": server.ca_file,
            **extra,
        }
    )


@dataclass
class SignedIn:
    """A client alice signed in through: its id, its refresh token."""

    client_id: str
    refresh: str


async def _sign_in(http: httpx.AsyncClient, client_id: str) -> SignedIn:
    proof = o.pkce()
    code = await o.code_for(http, client_id, proof)
    tokens = await o.exchange(http, client_id, code, proof)
    assert tokens.status_code == 200, tokens.text
    return SignedIn(client_id, tokens.json()["refresh_token"])


async def _still_signed_in(http: httpx.AsyncClient, signed: SignedIn) -> None:
    """Its refresh works, and alice's consent for it is still listed."""
    refreshed = await o.refresh(http, signed.client_id, signed.refresh)
    assert refreshed.status_code == 200, refreshed.text
    listed = await http.get("/v1/consents", params={"member": "alice"}, headers=t.ADMIN)
    assert signed.client_id in {row["client_id"] for row in listed.json()["consents"]}


def _publish(server: o.DocumentServer, name: str) -> str:
    """Publish a document under a path nothing else uses (the server outlives a test); its
    URL."""
    path = f"/{secrets.token_hex(6)}/{name}/client.json"
    url = server.url(path)
    document = {"client_id": url, "client_name": "Flood", "redirect_uris": [o.REDIRECT]}
    return server.publish(path, document)


@pytest_asyncio.fixture
async def limited(
    settings: Settings, clock: t.Clock, server: o.DocumentServer
) -> AsyncIterator[FastAPI]:
    """A center with the default fetch limits."""
    async with t.running(_allowed(settings, server), clock, o.fast_passwords()) as app:
        yield app


async def test_a_flood_from_one_address_is_refused_clearly_and_signs_nobody_out(
    limited: FastAPI, server: o.DocumentServer
) -> None:
    async with t.client(limited) as http:
        await o.add_node(http)
        await o.add_member(http)
        registered = await _sign_in(http, await o.register(http))
        urls = [_publish(server, f"one-{n}") for n in range(FLOOD)]
        answers = [
            await http.get("/authorize", params=o.authorize_params(url, o.pkce())) for url in urls
        ]
        assert Counter(a.status_code for a in answers) == {200: 20, 429: FLOOD - 20}
        refused = answers[-1]
        assert "Too many applications looked up" in refused.text
        assert int(refused.headers["retry-after"]) > 0
        assert sum(server.hits.get(urlsplit(url).path, 0) for url in urls) == 20
        await _still_signed_in(http, registered)


async def test_unlimited_documents_from_a_thousand_addresses_evict_only_each_other(
    settings: Settings, clock: t.Clock, server: o.DocumentServer
) -> None:
    """The worst case: no fetch limit at all (as if the attacker had an address and a
    host per request). The registered client and a document client alice signed in
    through both survive, so does a registered client nobody signed in through yet; the
    documents nobody signed in through stay within their bound."""
    unlimited = _allowed(
        settings,
        server,
        oauth_document_rate_limit="100000/h",
        oauth_document_host_rate_limit="100000/h",
    )
    async with t.running(unlimited, clock, o.fast_passwords()) as app, t.client(app) as http:
        await o.add_node(http)
        await o.add_member(http)
        registered = await _sign_in(http, await o.register(http))
        documented = await _sign_in(http, _publish(server, "held"))
        idle = await o.register(http)  # registered, nobody signed in through it yet
        urls = [_publish(server, f"many-{n}") for n in range(FLOOD + 20)]
        for n, url in enumerate(urls):
            address = f"10.{n // 250}.{n % 250}.1" if n % 2 else f"2001:db8:{n:x}::1"
            async with t.client(app, address) as stranger:
                page = await stranger.get("/authorize", params=o.authorize_params(url, o.pkce()))
            assert page.status_code == 200, page.text
            clock.advance(1)  # so that "least recently used" has an order
        await _still_signed_in(http, registered)
        await _still_signed_in(http, documented)
        center: Center = app.state.center
        async with center.store.read() as session:
            unheld = await session.scalar(
                select(func.count()).where(clients.unheld(center.store.now()))
            )
            left = set(
                await session.scalars(select(OAuthClient.id).where(OAuthClient.id.in_(urls)))
            )
            kept = await session.get(OAuthClient, idle)
        assert unheld == clients.MAX_DOCUMENTS + 1  # the documents, and the idle registration
        assert left == set(urls[-clients.MAX_DOCUMENTS :])  # the oldest anonymous ones went
        assert kept is not None  # documents never push out a registered client


async def test_an_ipv6_network_is_one_source_whichever_of_its_addresses_it_uses(
    limited: FastAPI, server: o.DocumentServer
) -> None:
    for n in range(20):
        async with t.client(limited, f"2001:db8:9:9::{n + 1:x}") as one:
            url = _publish(server, f"net-{n}")
            page = await one.get("/authorize", params=o.authorize_params(url, o.pkce()))
            assert page.status_code == 200, page.text
    late = _publish(server, "net-late")
    async with t.client(limited, "2001:db8:9:9:ffff::1") as same:
        page = await same.get("/authorize", params=o.authorize_params(late, o.pkce()))
        assert page.status_code == 429
    async with t.client(limited, "2001:db8:9:a::1") as other:
        page = await other.get("/authorize", params=o.authorize_params(late, o.pkce()))
        assert page.status_code == 200, page.text


async def test_made_up_urls_on_a_host_cannot_stop_its_known_clients_sign_ins(
    settings: Settings, clock: t.Clock, server: o.DocumentServer
) -> None:
    """The host's budget is for URLs not known yet: a known client fetched again (here
    its document says no-store, so at every authorization) spends only its address's."""
    narrow = _allowed(settings, server, oauth_document_host_rate_limit="3/h")
    path = f"/{secrets.token_hex(4)}/known/client.json"
    known = server.url(path)
    document = {"client_id": known, "client_name": "Known", "redirect_uris": [o.REDIRECT]}
    server.publish(path, document, **{"Cache-Control": "no-store"})
    async with t.running(narrow, clock, o.fast_passwords()) as app:
        answers = []
        for n, url in enumerate([known, *(_publish(server, f"made-up-{n}") for n in range(3))]):
            async with t.client(app, f"198.51.100.{n + 1}") as stranger:
                page = await stranger.get("/authorize", params=o.authorize_params(url, o.pkce()))
                answers.append(page.status_code)
        assert answers == [200, 200, 200, 429]  # the known URL spent one of the three
        async with t.client(app, "198.51.100.99") as user:
            page = await user.get("/authorize", params=o.authorize_params(known, o.pkce()))
        assert page.status_code == 200, page.text
        assert server.hits[path] == 2
