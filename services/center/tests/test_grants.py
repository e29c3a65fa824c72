"""Grants: who may issue, the caps a grant never exceeds, depth, and transitive revocation.

The last tests are properties (hypothesis) over random delegation chains and trees, run
against the real service: a child never exceeds its parent in scope, vault or lifetime,
depth stays at most 2, and revoking any ancestor kills every descendant at a node.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from center import grants
from center import testing as t
from tickets import SCOPES, TokenError
from tickets.scopes import EXPANSION


async def issue(client: httpx.AsyncClient, headers: dict[str, str], **body: Any) -> httpx.Response:
    return await client.post("/v1/grants", json={"resource": [t.RESOURCE], **body}, headers=headers)


@pytest.mark.asyncio
async def test_the_operator_issues_to_an_anonymous_principal(
    client: httpx.AsyncClient, clock: t.Clock
) -> None:
    response = await issue(client, t.ADMIN, vault="team", scope="rw", minutes=10)
    assert response.status_code == 201
    grant = response.json()
    assert grant["grantee"] == grant["id"]
    assert (grant["issued_by"], grant["depth"], grant["chain"]) == (
        "center-admin",
        1,
        [grant["id"]],
    )
    assert grant["expiry"] == int(clock()) + 600
    ticket = (await t.verifier(client, clock)).verify(grant["token"])
    assert (ticket.principal, ticket.grant_id, ticket.kind) == (grant["id"], grant["id"], "grant")
    assert ticket.permissions == {"read", "write"}


@pytest.mark.asyncio
async def test_an_owner_issues_to_a_member_of_its_vault(
    client: httpx.AsyncClient, clock: t.Clock
) -> None:
    owner = await t.add_member(client, "olga", role="owner", scope="allow_all")
    await t.add_member(client, "bob", role="editor", scope="rw")
    grant = (await issue(client, t.bearer(owner), vault="team", scope="rw", grantee="bob")).json()
    assert (grant["issued_by"], grant["grantee"], grant["role"]) == ("olga", "bob", "editor")
    ticket = (await t.verifier(client, clock)).verify(grant["token"])
    assert (ticket.principal, ticket.role) == ("bob", "editor")


@pytest.mark.asyncio
async def test_readers_and_editors_cannot_issue(client: httpx.AsyncClient) -> None:
    for role, scope in (("reader", "read"), ("editor", "rw")):
        member = await t.add_member(client, role, role=role, scope=scope)
        response = await issue(client, t.bearer(member), vault="team", scope="read")
        t.refused(
            response,
            403,
            "forbidden",
            "only an admin or owner of vault 'team' may issue grants in it",
        )


@pytest.mark.asyncio
async def test_an_issuer_never_exceeds_its_own_scope_or_vault(client: httpx.AsyncClient) -> None:
    admin = t.bearer(await t.add_member(client, "ada", role="admin", scope="read"))
    t.refused(
        await issue(client, admin, vault="team", scope="rw"),
        403,
        "forbidden",
        "requested permissions exceed the issuer's: write not held",
    )
    t.refused(
        await issue(client, admin, vault="ops", scope="read"),
        403,
        "forbidden",
        "only an admin or owner of vault 'ops' may issue grants in it",
    )
    assert (await issue(client, admin, vault="team", scope="read")).status_code == 201


@pytest.mark.asyncio
@pytest.mark.parametrize("minutes", [0, 61])
async def test_grants_live_1_to_60_minutes(client: httpx.AsyncClient, minutes: int) -> None:
    t.refused(
        await issue(client, t.ADMIN, vault="team", minutes=minutes),
        422,
        "invalid_request",
        "minutes",
    )


@pytest.mark.asyncio
async def test_grantee_rules(client: httpx.AsyncClient) -> None:
    admin = t.bearer(await t.add_member(client, "ada", role="admin", scope="rwd"))
    await t.add_member(client, "olga", role="owner", scope="allow_all")
    await t.add_member(client, "reed", role="reader", scope="read")
    await t.add_member(client, "stranger", ["ops"])
    cases = {
        "center-admin": "never a grantee",
        "olga": "above your role",
        "stranger": "not a principal",
        "ghost": "not a principal",
    }
    for grantee, message in cases.items():
        response = await issue(client, admin, vault="team", grantee=grantee)
        assert response.status_code == 403, grantee
        assert message in response.json()["error"]["message"]
    too_much = await issue(client, admin, vault="team", scope="rw", grantee="reed")
    assert "cap of the grantee's role" in too_much.json()["error"]["message"]
    operator = await issue(client, t.ADMIN, vault="team", grantee="center-admin")
    t.refused(operator, 403, "forbidden", "center-admin is never a grantee")


@pytest.mark.asyncio
async def test_delegation_stops_at_depth_two(client: httpx.AsyncClient) -> None:
    owners = [
        t.bearer(await t.add_member(client, f"o{i}", role="owner", scope="all")) for i in range(4)
    ]
    root = (
        await issue(client, owners[0], vault="team", scope="rw", minutes=30, grantee="o1")
    ).json()
    child = await issue(
        client, owners[1], vault="team", scope="read", minutes=20, grantee="o2", parent=root["id"]
    )
    assert child.status_code == 201
    assert (child.json()["depth"], child.json()["chain"]) == (2, [root["id"], child.json()["id"]])
    grandchild = await issue(
        client,
        owners[2],
        vault="team",
        scope="read",
        minutes=10,
        grantee="o3",
        parent=child.json()["id"],
    )
    assert grandchild.status_code == 403
    assert "depth 2" in grandchild.json()["error"]["message"]


@pytest.mark.asyncio
async def test_only_the_grantee_delegates_under_a_grant(client: httpx.AsyncClient) -> None:
    owners = [
        t.bearer(await t.add_member(client, f"o{i}", role="owner", scope="all")) for i in range(3)
    ]
    root = (await issue(client, owners[0], vault="team", minutes=30, grantee="o1")).json()
    response = await issue(client, owners[2], vault="team", parent=root["id"])
    assert response.status_code == 403
    assert "only the grantee" in response.json()["error"]["message"]


@pytest.mark.asyncio
async def test_a_child_cannot_outlive_its_parent(client: httpx.AsyncClient, clock: t.Clock) -> None:
    owners = [
        t.bearer(await t.add_member(client, f"o{i}", role="owner", scope="all")) for i in range(2)
    ]
    root = (await issue(client, owners[0], vault="team", minutes=10, grantee="o1")).json()
    clock.advance(7 * 60)
    too_long = await issue(client, owners[1], vault="team", minutes=4, parent=root["id"])
    assert too_long.status_code == 403
    assert "at most 3 minutes" in too_long.json()["error"]["message"]
    fits = await issue(client, owners[1], vault="team", minutes=3, parent=root["id"])
    assert fits.status_code == 201
    assert fits.json()["expiry"] == root["expiry"]


@pytest.mark.asyncio
async def test_listing_never_returns_token_material(client: httpx.AsyncClient) -> None:
    owner = t.bearer(await t.add_member(client, "olga", role="owner", scope="all"))
    issued = (await issue(client, owner, vault="team")).json()
    for headers in (t.ADMIN, owner):
        listed = await client.get("/v1/grants", headers=headers)
        assert [g["id"] for g in listed.json()["grants"]] == [issued["id"]]
        assert issued["token"] not in listed.text
        assert "token" not in listed.json()["grants"][0]


@pytest.mark.asyncio
async def test_managers_see_only_their_vaults_grants(client: httpx.AsyncClient) -> None:
    ops_admin = t.bearer(await t.add_member(client, "ada", ["ops"], role="admin", scope="read"))
    await issue(client, t.ADMIN, vault="team")
    mine = (await issue(client, ops_admin, vault="ops")).json()
    listed = (await client.get("/v1/grants", headers=ops_admin)).json()["grants"]
    assert [g["id"] for g in listed] == [mine["id"]]
    editor = t.bearer(await t.add_member(client, "ed", ["ops"], role="editor"))
    assert (await client.get("/v1/grants", headers=editor)).json()["grants"] == []


@pytest.mark.asyncio
async def test_revoking_a_grant_revokes_its_descendants(
    client: httpx.AsyncClient, clock: t.Clock
) -> None:
    owners = [
        t.bearer(await t.add_member(client, f"o{i}", role="owner", scope="all")) for i in range(3)
    ]
    root = (await issue(client, owners[0], vault="team", minutes=30, grantee="o1")).json()
    child = (
        await issue(client, owners[1], vault="team", minutes=20, grantee="o2", parent=root["id"])
    ).json()
    other = (await issue(client, owners[0], vault="team", minutes=30, grantee="o2")).json()
    revoked = await client.delete(f"/v1/grants/{root['id']}", headers=owners[0])
    assert revoked.json()["revoked"] == [root["id"], child["id"]]
    verifier = await t.verifier(client, clock)
    for grant in (root, child):
        with pytest.raises(TokenError, match="revoked"):
            verifier.verify(grant["token"])
    assert verifier.verify(other["token"]).grant_id == other["id"]
    again = await client.delete(f"/v1/grants/{root['id']}", headers=t.ADMIN)
    t.refused(again, 409, "conflict", "is already revoked")


@pytest.mark.asyncio
async def test_strangers_cannot_revoke_or_see_a_grant(client: httpx.AsyncClient) -> None:
    issued = (await issue(client, t.ADMIN, vault="team")).json()
    stranger = t.bearer(await t.add_member(client, "sam", ["ops"], role="owner", scope="all"))
    t.refused(
        await client.delete(f"/v1/grants/{issued['id']}", headers=stranger),
        404,
        "not_found",
        "no grant",
    )
    t.refused(
        await client.delete("/v1/grants/nope", headers=t.ADMIN), 404, "not_found", "no grant 'nope'"
    )


@pytest.mark.asyncio
async def test_changing_a_member_revokes_what_it_issued_and_received(
    client: httpx.AsyncClient,
) -> None:
    owners = [
        t.bearer(await t.add_member(client, f"o{i}", role="owner", scope="all")) for i in range(3)
    ]
    given = (await issue(client, owners[0], vault="team", minutes=30, grantee="o1")).json()
    under = (
        await issue(client, owners[1], vault="team", minutes=20, grantee="o2", parent=given["id"])
    ).json()
    unrelated = (await issue(client, owners[2], vault="team", minutes=30)).json()
    changed = await client.patch(
        "/v1/members/o0", json={"role": "admin", "scope": "rwd"}, headers=t.ADMIN
    )
    assert changed.json()["revoked_grants"] == [given["id"], under["id"]]
    listed = {
        g["id"]: g["revoked"]
        for g in (await client.get("/v1/grants", headers=t.ADMIN)).json()["grants"]
    }
    assert listed[unrelated["id"]] is None


@pytest.mark.asyncio
async def test_access_lists_the_principals_of_a_vault(client: httpx.AsyncClient) -> None:
    owner = t.bearer(await t.add_member(client, "olga", ["team"], role="owner", scope="all"))
    await t.add_member(client, "all", ["*"])
    await t.add_member(client, "elsewhere", ["ops"])
    issued = (await issue(client, owner, vault="team")).json()
    view = (await client.get("/v1/access/team", headers=owner)).json()
    assert [m["id"] for m in view["members"]] == ["all", "olga"]
    assert [g["id"] for g in view["grants"]] == [issued["id"]]
    reader = t.bearer(await t.add_member(client, "reed"))
    t.refused(
        await client.get("/v1/access/team", headers=reader),
        403,
        "forbidden",
        "only an admin or owner of vault 'team' may see its access",
    )


@pytest.mark.asyncio
async def test_expired_grants_disappear(client: httpx.AsyncClient, clock: t.Clock) -> None:
    await issue(client, t.ADMIN, vault="team", minutes=1)
    clock.advance(61)
    assert (await client.get("/v1/grants", headers=t.ADMIN)).json()["grants"] == []


@pytest.mark.asyncio
async def test_active_grants_are_capped(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(grants, "MAX_ACTIVE", 2)
    for _ in range(2):
        assert (await issue(client, t.ADMIN, vault="team")).status_code == 201
    capped = await issue(client, t.ADMIN, vault="team")
    assert capped.status_code == 429
    assert capped.json()["error"]["code"] == "limit_exceeded"


@pytest.mark.asyncio
async def test_grant_changes_are_audited_with_issuer_and_parent(client: httpx.AsyncClient) -> None:
    owners = [
        t.bearer(await t.add_member(client, f"o{i}", role="owner", scope="all")) for i in range(2)
    ]
    root = (
        await issue(client, owners[0], vault="team", minutes=30, grantee="o1", reason="sync")
    ).json()
    child = (await issue(client, owners[1], vault="team", minutes=5, parent=root["id"])).json()
    await client.delete(f"/v1/grants/{root['id']}", headers=t.ADMIN)
    lines = [
        line
        for line in (await client.get("/v1/audit?vault=team", headers=t.ADMIN)).text.splitlines()
        if '"action":"grant.' in line
    ]
    assert f'"object":"grant:{root["id"]}"' in lines[0]
    assert '"reason":"sync"' in lines[0]
    assert f'"via_grant":"{root["id"]}"' in lines[1]
    assert '"issued_by":"o1"' in lines[1]
    assert '"action":"grant.revoke"' in lines[2]
    assert '"action":"grant.revoke"' in lines[3]
    assert all(child["token"] not in line and root["token"] not in line for line in lines)


# ---------------------------------------------------------------- properties


PROPERTY = hypothesis_settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
step = st.tuples(st.sampled_from(SCOPES), st.integers(1, 60), st.booleans(), st.integers(0, 40))


async def _owners(live: t.Live, count: int) -> list[tuple[str, dict[str, str]]]:
    owners = []
    for _ in range(count):
        name = live.fresh("o")
        credential = await t.add_member(live.client, name, ["*"], role="owner", scope="all")
        owners.append((name, t.bearer(credential)))
    return owners


async def _chain(live: t.Live, steps: list[tuple[str, int, bool, int]]) -> None:
    owners = await _owners(live, len(steps) + 1)
    vault, other = live.fresh("v"), live.fresh("v")
    parent: dict[str, Any] | None = None
    for depth, (scope, minutes, same_vault, wait) in enumerate(steps):
        live.clock.advance(wait)
        body = {"vault": vault if same_vault or parent is None else other, "scope": scope}
        body.update(minutes=minutes, grantee=owners[depth + 1][0])
        if parent is not None:
            body["parent"] = parent["id"]
        response = await issue(live.client, owners[depth][1], **body)
        violates = parent is not None and (
            not EXPANSION[scope] <= EXPANSION[parent["scope"]]
            or body["vault"] != parent["vault"]
            or live.clock() + minutes * 60 > parent["expiry"]
            or parent["depth"] >= 2
        )
        assert response.status_code == (403 if violates else 201), (body, response.text)
        if violates:
            return
        child = response.json()
        if parent is not None:
            assert EXPANSION[child["scope"]] <= EXPANSION[parent["scope"]]
            assert child["vault"] == parent["vault"]
            assert child["expiry"] <= parent["expiry"]
            assert child["chain"] == [*parent["chain"], child["id"]]
        assert child["depth"] == len(child["chain"]) <= 2
        parent = child


@PROPERTY
@given(steps=st.lists(step, min_size=1, max_size=4))
def test_a_child_never_exceeds_its_parent(
    live: t.Live, steps: list[tuple[str, int, bool, int]]
) -> None:
    live.run(_chain(live, steps))


async def _tree(live: t.Live, parents: list[int], victim: int) -> None:
    owners = await _owners(live, len(parents) + 1)
    vault, issued = live.fresh("v"), []
    for index, parent in enumerate(parents):
        under = issued[parent % len(issued)] if issued and parent >= 0 else None
        if under is not None and under["depth"] >= 2:
            under = None
        issuer = owners[0] if under is None else next(o for o in owners if o[0] == under["grantee"])
        body: dict[str, Any] = {"vault": vault, "minutes": 30 if under is None else 10}
        body.update(grantee=owners[index + 1][0], parent=under["id"] if under else None)
        response = await issue(live.client, issuer[1], **body)
        assert response.status_code == 201, response.text
        issued.append(response.json())
    target = issued[victim % len(issued)]
    await live.client.delete(f"/v1/grants/{target['id']}", headers=t.ADMIN)
    verifier = await t.verifier(live.client, live.clock)
    for grant in issued:
        if target["id"] in grant["chain"]:
            with pytest.raises(TokenError, match="revoked"):
                verifier.verify(grant["token"])
        else:
            assert verifier.verify(grant["token"]).grant_id == grant["id"]


@PROPERTY
@given(parents=st.lists(st.integers(-1, 8), min_size=1, max_size=8), victim=st.integers(0, 8))
def test_revoking_an_ancestor_kills_every_descendant(
    live: t.Live, parents: list[int], victim: int
) -> None:
    live.run(_tree(live, parents, victim))
