"""Self-service accounts by e-mail, end to end on both databases: a real SMTP server with
a throw-away CA carries the code; redeeming it makes a member owning a new vault placed
on a node. Codes are single use and expire; failures create nothing and leak nothing."""

from __future__ import annotations

import asyncio
import io
import json
import re
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
import pytest_asyncio
from argon2 import PasswordHasher, Type
from sqlalchemy import func, select

from center import testing as t
from center.config import Settings
from center.db.models import Account, Member, PendingAccount
from center.log import configure_logging
from center.passwords import Passwords
from center.store import Store

ADDRESS = "ada@example.org"
PASSWORD = "correct horse battery staple"
NODE = "https://node-a.test/mcp"
CODE = re.compile(r"^    ([A-Za-z0-9_-]{43})\r?$", re.MULTILINE)


def quick() -> Passwords:
    """argon2id at test cost: the real parameters are tested in test_passwords."""
    return Passwords(PasswordHasher(time_cost=1, memory_cost=8, parallelism=1, type=Type.ID))


class Client(httpx.AsyncClient):
    """A client of one in-process center that can also look into its store."""

    store: Store


@asynccontextmanager
async def opened(settings: Settings, clock: t.Clock) -> AsyncIterator[Client]:
    async with t.running(settings, clock, quick()) as app:
        transport = httpx.ASGITransport(app=app)
        async with Client(transport=transport, base_url=t.ISSUER) as http:
            http.store = app.state.center.store
            yield http


async def add_node(http: httpx.AsyncClient, node_id: str = "a", resource: str = NODE) -> str:
    created = await http.post(
        "/v1/nodes", json={"id": node_id, "resource": resource}, headers=t.ADMIN
    )
    assert created.status_code == 201, created.text
    credential: str = created.json()["credential"]
    beat = await http.post("/v1/nodes/heartbeat", json={}, headers=t.bearer(credential))
    assert beat.status_code == 200, beat.text
    return credential


def code_in(message: Any) -> str:
    found = CODE.search(message.get_content())
    assert found, message.get_content()
    return found[1]


async def register(http: httpx.AsyncClient, email: str = ADDRESS, **extra: Any) -> httpx.Response:
    return await http.post("/v1/accounts/register", json={"email": email, **extra})


async def verify(
    http: httpx.AsyncClient, code: str, email: str = ADDRESS, password: str = PASSWORD
) -> httpx.Response:
    body = {"email": email, "code": code, "password": password}
    return await http.post("/v1/accounts/verify", json=body)


async def audit(http: httpx.AsyncClient) -> list[dict[str, Any]]:
    lines = (await http.get("/v1/audit", headers=t.ADMIN)).text.splitlines()
    return [json.loads(line) for line in lines]


async def count(http: Client, model: Any) -> int:
    async with http.store.read() as session:
        return int(await session.scalar(select(func.count()).select_from(model)) or 0)


@pytest.fixture
def logs() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    configure_logging("info", stream)
    yield stream
    configure_logging("info")


@pytest_asyncio.fixture
async def http(
    mail_settings: Callable[..., Settings], smtp: Any, clock: t.Clock
) -> AsyncIterator[Client]:
    async with opened(mail_settings(smtp), clock) as client:
        await add_node(client)
        yield client


# ---------------------------------------------------------------- the whole way


@pytest.mark.asyncio
async def test_a_verified_address_becomes_a_member_owning_a_placed_vault(
    http: Client, smtp: Any, logs: io.StringIO
) -> None:
    accepted = await register(http, "  Ada@Example.ORG ", locale="de-AT")
    assert accepted.status_code == 202, accepted.text
    [mail] = smtp.messages
    assert (mail["To"], mail["Content-Language"]) == (ADDRESS, "de")
    assert smtp.secured == [True]
    code = code_in(mail)
    created = await verify(http, code, email="ADA@example.org")
    assert created.status_code == 201, created.text
    assert created.headers["Cache-Control"] == "no-store"
    account = created.json()
    assert account["credential"].startswith("sbm_")
    assert (account["role"], account["scope"]) == ("owner", "allow_all")
    assert (account["node"], account["mcp_url"]) == ("a", NODE)
    assert re.fullmatch(r"v-[0-9a-f]{16}", account["vault"])
    member = (await http.get(f"/v1/members/{account['id']}", headers=t.ADMIN)).json()
    assert (member["email"], member["vaults"], member["password"]) == (
        ADDRESS,
        [account["vault"]],
        True,
    )
    session = await http.get("/v1/session", headers=t.bearer(account["credential"]))
    assert session.json()["vaults"] == [account["vault"]]
    nodes = (await http.get("/v1/nodes", headers=t.ADMIN)).json()["nodes"]
    assert nodes[0]["placements"] == [account["vault"]]
    vaults = await http.get("/v1/vaults", headers=t.bearer(account["credential"]))
    assert vaults.json()["vaults"][0]["mcp_url"] == NODE
    records = await audit(http)
    actions = [r["action"] for r in records]
    assert actions[-3:] == ["account.request", "account.create", "node.place"]
    assert records[-2]["subject"] == account["id"]
    assert records[-2]["vault"] == account["vault"]
    for text in ("\n".join(json.dumps(r) for r in records), logs.getvalue()):
        assert ADDRESS not in text.lower()
        for secret in (code, PASSWORD, account["credential"]):
            assert secret not in text


@pytest.mark.asyncio
async def test_the_node_learns_its_new_vault_from_its_heartbeat(http: Client, smtp: Any) -> None:
    await register(http)
    account = (await verify(http, code_in(smtp.messages[0]))).json()
    node_b = await add_node(http, "b", "https://node-b.test/mcp")
    beat = await http.post("/v1/nodes/heartbeat", json={}, headers=t.bearer(node_b))
    assert beat.json()["placements"] == []
    nodes = (await http.get("/v1/nodes", headers=t.ADMIN)).json()["nodes"]
    assert {n["id"]: n["placements"] for n in nodes} == {"a": [account["vault"]], "b": []}


@pytest.mark.asyncio
@pytest.mark.parametrize("tls", ["starttls", "tls"])
async def test_both_tls_modes_deliver_the_code(
    tls: str, mail_settings: Callable[..., Settings], smtp_servers: Any, clock: t.Clock
) -> None:
    server = smtp_servers(tls)
    async with opened(mail_settings(server), clock) as http:
        await add_node(http)
        assert (await register(http)).status_code == 202
        assert server.secured == [True]
        assert (await verify(http, code_in(server.messages[0]))).status_code == 201


# ---------------------------------------------------------------- codes


@pytest.mark.asyncio
async def test_a_code_works_once(http: Client, smtp: Any) -> None:
    await register(http)
    code = code_in(smtp.messages[0])
    assert (await verify(http, code)).status_code == 201
    again = await verify(http, code)
    assert again.status_code == 400
    assert again.json()["error"]["code"] == "invalid_argument"
    assert await count(http, Account) == 1


@pytest.mark.asyncio
async def test_two_redemptions_at_once_make_one_account(http: Client, smtp: Any) -> None:
    await register(http)
    code = code_in(smtp.messages[0])
    answers = await asyncio.gather(*(verify(http, code) for _ in range(4)))
    assert sorted(a.status_code for a in answers) == [201, 400, 400, 400]
    assert await count(http, Account) == 1


@pytest.mark.asyncio
async def test_a_code_expires_after_15_minutes(http: Client, smtp: Any, clock: t.Clock) -> None:
    await register(http)
    code = code_in(smtp.messages[0])
    clock.advance(15 * 60)
    t.refused(
        await verify(http, code), 400, "invalid_argument", "code: unknown, used or expired code"
    )
    assert await count(http, Member) == 0
    assert (await register(http)).status_code == 202
    assert len(smtp.messages) == 2
    assert (await verify(http, code_in(smtp.messages[1]))).status_code == 201


@pytest.mark.asyncio
async def test_asking_again_inside_the_window_sends_no_second_mail(http: Client, smtp: Any) -> None:
    first, second = await register(http), await register(http, ADDRESS.upper(), locale="fr")
    assert first.json() == second.json()
    assert len(smtp.messages) == 1
    assert await count(http, PendingAccount) == 1


@pytest.mark.asyncio
async def test_wrong_codes_burn_the_registration(http: Client, smtp: Any) -> None:
    await register(http)
    code = code_in(smtp.messages[0])
    for _ in range(5):
        wrong = await verify(http, "A" * 43)
        t.refused(wrong, 400, "invalid_argument", "code: unknown, used or expired code")
    t.refused(
        await verify(http, code), 400, "invalid_argument", "code: unknown, used or expired code"
    )
    assert await count(http, PendingAccount) == 0
    rejects = [r["reason"] for r in await audit(http) if r["action"] == "account.reject"]
    assert rejects == ["wrong code"] * 4 + ["wrong code; registration cancelled"]


@pytest.mark.asyncio
async def test_a_short_password_keeps_the_code_usable(http: Client, smtp: Any) -> None:
    await register(http)
    code = code_in(smtp.messages[0])
    short = await verify(http, code, password="too short")
    assert short.status_code == 400
    assert "too short" not in short.text
    assert (await verify(http, code)).status_code == 201


@pytest.mark.asyncio
async def test_an_address_with_an_account_gets_the_same_answer_and_no_mail(
    http: Client, smtp: Any
) -> None:
    await register(http)
    assert (await verify(http, code_in(smtp.messages[0]))).status_code == 201
    again = await register(http)
    assert again.status_code == 202
    assert len(smtp.messages) == 1


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "email", ["ada", "ada@localhost", "ädä@example.org", "a@b.c\r\nBcc: x@y.z", " ", "a" * 300]
)
async def test_a_bad_address_is_refused_before_any_mail(
    http: Client, smtp: Any, email: str
) -> None:
    refused = await register(http, email)
    if refused.status_code == 422:  # over the field's length: refused by the body's schema
        t.refused(refused, 422, "invalid_request", "email")
    else:
        t.refused(refused, 400, "invalid_argument", "email: use an ASCII address")
    assert smtp.messages == []


# ---------------------------------------------------------------- failures create nothing


@pytest.mark.asyncio
async def test_a_mail_server_failure_answers_503_and_creates_nothing(
    http: Client, smtp: Any, logs: io.StringIO
) -> None:
    smtp.refuse = True
    failed = await register(http)
    assert failed.status_code == 503
    assert failed.json()["error"]["code"] == "mail_failed"
    assert await count(http, PendingAccount) == 0
    assert "account.request" not in [r["action"] for r in await audit(http)]
    assert ADDRESS not in logs.getvalue()
    smtp.refuse = False
    assert (await register(http)).status_code == 202
    assert len(smtp.messages) == 1


@pytest.mark.asyncio
async def test_an_untrusted_mail_server_certificate_creates_nothing(
    mail_settings: Callable[..., Settings], smtp_servers: Any, clock: t.Clock
) -> None:
    stranger = smtp_servers(trusted=False)
    async with opened(mail_settings(stranger), clock) as http:
        await add_node(http)
        failed = await register(http)
        assert failed.status_code == 503
        assert "SSLCertVerificationError" in failed.json()["error"]["message"]
        assert stranger.messages == []
        assert await count(http, PendingAccount) == 0


@pytest.mark.asyncio
async def test_without_a_node_the_code_survives_until_one_is_registered(
    mail_settings: Callable[..., Settings], smtp: Any, clock: t.Clock
) -> None:
    async with opened(mail_settings(smtp), clock) as http:
        await register(http)
        code = code_in(smtp.messages[0])
        refused = await verify(http, code)
        t.refused(refused, 503, "unavailable", "no vault node is registered to hold a new vault")
        assert await count(http, Member) == 0
        await add_node(http)
        assert (await verify(http, code)).status_code == 201


# ---------------------------------------------------------------- placement


@pytest.mark.asyncio
async def test_a_new_vault_goes_to_the_live_node_holding_fewest_vaults(
    mail_settings: Callable[..., Settings], smtp: Any, clock: t.Clock
) -> None:
    async with opened(mail_settings(smtp), clock) as http:
        busy = await add_node(http, "a", NODE)
        await http.post(
            "/v1/nodes/heartbeat", json={"vaults": ["team", "ops"]}, headers=t.bearer(busy)
        )
        await add_node(http, "b", "https://node-b.test/mcp")
        silent = await http.post(
            "/v1/nodes",
            json={"id": "c", "resource": "https://node-c.test/mcp"},
            headers=t.ADMIN,
        )
        assert silent.status_code == 201
        placed = []
        for index in range(3):
            address = f"user{index}@example.org"
            await register(http, address)
            created = await verify(http, code_in(smtp.messages[-1]), email=address)
            placed.append(created.json()["node"])
        assert placed == ["b", "b", "a"]


# ---------------------------------------------------------------- closed, full, public view


@pytest.mark.asyncio
async def test_registration_is_off_by_default(client: httpx.AsyncClient) -> None:
    shown = await client.get("/v1/accounts")
    assert shown.json()["registration"] == "off"
    closed = await register(client)
    assert closed.status_code == 403
    assert "closed" in closed.json()["error"]["message"]
    body = {"email": ADDRESS, "code": "x" * 43, "password": PASSWORD}
    t.refused(
        await client.post("/v1/accounts/verify", json=body),
        403,
        "forbidden",
        "registration is closed on this center",
    )
    username = {"username": "ada", "password": PASSWORD}
    t.refused(
        await client.post("/v1/accounts/register", json=username),
        403,
        "forbidden",
        "registration is closed on this center",
    )
    assert (await client.get("/v1/members", headers=t.ADMIN)).json() == {"members": []}


@pytest.mark.asyncio
async def test_the_public_view_never_shows_smtp_settings(http: Any) -> None:
    shown = await http.get("/v1/accounts")
    assert shown.json() == {
        "registration": "email",
        "locales": ["en", "de", "fr", "es"],
        "code_minutes": 15,
        "password_bytes": [12, 256],
    }
    assert "smtp" not in shown.text
    assert "127.0.0.1" not in shown.text


@pytest.mark.asyncio
async def test_a_full_center_takes_no_more_registrations(
    mail_settings: Callable[..., Settings], smtp: Any, clock: t.Clock
) -> None:
    async with opened(mail_settings(smtp, max_accounts=1), clock) as http:
        await add_node(http)
        await register(http)
        assert (await verify(http, code_in(smtp.messages[0]))).status_code == 201
        full = await register(http, "bob@example.org")
        t.refused(full, 403, "forbidden", "this center takes no more registrations")
        assert len(smtp.messages) == 1


@pytest.mark.asyncio
async def test_the_account_role_and_scope_follow_the_settings(
    mail_settings: Callable[..., Settings], smtp: Any, clock: t.Clock
) -> None:
    settings = mail_settings(smtp, account_role="editor", account_scope="rw")
    async with opened(settings, clock) as http:
        await add_node(http)
        await register(http)
        account = (await verify(http, code_in(smtp.messages[0]))).json()
        assert (account["role"], account["scope"]) == ("editor", "read_write")


@pytest.mark.asyncio
async def test_a_locked_center_mails_no_code_it_could_not_keep(http: Client, smtp: Any) -> None:
    http.store.locked = "a test locked the store"
    refused = await register(http)
    assert refused.status_code == 503
    assert refused.json()["error"]["code"] == "restart_required"
    assert smtp.messages == []
