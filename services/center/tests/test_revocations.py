"""The revocation feed: signed, monotonic, one content per seq, and what nodes refuse by it.

The property at the end: a generation bump (any change of a member's authority, a
credential rotation or a removal) kills every token the member held before it.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from center import revocations
from center import testing as t
from center.config import Settings
from tickets import KeySet, RevocationState, TokenError, verify_snapshot


async def snapshot(client: httpx.AsyncClient) -> Any:
    keys = KeySet.from_jwks((await client.get("/.well-known/jwks.json")).json())
    body = (await client.get("/v1/revocations")).json()
    verified, _kid = verify_snapshot(body["snapshot"], keys, issuer=t.ISSUER)
    assert verified.seq == body["seq"]
    return verified


@pytest.mark.asyncio
async def test_the_snapshot_is_signed_by_the_active_key(client: httpx.AsyncClient) -> None:
    kid = (await client.get("/v1/public-key")).json()["kid"]
    keys = KeySet.from_jwks((await client.get("/.well-known/jwks.json")).json())
    body = (await client.get("/v1/revocations")).json()
    _, signed_by = verify_snapshot(body["snapshot"], keys, issuer=t.ISSUER)
    assert signed_by == kid


@pytest.mark.asyncio
async def test_the_seq_changes_exactly_when_the_content_does(client: httpx.AsyncClient) -> None:
    first = await snapshot(client)
    assert (await snapshot(client)).seq == first.seq
    issued = (
        await client.post(
            "/v1/grants", json={"vault": "team", "resource": [t.RESOURCE]}, headers=t.ADMIN
        )
    ).json()
    assert (await snapshot(client)).seq == first.seq
    await client.delete(f"/v1/grants/{issued['id']}", headers=t.ADMIN)
    revoked = await snapshot(client)
    assert revoked.seq == first.seq + 1
    assert revoked.grants == {issued["id"]: issued["expiry"]}
    assert (await snapshot(client)).seq == revoked.seq


@pytest.mark.asyncio
async def test_an_expired_revocation_leaves_under_a_new_seq(
    client: httpx.AsyncClient, clock: t.Clock
) -> None:
    body = {"vault": "team", "minutes": 1, "resource": [t.RESOURCE]}
    issued = (await client.post("/v1/grants", json=body, headers=t.ADMIN)).json()
    await client.delete(f"/v1/grants/{issued['id']}", headers=t.ADMIN)
    held = await snapshot(client)
    assert issued["id"] in held.grants
    clock.advance(60 + 61)
    later = await snapshot(client)
    assert later.grants == {}
    assert later.seq == held.seq + 1
    state = RevocationState()
    state.update(held, signed_by="k", now=clock())
    assert state.update(later, signed_by="k", now=clock())


@pytest.mark.asyncio
async def test_removed_and_changed_members_carry_a_minimum_generation(
    client: httpx.AsyncClient,
) -> None:
    await t.add_member(client, "alice")
    await t.add_member(client, "bob")
    assert (await snapshot(client)).min_gen == {}
    await client.delete("/v1/members/alice", headers=t.ADMIN)
    await client.patch("/v1/members/bob", json={"role": "admin"}, headers=t.ADMIN)
    assert (await snapshot(client)).min_gen == {"alice": 2, "bob": 2}


@pytest.mark.asyncio
async def test_the_snapshot_carries_a_checkpoint_of_the_audit_head(
    client: httpx.AsyncClient,
) -> None:
    await t.add_member(client, "alice")
    checkpoint = (await snapshot(client)).checkpoint
    assert checkpoint is not None
    last = (await client.get("/v1/audit", headers=t.ADMIN)).text.splitlines()[-1]
    assert f'"seq":{checkpoint.seq},' in last
    assert f'"hash":"{checkpoint.hash}"' in last


@pytest.mark.asyncio
async def test_the_feed_answers_without_authentication_and_uncached(
    client: httpx.AsyncClient,
) -> None:
    response = await client.get("/v1/revocations")
    assert response.status_code == 200
    assert response.headers["Cache-Control"] == "no-cache"


# ---------------------------------------------------------------- property


CHANGES = {
    "role": {"role": "admin", "scope": "read_write_delete"},
    "vaults": {"vaults": ["team", "ops"]},
    "rotate": {"rotate_credential": True},
}


async def _bump(live: t.Live, change: str, tokens: int) -> None:
    client, clock = live.client, live.clock
    victim, bystander = live.fresh("m"), live.fresh("m")
    held: dict[str, list[str]] = {}
    for name in (victim, bystander):
        credential = await t.add_member(client, name, ["team"], role="owner", scope="all")
        body = {"resource": [t.RESOURCE]}
        minted = [
            (await client.post("/v1/tokens", json=body, headers=t.bearer(credential))).json()
            for _ in range(tokens)
        ]
        grant_body = {"vault": "team", "resource": [t.RESOURCE]}
        grant = await client.post("/v1/grants", json=grant_body, headers=t.bearer(credential))
        held[name] = [m["token"] for m in minted] + [grant.json()["token"]]
    if change == "remove":
        await client.delete(f"/v1/members/{victim}", headers=t.ADMIN)
    else:
        await client.patch(f"/v1/members/{victim}", json=CHANGES[change], headers=t.ADMIN)
    verifier = await t.verifier(client, clock)
    for token in held[victim]:
        with pytest.raises(TokenError) as refused:
            verifier.verify(token)
        assert refused.value.reason in {"generation", "revoked"}
    for token in held[bystander]:
        assert verifier.verify(token)


@hypothesis_settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(change=st.sampled_from([*CHANGES, "remove"]), tokens=st.integers(1, 3))
def test_a_generation_bump_kills_every_older_token(live: t.Live, change: str, tokens: int) -> None:
    live.run(_bump(live, change, tokens))


@pytest.mark.asyncio
async def test_a_publisher_that_read_before_a_revocation_never_publishes_after_it(
    postgres_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two centers on one database: one reads the feed's content, then stalls; a grant is
    revoked and the other publishes. The newest seq must hold the revocation."""
    read, go = asyncio.Event(), asyncio.Event()
    original = revocations._revoked

    async def stalling(session: Any, now: int) -> dict[str, Any]:
        content = await original(session, now)
        if not read.is_set():
            read.set()
            await go.wait()
        return content

    async with (
        t.running(postgres_settings) as one,
        t.running(postgres_settings) as other,
        t.client(other) as http,
    ):
        body = {"vault": "team", "scope": "read", "minutes": 30, "resource": [t.RESOURCE]}
        grant = (await http.post("/v1/grants", json=body, headers=t.ADMIN)).json()["id"]
        monkeypatch.setattr(revocations, "_revoked", stalling)
        first, second = one.state.center, other.state.center
        stale = asyncio.create_task(revocations.publish(first.store, first.keyring, t.ISSUER))
        await read.wait()
        assert (await http.delete(f"/v1/grants/{grant}", headers=t.ADMIN)).status_code == 200
        fresh = asyncio.create_task(revocations.publish(second.store, second.keyring, t.ISSUER))
        await asyncio.wait({fresh}, timeout=2)  # done at once unless the feed row is locked
        go.set()
        published = [await stale, await fresh]
        keys = KeySet.from_jwks((await http.get("/.well-known/jwks.json")).json())
    newest = max(published, key=lambda answer: answer["seq"])
    verified, _kid = verify_snapshot(newest["snapshot"], keys, issuer=t.ISSUER)
    assert grant in verified.grants
