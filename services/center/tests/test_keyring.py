"""Key rotation: a restart with a new secret retires the old key, which stays in the JWKS
until the last token it signed has expired, so no valid token stops working."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from center import testing as t
from center.config import Settings
from center.console.testing import Browser
from center.errors import ConfigError
from tickets import KeySet, RevocationState, SigningKey, TokenError
from tickets.keys import b64url_decode, b64url_encode
from tickets.verify import DEFAULT_SKEW

NEW_SECRET = b64url_encode(bytes(range(32)))
TOKEN_LIKE = "eyJhbGciOiJFZDI1NTE5In0.eyJzdWIiOiJ4In0.c2ln"


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


async def _rotated_with_old_token(
    settings: Settings, clock: t.Clock
) -> tuple[Settings, dict[str, Any], str]:
    """A center that signed a token, then restarted on NEW_SECRET: (settings, token, member)."""
    async with t.running(settings, clock) as app, t.client(app) as client:
        credential = await t.add_member(client, "alice")
        body = {"resource": [t.RESOURCE], "minutes": 120}
        old = (await client.post("/v1/tokens", json=body, headers=t.bearer(credential))).json()
    rotated = settings.model_copy(update={"secret": settings.secret.__class__(NEW_SECRET)})
    return rotated, old, credential


@pytest.mark.asyncio
async def test_revoking_a_retired_key_refuses_its_tokens_at_the_next_snapshot(
    settings: Settings, clock: t.Clock
) -> None:
    rotated, old, _ = await _rotated_with_old_token(settings, clock)
    old_kid = settings.signing_key().kid
    async with t.running(rotated, clock) as app, t.client(app) as client:
        before = (await client.get("/v1/revocations")).json()["seq"]
        assert (await t.verifier(client, clock)).verify(old["token"]).kid == old_kid
        answer = await client.post(
            f"/v1/keys/{old_kid}/revoke", json={"reason": "laptop lost"}, headers=t.ADMIN
        )
        assert answer.status_code == 200, answer.text
        assert answer.json() == {"kid": old_kid, "revoked": True, "revocation_seq": before + 1}
        feed = (await client.get("/v1/revocations")).json()
        assert feed["seq"] == before + 1
        state = RevocationState()
        state.accept(feed["snapshot"], KeySet.from_jwks(await _jwks(client)), issuer=t.ISSUER)
        assert state.snapshot is not None
        assert old_kid in state.snapshot.revoked_kids
        assert old_kid not in {k["kid"] for k in (await _jwks(client))["keys"]}
        with pytest.raises(TokenError) as refused:
            (await t.verifier(client, clock)).verify(old["token"])
        assert refused.value.reason in {"unknown_kid", "key_revoked"}
        records = [
            json.loads(line)
            for line in (await client.get("/v1/audit", headers=t.ADMIN)).text.splitlines()
        ]
        revoke = [r for r in records if r["action"] == "key.revoke"]
        assert len(revoke) == 1
        assert (revoke[0]["actor"], revoke[0]["object"]) == ("center-admin", f"key:{old_kid}")
        assert revoke[0]["reason"] == "laptop lost"


@pytest.mark.asyncio
async def test_a_node_holding_the_old_jwks_refuses_the_revoked_kid_by_the_snapshot(
    settings: Settings, clock: t.Clock
) -> None:
    rotated, old, _ = await _rotated_with_old_token(settings, clock)
    old_kid = settings.signing_key().kid
    async with t.running(rotated, clock) as app, t.client(app) as client:
        node = await t.verifier(client, clock)  # its key set still trusts the old key
        await client.post(f"/v1/keys/{old_kid}/revoke", headers=t.ADMIN)
        snapshot = (await client.get("/v1/revocations")).json()["snapshot"]
        node.revocation.accept(snapshot, node.keys, issuer=t.ISSUER, now=clock())
        with pytest.raises(TokenError) as refused:
            node.verify(old["token"])
    assert refused.value.reason == "key_revoked"


@pytest.mark.asyncio
async def test_key_revoke_refuses_the_active_an_unknown_and_a_revoked_key(
    settings: Settings, clock: t.Clock
) -> None:
    rotated, _, credential = await _rotated_with_old_token(settings, clock)
    old_kid = settings.signing_key().kid
    async with t.running(rotated, clock) as app, t.client(app) as client:
        active = await client.post(f"/v1/keys/{rotated.signing_key().kid}/revoke", headers=t.ADMIN)
        assert active.status_code == 409
        assert "key rotate" in active.json()["error"]["message"]
        unknown = await client.post("/v1/keys/no-such-kid/revoke", headers=t.ADMIN)
        t.refused(unknown, 404, "not_found", "no key 'no-such-kid'")
        t.refused(
            await client.post(f"/v1/keys/{old_kid}/revoke"),
            401,
            "unauthorized",
            "send Authorization:",
        )
        member = await client.post(f"/v1/keys/{old_kid}/revoke", headers=t.bearer(credential))
        t.refused(member, 403, "forbidden", "only the operator's admin token may do this")
        extra = await client.post(
            f"/v1/keys/{old_kid}/revoke", json={"reason": "x", "kid": "y"}, headers=t.ADMIN
        )
        t.refused(extra, 422, "invalid_request", "kid: Extra inputs are not permitted")
        token_shaped = await client.post(
            f"/v1/keys/{old_kid}/revoke", json={"reason": f"see {TOKEN_LIKE}"}, headers=t.ADMIN
        )
        t.refused(token_shaped, 400, "invalid_argument", "reason: looks like a token")
        first = await client.post(f"/v1/keys/{old_kid}/revoke", headers=t.ADMIN)
        second = await client.post(f"/v1/keys/{old_kid}/revoke", headers=t.ADMIN)
        assert (first.status_code, second.status_code) == (200, 409)
        actions = [
            json.loads(line)["action"]
            for line in (await client.get("/v1/audit", headers=t.ADMIN)).text.splitlines()
        ]
    assert actions.count("key.revoke") == 1


@pytest.mark.asyncio
async def test_the_center_refuses_to_start_with_a_revoked_key(
    settings: Settings, clock: t.Clock
) -> None:
    rotated, _, _ = await _rotated_with_old_token(settings, clock)
    async with t.running(rotated, clock) as app, t.client(app) as client:
        revoked = await client.post(
            f"/v1/keys/{settings.signing_key().kid}/revoke", headers=t.ADMIN
        )
        assert revoked.status_code == 200
    with pytest.raises(ConfigError, match="was revoked"):
        async with t.running(settings, clock):
            pass


@pytest.mark.asyncio
async def test_the_tokens_page_offers_no_revoke_for_a_token_whose_key_is_revoked(
    settings: Settings, clock: t.Clock
) -> None:
    rotated, old, credential = await _rotated_with_old_token(settings, clock)
    clock.advance(60)  # the restart on the new secret comes after the old token
    async with t.running(rotated, clock) as app, t.client(app) as client:
        fresh = await client.post(
            "/v1/tokens", json={"resource": [t.RESOURCE]}, headers=t.bearer(credential)
        )
        assert fresh.status_code == 201, fresh.text
        revoked = await client.post(
            f"/v1/keys/{settings.signing_key().kid}/revoke", headers=t.ADMIN
        )
        assert revoked.status_code == 200, revoked.text
        operator = Browser(client)
        await operator.sign_in_operator()
        page = (await operator.get("/console/tokens")).text
    rows = {row.split('class="mono">')[1].split("<")[0]: row for row in page.split("<tr>")[2:]}
    assert 'class="badge">key revoked' in rows[old["jti"]]
    assert "/revoke" not in rows[old["jti"]]
    assert f"/console/tokens/{fresh.json()['jti']}/revoke" in rows[fresh.json()["jti"]]
