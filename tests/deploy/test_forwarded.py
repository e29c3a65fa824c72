"""The client's address behind a proxy: Caddy on loopback in front of a real `serve`.

Clients reach Caddy from addresses of their own (127.0.0.2, 127.0.0.3 …), Caddy reaches
the center from 127.0.0.1. A center that trusts 127.0.0.1 as its proxy counts each client
on its own; one that trusts no proxy counts every client as the proxy. A client that sends
its own X-Forwarded-For changes nothing: Caddy replaces the header, and the center
believes it from a trusted proxy only. The limit observed is failed sign-ins per address
(`SECONDBRAIN_CENTER_LOGIN_RATE_LIMIT`), two an hour here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from center import fleet
from center.oauth import testing as o

pytestmark = pytest.mark.asyncio
SPOOFED = "203.0.113.9"  # TEST-NET-3: an address no client here has


@asynccontextmanager
async def client_at(address: str, base_url: str) -> AsyncIterator[httpx.AsyncClient]:
    """A client whose connections leave from `address` (any 127.x.y.z on Linux)."""
    transport = httpx.AsyncHTTPTransport(local_address=address)
    async with httpx.AsyncClient(transport=transport, base_url=base_url, timeout=30) as http:
        yield http


async def failed_sign_in(http: httpx.AsyncClient, **headers: str) -> int:
    """A wrong password posted on the login page; the status of the post."""
    client_id = await o.register(http)
    page = await http.get("/authorize", params=o.authorize_params(client_id, o.pkce()))
    assert page.status_code == 200, page.text
    form = o.login_form(page)
    action = urlsplit(form.action)
    body = {"username": "nobody", "password": "wrong password!", "csrf": form.csrf}
    posted = await http.post(f"{action.path}?{action.query}", data=body, headers=headers)
    return posted.status_code


def serve(folder: Path, trusted_proxies: str) -> Iterator[tuple[fleet.Replica, str]]:
    """A center on SQLite trusting `trusted_proxies`, and Caddy in front of it."""
    folder.mkdir()
    env = fleet.center_env(
        f"sqlite+aiosqlite:///{folder}/center.db",
        None,
        login_rate_limit="2/h",
        trusted_proxies=trusted_proxies,
    )
    center = fleet.Replica(env, folder).start()
    try:
        with fleet.caddy([center], folder) as proxy:
            yield center, proxy
    finally:
        center.stop()


@pytest.fixture
def trusting(tmp_path: Path) -> Iterator[tuple[fleet.Replica, str]]:
    yield from serve(tmp_path / "trusting", "127.0.0.1")


@pytest.fixture
def distrusting(tmp_path: Path) -> Iterator[tuple[fleet.Replica, str]]:
    yield from serve(tmp_path / "distrusting", "")


async def test_two_clients_behind_a_trusted_proxy_have_budgets_of_their_own(
    trusting: tuple[fleet.Replica, str],
) -> None:
    _center, proxy = trusting
    async with client_at("127.0.0.2", proxy) as first, client_at("127.0.0.3", proxy) as second:
        spent = [await failed_sign_in(first) for _ in range(3)]
        other = await failed_sign_in(second)
    assert spent == [401, 401, 429]
    assert other == 401


async def test_a_client_cannot_name_its_own_address_directly_or_through_the_proxy(
    trusting: tuple[fleet.Replica, str],
) -> None:
    center, proxy = trusting
    async with client_at("127.0.0.4", proxy) as behind, client_at("127.0.0.4", center.url) as bare:
        spent = [await failed_sign_in(behind) for _ in range(2)]
        through_proxy = await failed_sign_in(behind, **{"X-Forwarded-For": SPOOFED})
        # 127.0.0.4 is no trusted proxy: its header is ignored, its own address counts
        direct = await failed_sign_in(bare, **{"X-Forwarded-For": SPOOFED})
    assert spent == [401, 401]
    assert (through_proxy, direct) == (429, 429)
    async with client_at("127.0.0.5", proxy) as fresh:
        assert await failed_sign_in(fresh) == 401  # the budget is the address's, not global


async def test_behind_a_proxy_it_does_not_trust_every_client_shares_the_proxys_budget(
    distrusting: tuple[fleet.Replica, str],
) -> None:
    _center, proxy = distrusting
    async with client_at("127.0.0.2", proxy) as first, client_at("127.0.0.3", proxy) as second:
        spent = [await failed_sign_in(first) for _ in range(2)]
        other = await failed_sign_in(second, **{"X-Forwarded-For": SPOOFED})
    assert spent == [401, 401]
    assert other == 429
