"""Requests (docs/design.md#requests): create → approve | reject | cancel | expire → claim,
exactly once.

The last test is stateful (hypothesis RuleBasedStateMachine): random sequences of
creates, decisions, cancels, claims and clock jumps by random actors, checked call by
call against a small reference model of the seed's rules.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    invariant,
    rule,
    run_state_machine_as_test,
)

from center import requests
from center import testing as t
from center.config import Settings
from tickets import make_record, to_line

DAY = 86_400


@dataclass
class Cast:
    requester: dict[str, str]
    approver: dict[str, str]
    other: dict[str, str]


async def cast(client: httpx.AsyncClient, prefix: str = "") -> Cast:
    return Cast(
        t.bearer(await t.add_member(client, f"{prefix}rita", role="editor", scope="rw")),
        t.bearer(await t.add_member(client, f"{prefix}ada", role="admin", scope="rwd")),
        t.bearer(await t.add_member(client, f"{prefix}otto", role="editor", scope="rw")),
    )


async def ask(client: httpx.AsyncClient, headers: dict[str, str], **body: Any) -> httpx.Response:
    return await client.post("/v1/requests", json={"vault": "team", **body}, headers=headers)


async def act(
    client: httpx.AsyncClient, headers: dict[str, str], request_id: str, verb: str
) -> httpx.Response:
    body = {"resource": [t.RESOURCE]} if verb == "claim" else None
    return await client.post(f"/v1/requests/{request_id}/{verb}", json=body, headers=headers)


@pytest.mark.asyncio
async def test_approve_then_claim_issues_the_grant_once(
    client: httpx.AsyncClient, clock: t.Clock
) -> None:
    people = await cast(client)
    created = (await ask(client, people.requester, scope="rw", minutes=20, reason="sync")).json()
    assert created["state"] == "pending"
    approved = await act(client, people.approver, created["id"], "approve")
    assert approved.json()["state"] == "approved"
    assert "token" not in approved.json()
    clock.advance(3600)
    claimed = await act(client, people.requester, created["id"], "claim")
    assert claimed.status_code == 201
    grant = claimed.json()
    assert (grant["issued_by"], grant["grantee"], grant["request_id"]) == (
        "ada",
        "rita",
        created["id"],
    )
    assert grant["expiry"] == int(clock()) + 20 * 60
    ticket = (await t.verifier(client, clock)).verify(grant["token"])
    assert (ticket.principal, ticket.permissions) == ("rita", {"read", "write"})
    again = await act(client, people.requester, created["id"], "claim")
    t.refused(again, 409, "conflict", "is claimed; only an approved one is claimed")
    listed = (await client.get("/v1/requests", headers=people.requester)).json()["requests"]
    assert listed[0]["state"] == "claimed"
    assert listed[0]["grant_id"] == grant["id"]
    assert grant["token"] not in json.dumps(listed)


@pytest.mark.asyncio
async def test_a_claim_stays_claimed_after_a_restart(settings: Settings, clock: t.Clock) -> None:
    async with t.running(settings, clock) as app, t.client(app) as client:
        people = await cast(client)
        created = (await ask(client, people.requester)).json()
        await act(client, people.approver, created["id"], "approve")
        assert (await act(client, people.requester, created["id"], "claim")).status_code == 201
    async with t.running(settings, clock) as app, t.client(app) as client:
        t.refused(
            await act(client, people.requester, created["id"], "claim"),
            409,
            "conflict",
            "is claimed; only an approved one is claimed",
        )


@pytest.mark.asyncio
async def test_parallel_claims_have_exactly_one_winner(client: httpx.AsyncClient) -> None:
    people = await cast(client)
    created = (await ask(client, people.requester)).json()
    await act(client, people.approver, created["id"], "approve")
    results = await asyncio.gather(
        *(act(client, people.requester, created["id"], "claim") for _ in range(8))
    )
    winners = [r for r in results if r.status_code == 201]
    assert [w.json()["request_id"] for w in winners] == [created["id"]]
    for loser in (r for r in results if r.status_code != 201):
        t.refused(loser, 409, "conflict", "is claimed; only an approved one is claimed")


@pytest.mark.asyncio
async def test_the_requester_never_decides_its_own_request(client: httpx.AsyncClient) -> None:
    boss = t.bearer(await t.add_member(client, "boss", role="owner", scope="all"))
    created = (await ask(client, boss)).json()
    for verb in ("approve", "reject"):
        response = await act(client, boss, created["id"], verb)
        assert response.status_code == 403
        assert "your own request" in response.json()["error"]["message"]
    assert (await act(client, boss, created["id"], "cancel")).json()["state"] == "cancelled"


@pytest.mark.asyncio
async def test_only_managers_and_named_approvers_decide(client: httpx.AsyncClient) -> None:
    people = await cast(client)
    second = t.bearer(await t.add_member(client, "amy", role="admin", scope="rwd"))
    created = (await ask(client, people.requester, approvers=["amy"])).json()
    t.refused(
        await act(client, people.other, created["id"], "approve"), 404, "not_found", "no request"
    )
    t.refused(
        await act(client, people.approver, created["id"], "approve"),
        403,
        "forbidden",
        "you are not an approver of request",
    )
    t.refused(
        await act(client, t.ADMIN, created["id"], "approve"),
        403,
        "forbidden",
        "you are not an approver of request",
    )
    assert (await act(client, second, created["id"], "reject")).json()["state"] == "rejected"
    self_named = await ask(client, people.requester, approvers=["rita"])
    t.refused(self_named, 403, "forbidden", "you cannot approve your own request")


@pytest.mark.asyncio
async def test_a_decision_happens_once(client: httpx.AsyncClient) -> None:
    people = await cast(client)
    created = (await ask(client, people.requester)).json()
    assert (await act(client, t.ADMIN, created["id"], "approve")).status_code == 200
    for verb in ("approve", "reject"):
        t.refused(
            await act(client, people.approver, created["id"], verb),
            409,
            "conflict",
            "is already approved",
        )


@pytest.mark.asyncio
async def test_only_the_requester_claims_with_its_member_credential(
    client: httpx.AsyncClient,
) -> None:
    people = await cast(client)
    created = (await ask(client, people.requester)).json()
    await act(client, people.approver, created["id"], "approve")
    t.refused(
        await act(client, people.approver, created["id"], "claim"),
        403,
        "forbidden",
        "only the requester may claim, with its own member credential",
    )
    t.refused(
        await act(client, people.other, created["id"], "claim"), 404, "not_found", "no request"
    )
    t.refused(
        await act(client, t.ADMIN, created["id"], "claim"),
        401,
        "unauthorized",
        "the admin token is not accepted here",
    )
    assert (await act(client, people.requester, created["id"], "claim")).status_code == 201


@pytest.mark.asyncio
async def test_an_approver_bounds_what_it_approves(client: httpx.AsyncClient) -> None:
    rita = t.bearer(await t.add_member(client, "rita", role="owner", scope="all"))
    await t.add_member(client, "ada", role="admin", scope="read")
    ada = t.bearer(
        (
            await client.patch("/v1/members/ada", json={"rotate_credential": True}, headers=t.ADMIN)
        ).json()["credential"]
    )
    created = (await ask(client, rita, scope="rw")).json()
    t.refused(
        await act(client, ada, created["id"], "approve"),
        403,
        "forbidden",
        "requested permissions exceed the issuer's: write not held",
    )
    small = (await ask(client, rita, scope="read")).json()
    response = await act(client, ada, small["id"], "approve")
    assert response.status_code == 403
    assert "role owner is above yours" in response.json()["error"]["message"]


@pytest.mark.asyncio
async def test_a_request_stays_within_the_requesters_vault_and_role(
    client: httpx.AsyncClient,
) -> None:
    reader = t.bearer(await t.add_member(client, "reed", role="reader"))
    t.refused(
        await ask(client, reader, scope="rw"),
        403,
        "forbidden",
        "read_write exceeds the cap of your role reader",
    )
    t.refused(
        await ask(client, reader, vault="ops"),
        403,
        "forbidden",
        "you are not a member of vault 'ops', so you cannot ask for access to it"
        " (your vaults: team); ask its owner or the operator to add you to it",
    )
    t.refused(
        await ask(client, t.ADMIN), 401, "unauthorized", "the admin token is not accepted here"
    )


@pytest.mark.asyncio
async def test_a_changed_member_voids_the_approval(client: httpx.AsyncClient) -> None:
    people = await cast(client)
    created = (await ask(client, people.requester)).json()
    await act(client, people.approver, created["id"], "approve")
    await client.patch("/v1/members/ada", json={"vaults": ["team", "ops"]}, headers=t.ADMIN)
    response = await act(client, people.requester, created["id"], "claim")
    assert response.status_code == 409
    assert "request again" in response.json()["error"]["message"]


@pytest.mark.asyncio
async def test_pending_requests_are_capped(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    people = await cast(client)
    for _ in range(requests.MAX_PENDING_PER_REQUESTER):
        assert (await ask(client, people.requester)).status_code == 201
    t.refused(
        await ask(client, people.requester),
        429,
        "limit_exceeded",
        "you have 20 pending requests for team",
    )
    t.refused(
        await ask(client, people.requester, vault="team", scope="read"),
        429,
        "limit_exceeded",
        "you have 20 pending requests for team",
    )
    monkeypatch.setattr(requests, "MAX_PENDING_PER_VAULT", requests.MAX_PENDING_PER_REQUESTER + 1)
    assert (await ask(client, people.other)).status_code == 201
    capped = await ask(client, people.other)
    assert capped.status_code == 429
    assert "vault team" in capped.json()["error"]["message"]


@pytest.mark.asyncio
async def test_requests_expire_after_seven_days_by_the_system(
    client: httpx.AsyncClient, clock: t.Clock
) -> None:
    people = await cast(client)
    pending = (await ask(client, people.requester)).json()
    approved = (await ask(client, people.requester)).json()
    await act(client, people.approver, approved["id"], "approve")
    clock.advance(7 * DAY + 1)
    states = {
        r["id"]: r["state"]
        for r in (await client.get("/v1/requests", headers=t.ADMIN)).json()["requests"]
    }
    assert states == {pending["id"]: "expired", approved["id"]: "expired"}
    t.refused(
        await act(client, people.approver, pending["id"], "approve"),
        409,
        "conflict",
        "is already expired",
    )
    t.refused(
        await act(client, people.requester, approved["id"], "claim"),
        409,
        "conflict",
        "is expired; only an approved one is claimed",
    )
    expiries = [
        json.loads(line)
        for line in (await client.get("/v1/audit", headers=t.ADMIN)).text.splitlines()
    ]
    expired = [r for r in expiries if r["action"] == "request.expire"]
    assert {(r["actor"], r["request_id"]) for r in expired} == {
        ("system", pending["id"]),
        ("system", approved["id"]),
    }


@pytest.mark.asyncio
async def test_finished_requests_are_forgotten_after_thirty_days(
    client: httpx.AsyncClient, clock: t.Clock
) -> None:
    people = await cast(client)
    created = (await ask(client, people.requester)).json()
    await act(client, people.requester, created["id"], "cancel")
    clock.advance(30 * DAY - 10)
    assert len((await client.get("/v1/requests", headers=t.ADMIN)).json()["requests"]) == 1
    clock.advance(11)
    assert (await client.get("/v1/requests", headers=t.ADMIN)).json()["requests"] == []
    t.refused(
        await act(client, people.requester, created["id"], "claim"), 404, "not_found", "no request"
    )


@pytest.mark.asyncio
async def test_listing_shows_own_requests_and_decidable_ones(client: httpx.AsyncClient) -> None:
    people = await cast(client)
    mine = (await ask(client, people.requester)).json()
    assert [
        r["id"]
        for r in (await client.get("/v1/requests", headers=people.approver)).json()["requests"]
    ] == [mine["id"]]
    assert (await client.get("/v1/requests", headers=people.other)).json()["requests"] == []
    await act(client, people.approver, mine["id"], "reject")
    assert (await client.get("/v1/requests?state=pending", headers=people.approver)).json()[
        "requests"
    ] == []


@pytest.mark.asyncio
async def test_a_decision_the_database_lost_is_restored_from_the_log(
    sqlite_settings: Settings, clock: t.Clock
) -> None:
    async with t.running(sqlite_settings, clock) as app, t.client(app) as client:
        people = await cast(client)
        created = (await ask(client, people.requester)).json()
        await act(client, people.approver, created["id"], "approve")
    path = sqlite_settings.data_dir / "audit.jsonl"
    last = json.loads(path.read_text().splitlines()[-1])
    lost = make_record(
        (last["seq"], last["hash"]), action="request.claim", actor="rita", request_id=created["id"]
    )
    with path.open("a") as log:
        log.write(to_line(lost) + "\n")
    async with t.running(sqlite_settings, clock) as app, t.client(app) as client:
        t.refused(
            await act(client, people.requester, created["id"], "claim"),
            409,
            "conflict",
            "is claimed; only an approved one is claimed",
        )
        lines = (await client.get("/v1/audit", headers=t.ADMIN)).text.splitlines()
    recover = json.loads(lines[-1])
    assert (recover["action"], recover["object"]) == ("audit.recover", f"request:{created['id']}")


# ---------------------------------------------------------------- stateful


@dataclass
class Model:
    """The reference: each request's state and the time of its last transition."""

    state: str
    last: int
    decided: int | None = None


def run_machine(live: t.Live) -> None:
    class Requests(RuleBasedStateMachine):
        ids = Bundle("ids")

        def __init__(self) -> None:
            super().__init__()
            self.people = live.run(cast(live.client, live.fresh("p")))
            self.model: dict[str, Model] = {}

        def now(self) -> int:
            return int(live.clock())

        def settle(self) -> None:
            for request_id, item in list(self.model.items()):
                if (item.state == "pending" and item.last + requests.PENDING_TTL < self.now()) or (
                    item.state == "approved"
                    and (item.decided or 0) + requests.PENDING_TTL < self.now()
                ):
                    item.state, item.last = "expired", self.now()
                if item.state in requests.TERMINAL and item.last + requests.RETENTION < self.now():
                    del self.model[request_id]

        @rule(target=ids)
        def create(self) -> str:
            self.settle()
            response = live.run(ask(live.client, self.people.requester))
            pending = sum(m.state == "pending" for m in self.model.values())
            if pending >= requests.MAX_PENDING_PER_REQUESTER:
                assert response.status_code == 429
                return "none"
            assert response.status_code == 201, response.text
            self.model[response.json()["id"]] = Model("pending", self.now())
            return str(response.json()["id"])

        @rule(
            request_id=ids,
            verb=st.sampled_from(["approve", "reject"]),
            who=st.sampled_from(["approver", "requester", "operator"]),
        )
        def decide(self, request_id: str, verb: str, who: str) -> None:
            self.settle()
            headers = {
                "approver": self.people.approver,
                "requester": self.people.requester,
                "operator": t.ADMIN,
            }[who]
            response = live.run(act(live.client, headers, request_id, verb))
            item = self.model.get(request_id)
            if item is None:
                assert response.status_code == 404
            elif who == "requester":
                assert response.status_code == 403
            elif item.state != "pending":
                assert response.status_code == 409
            else:
                assert response.status_code == 200, response.text
                item.state = "approved" if verb == "approve" else "rejected"
                item.last = item.decided = self.now()

        @rule(
            request_id=ids,
            verb=st.sampled_from(["cancel", "claim"]),
            who=st.sampled_from(["requester", "other"]),
        )
        def requester_acts(self, request_id: str, verb: str, who: str) -> None:
            self.settle()
            headers = self.people.requester if who == "requester" else self.people.other
            response = live.run(act(live.client, headers, request_id, verb))
            item = self.model.get(request_id)
            allowed = ("pending", "approved") if verb == "cancel" else ("approved",)
            if item is None or who == "other":
                assert response.status_code == 404
            elif item.state not in allowed:
                assert response.status_code == 409
            else:
                assert response.status_code in (200, 201), response.text
                item.state, item.last = ("cancelled" if verb == "cancel" else "claimed"), self.now()

        @rule(days=st.sampled_from([0, 1, 3, 8, 31]))
        def wait(self, days: int) -> None:
            live.clock.advance(days * DAY)

        @invariant()
        def listing_matches_the_model(self) -> None:
            self.settle()
            listed = live.run(live.client.get("/v1/requests", headers=self.people.requester)).json()
            states = {r["id"]: r["state"] for r in listed["requests"]}
            assert states == {k: m.state for k, m in self.model.items()}

    run_state_machine_as_test(
        Requests,
        settings=hypothesis_settings(
            max_examples=12,
            stateful_step_count=12,
            deadline=None,
            suppress_health_check=[HealthCheck.function_scoped_fixture],
        ),
    )


def test_requests_follow_the_reference_model(live: t.Live) -> None:
    run_machine(live)
