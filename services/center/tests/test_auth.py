"""Bearer credentials: the operator's admin token, members' credentials, and who gets 401."""

from __future__ import annotations

import hashlib

import httpx
import pytest

from center import testing as t
from center.auth import MEMBER_PREFIX, digest, new_credential, presented
from center.errors import UnauthorizedError

CONTENT_ROUTES = [("GET", "/v1/session", None), ("POST", "/v1/tokens", {"resource": [t.RESOURCE]})]


def test_credentials_are_256_random_bits_with_a_prefix() -> None:
    first, second = new_credential(), new_credential()
    assert first.startswith(MEMBER_PREFIX)
    assert len(first) == len(MEMBER_PREFIX) + 43
    assert first != second


def test_the_digest_is_sha256_hex() -> None:
    assert digest("x") == hashlib.sha256(b"x").hexdigest()


@pytest.mark.parametrize("value", [None, "", "   ", "x" * 9000])
def test_a_missing_or_oversized_credential_is_unauthorized(value: str | None) -> None:
    with pytest.raises(UnauthorizedError):
        presented(value)


@pytest.mark.asyncio
@pytest.mark.parametrize(("method", "path", "body"), CONTENT_ROUTES)
async def test_the_admin_token_gets_401_on_content_routes(
    client: httpx.AsyncClient, method: str, path: str, body: object
) -> None:
    response = await client.request(method, path, json=body, headers=t.ADMIN)
    assert response.status_code == 401
    assert "admin token" in response.json()["error"]["message"]


@pytest.mark.asyncio
async def test_unknown_credentials_and_other_schemes_are_401(client: httpx.AsyncClient) -> None:
    for headers in (
        {},
        t.bearer("sbm_not-a-real-credential-at-all"),
        {"Authorization": f"Basic {t.ADMIN_TOKEN}"},
        {"Authorization": t.ADMIN_TOKEN},
    ):
        response = await client.get("/v1/grants", headers=headers)
        t.refused(response, 401, "unauthorized")


@pytest.mark.asyncio
async def test_a_member_credential_authenticates_its_member(client: httpx.AsyncClient) -> None:
    credential = await t.add_member(client, "alice", ["team", "ops"], role="admin")
    session = (await client.get("/v1/session", headers=t.bearer(credential))).json()
    assert session["principal"] == "alice"
    assert session["vaults"] == ["ops", "team"]
    assert (session["can_read"], session["can_write"], session["can_delete"]) == (
        True,
        False,
        False,
    )
    assert credential not in str(session)


@pytest.mark.asyncio
async def test_a_write_only_member_can_see_its_session(client: httpx.AsyncClient) -> None:
    credential = await t.add_member(client, "w", scope="write")
    session = (await client.get("/v1/session", headers=t.bearer(credential))).json()
    assert (session["can_read"], session["can_write"]) == (False, True)


@pytest.mark.asyncio
async def test_a_removed_member_is_unauthorized_at_once(client: httpx.AsyncClient) -> None:
    credential = await t.add_member(client, "alice")
    await client.delete("/v1/members/alice", headers=t.ADMIN)
    t.refused(
        await client.get("/v1/session", headers=t.bearer(credential)),
        401,
        "unauthorized",
        "unknown or revoked credential",
    )
