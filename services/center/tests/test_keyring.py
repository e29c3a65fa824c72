"""Key rotation: a restart with a new secret retires the old key, which stays in the JWKS
until the last token it signed has expired, so no valid token stops working."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from center import testing as t
from center.config import Settings
from tickets import KeySet, SigningKey
from tickets.keys import b64url_decode, b64url_encode
from tickets.verify import DEFAULT_SKEW

NEW_SECRET = b64url_encode(bytes(range(32)))


def header_kid(token: str) -> str:
    kid: str = json.loads(b64url_decode(token.split(".", maxsplit=1)[0]))["kid"]
    return kid


async def _jwks(client: httpx.AsyncClient) -> dict[str, Any]:
    document: dict[str, Any] = (await client.get("/.well-known/jwks.json")).json()
    return document


@pytest.mark.asyncio
async def test_the_public_key_is_the_secrets(client: httpx.AsyncClient, settings: Settings) -> None:
    key = settings.signing_key()
    body = (await client.get("/v1/public-key")).json()
    assert body["kid"] == key.kid
    assert body["public_key"] == b64url_encode(key.public.raw)
    assert body["jwk"] == key.public.to_jwk()
    assert "d" not in body["jwk"]
    assert KeySet.from_jwks(await _jwks(client)).get(key.kid) is not None


@pytest.mark.asyncio
async def test_a_new_secret_retires_the_old_key_until_its_last_token_expires(
    settings: Settings, clock: t.Clock
) -> None:
    async with t.running(settings, clock) as app, t.client(app) as client:
        credential = await t.add_member(client, "alice")
        body = {"resource": [t.RESOURCE], "minutes": 120}
        old_token = (
            await client.post("/v1/tokens", json=body, headers=t.bearer(credential))
        ).json()
    old_kid = settings.signing_key().kid
    rotated = settings.model_copy(update={"secret": settings.secret.__class__(NEW_SECRET)})
    new_kid = SigningKey.from_secret(NEW_SECRET).kid
    async with t.running(rotated, clock) as app, t.client(app) as client:
        keys = {k["kid"]: k for k in (await _jwks(client))["keys"]}
        assert set(keys) == {old_kid, new_kid}
        assert keys[old_kid]["not_after"] == old_token["expires_at"] + DEFAULT_SKEW
        assert "not_after" not in keys[new_kid]
        assert (await t.verifier(client, clock)).verify(old_token["token"]).kid == old_kid
        fresh = (await client.post("/v1/tokens", json=body, headers=t.bearer(credential))).json()
        assert (
            json.loads(__import__("base64").urlsafe_b64decode(fresh["token"].split(".")[0] + "=="))[
                "kid"
            ]
            == new_kid
        )
        clock.advance(120 * 60 + DEFAULT_SKEW + 1)
        assert {k["kid"] for k in (await _jwks(client))["keys"]} == {new_kid}
        actions = [
            json.loads(line)["action"]
            for line in (await client.get("/v1/audit", headers=t.ADMIN)).text.splitlines()
        ]
        assert actions.count("key.activate") == 2
        assert actions.count("key.retire") == 1


@pytest.mark.asyncio
async def test_an_unused_old_key_leaves_at_once(settings: Settings, clock: t.Clock) -> None:
    async with t.running(settings, clock):
        pass
    rotated = settings.model_copy(update={"secret": settings.secret.__class__(NEW_SECRET)})
    async with t.running(rotated, clock) as app, t.client(app) as client:
        clock.advance(DEFAULT_SKEW + 1)
        kids = {k["kid"] for k in (await _jwks(client))["keys"]}
    assert kids == {SigningKey.from_secret(NEW_SECRET).kid}


@pytest.mark.asyncio
async def test_switching_back_reactivates_the_old_key(settings: Settings, clock: t.Clock) -> None:
    rotated = settings.model_copy(update={"secret": settings.secret.__class__(NEW_SECRET)})
    for config in (settings, rotated, settings):
        async with t.running(config, clock) as app, t.client(app) as client:
            keys = (await _jwks(client))["keys"]
    active = [k["kid"] for k in keys if "not_after" not in k]
    assert active == [settings.signing_key().kid]
