"""Path rules at the center: refused when they do not clean, narrowed at every delegation
step (member → grant → sub-grant, request → approval → claim, member → agent token,
member → OAuth sign-in), carried signed in every token, shown by the session, the
listings and the audit log. Every test runs on SQLite and PostgreSQL, over HTTP.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import pytest_asyncio
from fastapi import FastAPI

from center import rules
from center import testing as t
from center.commands._shared import compact
from center.config import Settings
from center.console.web import render
from center.oauth import testing as o
from tickets import Reach, TokenError

ACME = {"team": {"read": ["projects/acme"], "write": ["projects/acme/inbox"]}}
ACME_FULL = {"team": {"read": ["projects/acme"], "write": ["projects/acme/inbox"], "exclude": []}}
INBOX = {"team": {"read": ["projects/acme/inbox"]}}


async def member(client: httpx.AsyncClient, name: str, **fields: Any) -> dict[str, str]:
    return t.bearer(await t.add_member(client, name, **fields))


async def grant(client: httpx.AsyncClient, headers: dict[str, str], **body: Any) -> httpx.Response:
    body = {"vault": "team", "resource": [t.RESOURCE], **body}
    return await client.post("/v1/grants", json=body, headers=headers)


async def token(client: httpx.AsyncClient, headers: dict[str, str], **body: Any) -> httpx.Response:
    return await client.post("/v1/tokens", json={"resource": [t.RESOURCE], **body}, headers=headers)


async def reach(client: httpx.AsyncClient, clock: t.Clock, signed: str) -> Reach | None:
    """What a node reads from the token: its verified path rules in vault `team`."""
    return (await t.verifier(client, clock)).verify(signed).reach("team")


async def audit(client: httpx.AsyncClient, action: str) -> list[dict[str, Any]]:
    lines = (await client.get("/v1/audit", headers=t.ADMIN)).text.splitlines()
    return [r for r in map(json.loads, lines) if r["action"] == action]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("rules", "words"),
    [
        ({"team": {"read": ["../etc"]}}, "path rule '../etc' leaves the vault"),
        ({"team": {"read": [".git"]}}, "no folder of a rule may start with '.'"),
        ({"team": {"read": ["/abs"]}}, "path rule '/abs' is absolute"),
        ({"team": {"read": []}}, "an empty list of read folders reaches nothing"),
        (
            {"team": {"read": ["a"], "write": ["b"]}},
            "write folder 'b' is not inside a read folder (a)",
        ),
        ({"team": {"read": ["a"], "exclude": ["a"]}}, "folder 'a' is excluded entirely"),
        ({"other": {"read": ["a"]}}, "rules for vault 'other', which is not among team"),
        ({"Bad Vault": {"read": ["a"]}}, "paths: use vault names"),
    ],
)
async def test_a_rule_that_does_not_clean_is_refused_naming_it(
    client: httpx.AsyncClient, rules: dict[str, Any], words: str
) -> None:
    body = {"id": "alice", "vaults": ["team"], "paths": rules}
    response = await client.post("/v1/members", json=body, headers=t.ADMIN)
    t.refused(response, 400, "invalid_argument", "paths:", words)
    assert (await client.get("/v1/members/alice", headers=t.ADMIN)).status_code == 404


@pytest.mark.asyncio
async def test_a_members_rules_are_cleaned_stored_and_shown(client: httpx.AsyncClient) -> None:
    rules = {
        "team": {
            "read": [" ./projects\\acme/ ", "projects/acme/x"],
            "exclude": ["projects/acme/hr"],
        }
    }
    body = {"id": "alice", "vaults": ["team"], "paths": rules}
    created = (await client.post("/v1/members", json=body, headers=t.ADMIN)).json()
    cleaned = {
        "read": ["projects/acme"],
        "write": ["projects/acme"],
        "exclude": ["projects/acme/hr"],
    }
    assert created["paths"] == {"team": cleaned}
    assert (await client.get("/v1/members/alice", headers=t.ADMIN)).json()["paths"] == {
        "team": cleaned
    }
    await t.add_member(client, "bob")
    assert (await client.get("/v1/members/bob", headers=t.ADMIN)).json()["paths"] == {}


@pytest.mark.asyncio
async def test_the_session_and_an_agent_token_carry_the_members_rules(
    client: httpx.AsyncClient, clock: t.Clock
) -> None:
    alice = await member(client, "alice", scope="rw", paths=ACME)
    assert (await client.get("/v1/session", headers=alice)).json()["paths"] == ACME_FULL
    minted = (await token(client, alice)).json()
    assert minted["paths"] == ACME_FULL
    assert await reach(client, clock, minted["token"]) == Reach.of(
        ["projects/acme"], ["projects/acme/inbox"]
    )
    listed = (await client.get("/v1/tokens", headers=alice)).json()["tokens"]
    assert [row["paths"] for row in listed] == [ACME_FULL]


@pytest.mark.asyncio
async def test_an_agent_token_narrows_within_the_member_and_never_widens(
    client: httpx.AsyncClient, clock: t.Clock
) -> None:
    alice = await member(client, "alice", vaults=["team", "home"], scope="rw", paths=ACME)
    narrow = await token(client, alice, paths=INBOX)
    assert narrow.status_code == 201, narrow.text
    assert await reach(client, clock, narrow.json()["token"]) == Reach.of(["projects/acme/inbox"])
    t.refused(
        await token(client, alice, paths={"team": {"read": ["projects"]}}),
        403,
        "forbidden",
        "paths in vault 'team' reach further than the rules of alice",
        "read folder 'projects' is outside read projects/acme",
    )
    t.refused(
        await token(client, alice, vaults=["home"], paths=INBOX),
        400,
        "invalid_argument",
        "rules for vault 'team', which is not among home",
    )
    home = (await token(client, alice, vaults=["home"])).json()
    assert home["paths"] == {}
    assert await reach(client, clock, home["token"]) is None


@pytest.mark.asyncio
async def test_a_token_minted_for_another_member_lies_within_both(
    client: httpx.AsyncClient,
) -> None:
    owner = await member(client, "olga", role="owner", scope="allow_all", paths=ACME)
    await t.add_member(client, "bob", scope="read")
    minted = await token(client, owner, member="bob")
    assert minted.json()["paths"] == ACME_FULL
    t.refused(
        await token(client, owner, member="bob", paths={"team": {"read": ["elsewhere"]}}),
        403,
        "forbidden",
        "reach further than the rules of olga",
    )


@pytest.mark.asyncio
async def test_a_grant_lies_within_its_issuer_and_a_sub_grant_within_its_parent(
    client: httpx.AsyncClient, clock: t.Clock
) -> None:
    owner = await member(client, "olga", role="owner", scope="allow_all", paths=ACME)
    await t.add_member(client, "ada", role="admin", scope="rwd")
    t.refused(
        await grant(client, owner, grantee="ada", paths={"team": {"read": ["projects"]}}),
        403,
        "forbidden",
        "paths in vault 'team' reach further than the rules of olga",
    )
    inherited = (await grant(client, owner, grantee="ada", scope="rw")).json()
    assert inherited["paths"] == ACME_FULL
    assert await reach(client, clock, inherited["token"]) == Reach.of(
        ["projects/acme"], ["projects/acme/inbox"]
    )
    as_grant = t.bearer(inherited["token"])
    assert (await client.get("/v1/session", headers=as_grant)).json()["paths"] == ACME_FULL
    t.refused(
        await grant(client, as_grant, grantee="ada", paths={"team": {"read": ["projects/other"]}}),
        403,
        "forbidden",
        f"reach further than the rules of parent grant {inherited['id']}",
        "read folder 'projects/other' is outside",
    )
    child = await grant(client, as_grant, grantee="ada", paths=INBOX, minutes=5)
    assert child.status_code == 201, child.text
    assert await reach(client, clock, child.json()["token"]) == Reach.of(["projects/acme/inbox"])
    same = (await grant(client, as_grant, grantee="ada", minutes=5)).json()
    assert same["paths"] == ACME_FULL


@pytest.mark.asyncio
async def test_a_grant_under_an_exclusion_must_keep_it(client: httpx.AsyncClient) -> None:
    rules = {"team": {"read": ["projects"], "exclude": ["projects/hr"]}}
    owner = await member(client, "olga", role="owner", scope="allow_all", paths=rules)
    t.refused(
        await grant(client, owner, paths={"team": {"read": ["projects"]}}),
        403,
        "forbidden",
        "must exclude 'projects/hr'",
    )
    kept = await grant(client, owner, paths=rules)
    assert kept.status_code == 201, kept.text


@pytest.mark.asyncio
async def test_the_operator_grants_any_rules_and_they_are_signed(
    client: httpx.AsyncClient, clock: t.Clock
) -> None:
    issued = (await grant(client, t.ADMIN, paths=INBOX)).json()
    assert issued["paths"] == {
        "team": {"read": ["projects/acme/inbox"], "write": ["projects/acme/inbox"], "exclude": []}
    }
    assert await reach(client, clock, issued["token"]) == Reach.of(["projects/acme/inbox"])
    listed = (await client.get("/v1/grants", headers=t.ADMIN)).json()["grants"]
    assert [g["paths"] for g in listed] == [issued["paths"]]


@pytest.mark.asyncio
async def test_a_request_asks_for_rules_and_the_approver_narrows_them_only(
    client: httpx.AsyncClient, clock: t.Clock
) -> None:
    bob = await member(client, "bob", scope="rw")
    approver = await member(client, "ada", role="admin", scope="rwd", paths=ACME)
    asked = {"team": {"read": ["projects/acme"]}}
    created = await client.post(
        "/v1/requests", json={"vault": "team", "scope": "rw", "paths": asked}, headers=bob
    )
    request = created.json()
    assert (
        request["paths"]
        == request["asked_paths"]
        == {"team": {"read": ["projects/acme"], "write": ["projects/acme"], "exclude": []}}
    )
    approve = f"/v1/requests/{request['id']}/approve"
    t.refused(
        await client.post(approve, json={}, headers=approver),
        403,
        "forbidden",
        "reach further than your rules as ada",
        "write folder 'projects/acme' is outside",
        "approve less",
    )
    t.refused(
        await client.post(approve, json={"paths": {"team": {"read": ["x"]}}}, headers=approver),
        403,
        "forbidden",
        "reach further than the rules asked for",
    )
    approved = await client.post(approve, json={"paths": ACME}, headers=approver)
    assert approved.status_code == 200, approved.text
    assert approved.json()["paths"] == ACME_FULL
    assert approved.json()["asked_paths"] == request["asked_paths"]
    claimed = await client.post(
        f"/v1/requests/{request['id']}/claim", json={"resource": [t.RESOURCE]}, headers=bob
    )
    assert claimed.status_code == 201, claimed.text
    assert await reach(client, clock, claimed.json()["token"]) == Reach.of(
        ["projects/acme"], ["projects/acme/inbox"]
    )


@pytest.mark.asyncio
async def test_an_ask_for_the_whole_vault_gets_the_approvers_rules(
    client: httpx.AsyncClient,
) -> None:
    bob = await member(client, "bob")
    approver = await member(client, "ada", role="admin", scope="rwd", paths=ACME)
    request = (await client.post("/v1/requests", json={"vault": "team"}, headers=bob)).json()
    approved = await client.post(f"/v1/requests/{request['id']}/approve", headers=approver)
    assert (approved.json()["paths"], approved.json()["asked_paths"]) == (ACME_FULL, {})


@pytest.mark.asyncio
async def test_changing_a_members_rules_bumps_its_generation_and_revokes(
    client: httpx.AsyncClient, clock: t.Clock
) -> None:
    owner = await member(client, "olga", role="owner", scope="allow_all")
    await t.add_member(client, "bob")
    old = (await token(client, owner)).json()["token"]
    issued = (await grant(client, owner, grantee="bob")).json()
    before = (await client.get("/v1/members/olga", headers=t.ADMIN)).json()["generation"]
    changed = await client.patch("/v1/members/olga", json={"paths": INBOX}, headers=t.ADMIN)
    assert changed.json()["generation"] == before + 1
    assert changed.json()["revoked_grants"] == [issued["id"]]
    with pytest.raises(TokenError, match="generation"):
        (await t.verifier(client, clock)).verify(old)
    same = await client.patch("/v1/members/olga", json={"role": "owner"}, headers=t.ADMIN)
    assert same.json()["generation"] == before + 1
    cleared = await client.patch("/v1/members/olga", json={"paths": {}}, headers=t.ADMIN)
    assert (cleared.json()["paths"], cleared.json()["generation"]) == ({}, before + 2)


@pytest.mark.asyncio
async def test_dropping_a_vault_drops_its_rules(client: httpx.AsyncClient) -> None:
    await t.add_member(client, "alice", ("team", "home"), paths=ACME)
    changed = await client.patch("/v1/members/alice", json={"vaults": ["home"]}, headers=t.ADMIN)
    assert changed.json()["paths"] == {}


@pytest.mark.asyncio
async def test_the_audit_records_show_the_rules(client: httpx.AsyncClient) -> None:
    owner = await member(client, "olga", role="owner", scope="allow_all", paths=ACME)
    bob = await member(client, "bob")
    await grant(client, owner)
    await token(client, owner, paths=INBOX)
    await client.post("/v1/requests", json={"vault": "team", "paths": INBOX}, headers=bob)
    await t.add_member(client, "carl")
    inbox = {
        "team": {"exclude": [], "read": ["projects/acme/inbox"], "write": ["projects/acme/inbox"]}
    }
    recorded = {
        action: [
            json.loads(r["paths"]) if "paths" in r else None for r in await audit(client, action)
        ]
        for action in ("member.add", "grant.issue", "token.issue", "request.create")
    }
    assert recorded == {
        "member.add": [ACME_FULL, None, None],
        "grant.issue": [ACME_FULL],
        "token.issue": [inbox],
        "request.create": [inbox],
    }


@pytest_asyncio.fixture
async def signed_in(settings: Settings, clock: t.Clock) -> Any:
    async with t.running(settings, clock, passwords=o.fast_passwords()) as app:
        yield app


@pytest.mark.asyncio
async def test_an_oauth_sign_in_and_its_refresh_carry_the_members_rules(
    signed_in: FastAPI, clock: t.Clock
) -> None:
    async with t.client(signed_in) as http:
        await o.add_node(http)
        await o.add_member(http, paths=ACME)
        client_id, proof = await o.register(http), o.pkce()
        code = await o.code_for(http, client_id, proof)
        issued = (await o.exchange(http, client_id, code, proof)).json()
        assert await reach(http, clock, issued["access_token"]) == Reach.of(
            ["projects/acme"], ["projects/acme/inbox"]
        )
        renewed = (await o.refresh(http, client_id, issued["refresh_token"])).json()
        assert await reach(http, clock, renewed["access_token"]) == Reach.of(
            ["projects/acme"], ["projects/acme/inbox"]
        )
        refreshed = await audit(http, "token.refresh")
        assert [json.loads(r["paths"]) for r in refreshed] == [ACME_FULL]


@pytest.mark.asyncio
async def test_rules_without_read_folders_read_the_whole_vault(
    client: httpx.AsyncClient, clock: t.Clock
) -> None:
    """`read` left out: the whole vault minus the exclusions, written only where it says."""
    whole = {"team": {"write": ["inbox"], "exclude": ["hr"]}}
    headers = await member(client, "wanda", paths=whole)
    shown = (await client.get("/v1/session", headers=headers)).json()["paths"]
    assert shown == {"team": {"read": None, "write": ["inbox"], "exclude": ["hr"]}}
    minted = (await token(client, headers)).json()
    assert await reach(client, clock, minted["token"]) == Reach.of(None, ["inbox"], ["hr"])


def test_a_scope_that_cannot_write_is_shown_without_write_folders() -> None:
    """A read-only grant's write rules grant nothing; listings leave them out."""
    both = {"demo": {"read": ["wiki"], "write": ["wiki"]}}
    assert rules.describe(both, "read") == "demo: read wiki"
    assert rules.describe(both, "read_write") == "demo: read wiki; write wiki"
    assert rules.describe(both) == "demo: read wiki; write wiki"
    assert compact({"scope": "read", "paths": both})["paths"] == "demo: read wiki"
    page = render("grant_claimed.html", issued=claimed(both), me=None)
    assert "read wiki" in page.body.decode()
    assert "write wiki" not in page.body.decode()


def claimed(paths: dict[str, Any]) -> dict[str, Any]:
    return {
        "vault": "demo",
        "scope": "read",
        "expiry": 1796177850,
        "audience": [t.RESOURCE],
        "paths": paths,
        "token": "x.y.z",
        "id": "g1",
    }
