"""Account limits and username mode, on both databases: 60 attempts a minute in all, per
identity 3 registrations or 10 verify attempts in 15 minutes (429 + Retry-After), at
most 1024 pending registrations, bodies of at most 4 KiB, and registration by username
without any mail."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
import pytest_asyncio
from argon2 import PasswordHasher, Type
from sqlalchemy import func, select

from center import testing as t
from center.accounts import MAX_PENDING
from center.config import Settings
from center.db.models import Account, Member, PendingAccount
from center.passwords import Passwords
from center.store import Store

PASSWORD = "correct horse battery staple"
NODE = "https://node-a.test/mcp"


class Client(httpx.AsyncClient):
    store: Store


async def _open(settings: Settings, clock: t.Clock) -> AsyncIterator[Client]:
    hasher = PasswordHasher(time_cost=1, memory_cost=8, parallelism=1, type=Type.ID)
    async with t.running(settings, clock, Passwords(hasher)) as app:
        transport = httpx.ASGITransport(app=app)
        async with Client(transport=transport, base_url=t.ISSUER) as http:
            http.store = app.state.center.store
            created = await http.post(
                "/v1/nodes", json={"id": "a", "resource": NODE}, headers=t.ADMIN
            )
            assert created.status_code == 201
            yield http


@pytest_asyncio.fixture
async def http(
    mail_settings: Callable[..., Settings], smtp: Any, clock: t.Clock
) -> AsyncIterator[Client]:
    async for client in _open(mail_settings(smtp), clock):
        yield client


@pytest_asyncio.fixture
async def usernames(settings: Settings, clock: t.Clock) -> AsyncIterator[Client]:
    async for client in _open(settings.model_copy(update={"registration": "username"}), clock):
        yield client


async def register(http: httpx.AsyncClient, email: str) -> httpx.Response:
    return await http.post("/v1/accounts/register", json={"email": email})


async def verify(http: httpx.AsyncClient, email: str, code: str = "A" * 43) -> httpx.Response:
    body = {"email": email, "code": code, "password": PASSWORD}
    return await http.post("/v1/accounts/verify", json=body)


async def count(http: Client, model: Any) -> int:
    async with http.store.read() as session:
        return int(await session.scalar(select(func.count()).select_from(model)) or 0)


def assert_limited(response: httpx.Response, most: int) -> int:
    assert response.status_code == 429, response.text
    assert response.json()["error"]["code"] == "rate_limited"
    wait = int(response.headers["Retry-After"])
    assert 1 <= wait <= most
    return wait


# ---------------------------------------------------------------- rate limits


@pytest.mark.asyncio
async def test_an_address_may_ask_three_times_in_15_minutes(
    http: Client, smtp: Any, clock: t.Clock
) -> None:
    for spelling in ("ada@example.org", "ADA@example.org", " ada@EXAMPLE.org"):
        assert (await register(http, spelling)).status_code == 202
    wait = assert_limited(await register(http, "ada@example.org"), 900)
    assert len(smtp.messages) == 1
    assert (await register(http, "bob@example.org")).status_code == 202
    clock.advance(wait)
    assert (await register(http, "ada@example.org")).status_code == 202
    assert len(smtp.messages) == 3


@pytest.mark.asyncio
async def test_an_address_may_try_ten_codes_in_15_minutes(http: Client, clock: t.Clock) -> None:
    for _ in range(10):
        t.refused(
            await verify(http, "ada@example.org"),
            400,
            "invalid_argument",
            "code: unknown, used or expired code",
        )
    wait = assert_limited(await verify(http, "ada@example.org"), 900)
    t.refused(
        await verify(http, "bob@example.org"),
        400,
        "invalid_argument",
        "code: unknown, used or expired code",
    )
    clock.advance(wait)
    t.refused(
        await verify(http, "ada@example.org"),
        400,
        "invalid_argument",
        "code: unknown, used or expired code",
    )


@pytest.mark.asyncio
async def test_sixty_attempts_a_minute_in_all(http: Client, clock: t.Clock) -> None:
    for index in range(60):
        t.refused(
            await verify(http, f"user{index}@example.org"),
            400,
            "invalid_argument",
            "code: unknown, used or expired code",
        )
    wait = assert_limited(await verify(http, "fresh@example.org"), 60)
    assert_limited(await register(http, "other@example.org"), 60)
    clock.advance(wait)
    t.refused(
        await verify(http, "fresh@example.org"),
        400,
        "invalid_argument",
        "code: unknown, used or expired code",
    )


# ---------------------------------------------------------------- pending cap


@pytest.mark.asyncio
async def test_at_most_1024_registrations_wait_for_their_code(
    http: Client, smtp: Any, clock: t.Clock
) -> None:
    now = int(clock())
    async with http.store.serialized() as session:
        for index in range(MAX_PENDING - 1):
            key = hashlib.sha256(f"filler{index}".encode()).hexdigest()
            session.add(
                PendingAccount(
                    identity_hash=key,
                    code_hash=key,
                    created=now,
                    expires=now + 900,
                    attempts=0,
                )
            )
    assert (await register(http, "last@example.org")).status_code == 202
    full = await register(http, "one-too-many@example.org")
    assert full.status_code == 429
    assert full.json()["error"]["code"] == "limit_exceeded"
    assert len(smtp.messages) == 1
    clock.advance(900)
    assert (await register(http, "one-too-many@example.org")).status_code == 202
    assert await count(http, PendingAccount) == 1


# ---------------------------------------------------------------- bodies


@pytest.mark.asyncio
async def test_a_body_over_4_kib_is_refused_unread(http: Client, smtp: Any) -> None:
    big = await http.post(
        "/v1/accounts/register", json={"email": "a@example.org", "locale": "x" * 5000}
    )
    assert big.status_code == 413
    assert big.json()["error"]["code"] == "too_large"
    assert smtp.messages == []


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "body",
    [
        b"{",
        b"[]",
        b'{"email": 5}',
        b'{"email": "a@example.org", "admin": true}',
        b'{"email": "a@example.org", "password": "correct horse battery"}',
        b'{"username": "ada", "password": "correct horse battery"}',
    ],
)
async def test_a_malformed_body_is_refused_and_sends_nothing(
    http: Client, smtp: Any, body: bytes
) -> None:
    response = await http.post(
        "/v1/accounts/register", content=body, headers={"content-type": "application/json"}
    )
    assert response.status_code in (400, 422), response.text
    assert response.json()["error"]["code"] in ("invalid_argument", "invalid_request")
    assert "correct horse" not in response.text
    assert smtp.messages == []


# ---------------------------------------------------------------- username mode


@pytest.mark.asyncio
async def test_a_username_account_is_made_at_once(usernames: Client) -> None:
    body = {"username": "Ada_1", "password": PASSWORD}
    created = await usernames.post("/v1/accounts/register", json=body)
    assert created.status_code == 201, created.text
    account = created.json()
    assert (account["id"], account["node"]) == ("ada_1", "a")
    session = await usernames.get("/v1/session", headers=t.bearer(account["credential"]))
    assert session.json()["vaults"] == [account["vault"]]
    records = (await usernames.get("/v1/audit", headers=t.ADMIN)).text
    assert '"reason":"username registration"' in records
    assert PASSWORD not in records
    again = await usernames.post(
        "/v1/accounts/register", json={"username": "ADA_1", "password": PASSWORD}
    )
    t.refused(again, 409, "exists", "account 'ada_1' already exists")
    assert await count(usernames, Account) == 1


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"username": "center-admin", "password": PASSWORD}, 400),
        ({"username": "sbm_" + "x" * 20, "password": PASSWORD}, 400),
        ({"username": "ab", "password": PASSWORD}, 400),
        ({"username": "ädam", "password": PASSWORD}, 400),
        ({"username": "a b c", "password": PASSWORD}, 400),
        ({"username": "ada", "password": "too short"}, 400),
        ({"username": "ada"}, 400),
        ({"email": "ada@example.org"}, 400),
    ],
)
async def test_a_bad_username_registration_creates_nothing(
    usernames: Client, body: dict[str, Any], status: int
) -> None:
    refused = await usernames.post("/v1/accounts/register", json=body)
    assert refused.status_code == status, refused.text
    assert "too short" not in refused.text
    assert await count(usernames, Member) == 0


@pytest.mark.asyncio
async def test_username_mode_has_no_codes_to_verify(usernames: Client) -> None:
    body = {"email": "ada@example.org", "code": "A" * 43, "password": PASSWORD}
    refused = await usernames.post("/v1/accounts/verify", json=body)
    assert refused.status_code == 403
    assert "username" in refused.json()["error"]["message"]


@pytest.mark.asyncio
async def test_a_username_may_be_tried_three_times_in_15_minutes(usernames: Client) -> None:
    for _ in range(3):
        body = {"username": "ada", "password": "too short"}
        t.refused(
            await usernames.post("/v1/accounts/register", json=body),
            400,
            "invalid_argument",
            "password: use 12-256 UTF-8 bytes",
        )
    body = {"username": "ada", "password": PASSWORD}
    assert_limited(await usernames.post("/v1/accounts/register", json=body), 900)
