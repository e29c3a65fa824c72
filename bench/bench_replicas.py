"""Several centers on one PostgreSQL behind Caddy, under load, losing a replica and the
database: throughput with 1 and 3 replicas, what clients saw, and the after-checks.

Every center is a real `secondbrain-center serve` process (`center.fleet`) on a fresh
schema of the PostgreSQL at SECONDBRAIN_BENCH_POSTGRES, reached through a TCP relay the
benchmark can cut (the database "restarting" without stopping a shared server). Caddy
spreads requests at random over the replicas, checks `/readyz` every second and tries a
request that never reached a replica on another one. WORKERS clients run mixed
operations for SECONDS each phase: grant issue and revoke, agent-token mint, request
create/approve/claim, OAuth refresh rotations (after one sign-in with consent each),
console page views, node heartbeats and revocation-feed polls. Only reads are retried.

Phases: 1 replica; 3 replicas; 3 replicas with one SIGKILLed halfway and restarted 5 s
later; 3 replicas with the database cut for 5 s a third of the way in. Afterwards: the
audit chain verifies from genesis; every acknowledged grant, revocation, token and claim
is in the database and in the audit log; what is there that no client was told about is
at most what clients saw fail in doubt (a lost answer); no refresh family forked.
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import random
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import create_async_engine

from center import fleet
from center import testing as t
from center.db.models import Grant, OAuthRefresh, Token
from center.oauth import testing as o
from tickets import ChainVerifier

POSTGRES = os.environ.get("SECONDBRAIN_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
SECONDS = float(os.environ.get("SECONDBRAIN_BENCH_SECONDS", "60"))
WORKERS = int(os.environ.get("SECONDBRAIN_BENCH_WORKERS", "8"))
OUTAGE = 5.0
NODE_URL = "https://node-a.bench/mcp"
GRANT = {"vault": "team", "scope": "read", "minutes": 60}


@dataclass
class Tally:
    """What clients were told: acknowledged changes, operations done, errors seen."""

    done: collections.Counter[str] = field(default_factory=collections.Counter)
    errors: collections.Counter[str] = field(default_factory=collections.Counter)
    in_doubt: collections.Counter[str] = field(default_factory=collections.Counter)
    grants: set[str] = field(default_factory=set)
    revoked: set[str] = field(default_factory=set)
    tokens: set[str] = field(default_factory=set)
    claimed: set[str] = field(default_factory=set)


class FailedError(Exception):
    def __init__(self, op: str, what: str, doubt: bool) -> None:
        super().__init__(f"{op}: {what}")
        self.op, self.what, self.doubt = op, what, doubt


async def call(
    http: httpx.AsyncClient, op: str, method: str, path: str, ok: int = 200, **kw: Any
) -> httpx.Response:
    """One request; FailedError when it failed (`doubt`: the change may have happened)."""
    try:
        answer = await http.request(method, path, **kw)
    except httpx.TransportError as exc:
        raise FailedError(op, type(exc).__name__, doubt=method != "GET") from None
    if answer.status_code != ok:
        code = (
            answer.json().get("error", {})
            if "json" in answer.headers.get("content-type", "")
            else {}
        )
        name = code.get("code", "") if isinstance(code, dict) else str(code)
        lost = answer.status_code in (502, 504) or name == "storage"  # a commit may have landed
        doubt = method != "GET" and lost
        raise FailedError(op, f"{answer.status_code} {name}".strip(), doubt=doubt)
    return answer


@dataclass
class Worker:
    url: str
    index: int
    credential: str
    requester: str
    node: str
    tally: Tally
    client_id: str | None = None
    refresh_token: str | None = None
    http: httpx.AsyncClient = field(init=False)
    console: bool = False

    async def grant(self) -> None:
        issued = await call(
            self.http, "grant.issue", "POST", "/v1/grants", 201, json=GRANT, headers=t.ADMIN
        )
        grant = issued.json()["id"]
        self.tally.grants.add(grant)
        await call(self.http, "grant.revoke", "DELETE", f"/v1/grants/{grant}", headers=t.ADMIN)
        self.tally.revoked.add(grant)

    async def token(self) -> None:
        minted = await call(
            self.http,
            "token.mint",
            "POST",
            "/v1/tokens",
            201,
            json={},
            headers=t.bearer(self.credential),
        )
        self.tally.tokens.add(minted.json()["jti"])

    async def request(self) -> None:
        mine = t.bearer(self.requester)
        body = {"vault": "team", "scope": "read", "minutes": 15}
        asked = await call(
            self.http, "request.create", "POST", "/v1/requests", 201, json=body, headers=mine
        )
        rid = asked.json()["id"]
        await call(
            self.http, "request.approve", "POST", f"/v1/requests/{rid}/approve", headers=t.ADMIN
        )
        claimed = await call(
            self.http, "request.claim", "POST", f"/v1/requests/{rid}/claim", 201, headers=mine
        )
        self.tally.claimed.add(claimed.json()["id"])

    async def refresh(self) -> None:
        if self.client_id is None:
            body = {"redirect_uris": [o.REDIRECT]}
            registered = await call(
                self.http, "oauth.register", "POST", "/register", 201, json=body
            )
            self.client_id = registered.json()["client_id"]
        if self.refresh_token is None:
            await self.sign_in(self.client_id)
            return
        rotated = await o.refresh(self.http, self.client_id, self.refresh_token)
        if rotated.status_code != 200:
            self.refresh_token = None  # a lost answer leaves the client without its newest token
            raise FailedError("oauth.refresh", str(rotated.status_code), doubt=True)
        self.refresh_token = rotated.json()["refresh_token"]

    async def sign_in(self, client_id: str) -> None:
        """The authorization code flow with consent, then the code's exchange."""
        proof = o.pkce()
        params = o.authorize_params(client_id, proof, resource=(NODE_URL,))
        page = await call(self.http, "oauth.authorize", "GET", "/authorize", params=params)
        form = o.login_form(page)
        body = {"username": f"w{self.index}", "password": o.PASSWORD, "csrf": form.csrf}
        posted = await self.http.post(form.action, data=body)
        answer = await o.answer_consent(self.http, posted)
        if answer.status_code != 302:
            raise FailedError("oauth.sign_in", str(answer.status_code), doubt=False)
        code = o.redirect_params(answer)["code"]
        issued = await o.exchange(self.http, client_id, code, proof)
        if issued.status_code != 200:
            raise FailedError("oauth.exchange", str(issued.status_code), doubt=True)
        self.refresh_token = issued.json()["refresh_token"]
        self.tally.done["oauth.sign_in"] += 1

    async def console_view(self) -> None:
        if not self.console:
            page = await call(self.http, "console.sign_in", "GET", "/console/sign-in")
            csrf = page.text.split('name="csrf" value="', 1)[1].split('"', 1)[0]
            body = {"csrf": csrf, "admin_token": t.ADMIN_TOKEN}
            await call(
                self.http, "console.sign_in", "POST", "/console/sign-in/operator", 303, data=body
            )
            self.console = True
        await call(self.http, "console.view", "GET", "/console/grants")

    async def feed(self) -> None:
        await call(
            self.http,
            "node.heartbeat",
            "POST",
            "/v1/nodes/heartbeat",
            json={"vaults": ["team"]},
            headers=t.bearer(self.node),
        )
        await call(self.http, "feed.poll", "GET", "/v1/revocations")

    async def run(self, until: float) -> None:
        ops = [self.grant, self.token, self.request, self.refresh, self.console_view, self.feed]
        weights = [3, 3, 2, 2, 1, 3]
        while time.monotonic() < until:
            op = random.choices(ops, weights)[0]
            try:
                await op()
                self.tally.done[op.__name__] += 1
            except FailedError as exc:
                self.tally.errors[f"{exc.op}: {exc.what}"] += 1
                if exc.doubt:
                    self.tally.in_doubt[exc.op] += 1
                await asyncio.sleep(0.2)
            except httpx.TransportError as exc:  # a sign-in step or a refresh sent bare
                self.tally.errors[f"{op.__name__}: {type(exc).__name__}"] += 1
                self.refresh_token = None
                await asyncio.sleep(0.2)


async def setup(url: str) -> list[tuple[str, str, str]]:
    """A node for vault `team`, and per worker an owner with a password and a reader."""
    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        node = await call(
            http,
            "setup",
            "POST",
            "/v1/nodes",
            201,
            json={"id": "node-a", "resource": NODE_URL},
            headers=t.ADMIN,
        )
        credential = node.json()["credential"]
        await call(
            http,
            "setup",
            "POST",
            "/v1/nodes/heartbeat",
            json={"vaults": ["team"]},
            headers=t.bearer(credential),
        )
        made = []
        for index in range(WORKERS):
            owner = {"id": f"w{index}", "vaults": ["team"], "role": "owner", "password": o.PASSWORD}
            reader = {"id": f"r{index}", "vaults": ["team"], "role": "reader"}
            mine = await call(
                http, "setup", "POST", "/v1/members", 201, json=owner, headers=t.ADMIN
            )
            theirs = await call(
                http, "setup", "POST", "/v1/members", 201, json=reader, headers=t.ADMIN
            )
            made.append((mine.json()["credential"], theirs.json()["credential"], credential))
        return made


async def load(url: str, workers: list[Worker], seconds: float) -> float:
    """Each worker on a client of its own for `seconds`; a worker keeps its OAuth client
    and refresh token from one phase to the next, as an application would."""
    until = time.monotonic() + seconds
    started = time.monotonic()
    for worker in workers:
        worker.http = httpx.AsyncClient(base_url=url, timeout=30)
        worker.console = False
    try:
        await asyncio.gather(*(worker.run(until) for worker in workers))
    finally:
        for worker in workers:
            await worker.http.aclose()
    return time.monotonic() - started


async def check(url: str, database: tuple[str, str], tally: Tally) -> dict[str, Any]:
    """The after-checks: the chain, acknowledged changes in both places, nothing unknown
    beyond what was in doubt, no forked refresh family."""
    async with httpx.AsyncClient(base_url=url, timeout=120) as http:
        lines = (await http.get("/v1/audit", headers=t.ADMIN)).text.splitlines()
    verifier = ChainVerifier()
    for line in lines:
        verifier.feed(line)
    report = verifier.finish()
    objects = collections.defaultdict(set)
    for line in lines:
        record = json.loads(line)
        oauth = str(record.get("reason") or "").startswith("oauth ")  # not an agent token
        action = "oauth." + record["action"] if oauth else record["action"]
        objects[action].add(str(record.get("object") or "").partition(":")[2])
    engine = create_async_engine(
        database[0], connect_args={"server_settings": {"search_path": database[1]}}
    )
    try:
        async with engine.connect() as db:
            grants = {
                row.id: row.revoked
                for row in (await db.execute(select(Grant.id, Grant.revoked))).all()
            }
            tokens = set((await db.scalars(select(Token.jti))).all())
            forks = (
                await db.execute(
                    select(OAuthRefresh.family)
                    .where(OAuthRefresh.rotated.is_(None))
                    .group_by(OAuthRefresh.family)
                    .having(func.count() > 1)
                )
            ).all()
            families = await db.scalar(text("SELECT count(*) FROM oauth_families"))
    finally:
        await engine.dispose()
    issued = tally.grants | tally.claimed
    unknown = set(grants) - issued
    return {
        "audit_chain": "ok" if report.ok else f"broken at {report.first_bad_seq}: {report.problem}",
        "audit_records": report.records,
        "acked_grants_missing_in_db": len(issued - set(grants)),
        "acked_grants_missing_in_audit": len(issued - objects["grant.issue"]),
        "acked_revocations_not_revoked": sum(1 for g in tally.revoked if grants.get(g) is None),
        "acked_revocations_missing_in_audit": len(tally.revoked - objects["grant.revoke"]),
        "acked_tokens_missing_in_db": len(tally.tokens - tokens),
        "acked_tokens_missing_in_audit": len(tally.tokens - objects["token.issue"]),
        "grants_no_client_was_told_of": len(unknown),
        "grant_operations_in_doubt": tally.in_doubt["grant.issue"]
        + tally.in_doubt["request.claim"],
        "tokens_no_client_was_told_of": len(objects["token.issue"] - tally.tokens),
        "token_operations_in_doubt": tally.in_doubt["token.mint"],
        "refresh_families": families,
        "forked_refresh_families": len(forks),
    }


async def run_phases(folder: Path, database: tuple[str, str]) -> None:
    url, schema = database
    relay = fleet.Relay(("127.0.0.1", 5432))
    env = fleet.center_env(
        url.replace(":5432/", f":{relay.port}/"), schema, login_rate_limit="100000/h"
    )
    tally, results = Tally(), []

    async def kill_one(replica: fleet.Replica) -> None:
        await asyncio.sleep(SECONDS / 2)
        replica.kill()
        await asyncio.sleep(OUTAGE)
        replica.start(wait=False)

    async def cut_database() -> None:
        await asyncio.sleep(SECONDS / 3)
        relay.cut()
        await asyncio.sleep(OUTAGE)
        relay.restore()

    try:
        with fleet.replicas(env, folder, 3) as three:
            with fleet.caddy(three[:1], folder) as proxy:
                people = await setup(proxy)
                workers = [
                    Worker(proxy, index, owner, reader, node, tally)
                    for index, (owner, reader, node) in enumerate(people)
                ]
                results.append(await measured("1 replica", proxy, workers, tally))
            with fleet.caddy(three, folder) as proxy:
                results.append(await measured("3 replicas", proxy, workers, tally))
                trouble = kill_one(three[0])
                results.append(await measured("3, one SIGKILLed", proxy, workers, tally, trouble))
                trouble = cut_database()
                results.append(await measured("3, database cut", proxy, workers, tally, trouble))
                await asyncio.sleep(3)
                after = await check(proxy, database, tally)
    finally:
        relay.close()
    for result in results:
        print(json.dumps(result))
    print(json.dumps({"after_checks": after}))
    broken = violations(after)
    if broken:
        raise SystemExit("after-checks failed: " + "; ".join(broken))


def violations(after: dict[str, Any]) -> list[str]:
    """What the after-checks found wrong (nothing: the fleet lost and invented nothing)."""
    broken = [name for name, value in after.items() if name.startswith("acked_") and value]
    if after["audit_chain"] != "ok":
        broken.append(f"audit chain {after['audit_chain']}")
    if after["forked_refresh_families"]:
        broken.append("a refresh family forked")
    for kind in ("grant", "token"):
        unknown, doubt = (
            after[f"{kind}s_no_client_was_told_of"],
            after[f"{kind}_operations_in_doubt"],
        )
        if unknown > doubt:
            broken.append(f"{unknown} {kind}s no client was told of, {doubt} in doubt")
    return broken


async def measured(
    name: str, url: str, workers: list[Worker], tally: Tally, trouble: Any = None
) -> dict[str, Any]:
    before_done, before_errors = collections.Counter(tally.done), collections.Counter(tally.errors)
    task = asyncio.create_task(trouble) if trouble is not None else None
    seconds = await load(url, workers, SECONDS)
    if task is not None:
        await task
    done = tally.done - before_done
    errors = tally.errors - before_errors
    total = sum(done.values())
    return {
        "phase": name,
        "seconds": round(seconds, 1),
        "operations": total,
        "per_second": round(total / seconds, 1),
        "by_operation": dict(sorted(done.items())),
        "errors": dict(sorted(errors.items())),
    }


def main() -> None:
    if shutil.which("caddy") is None:
        print("caddy is not installed; this benchmark needs it")
        return
    with (
        tempfile.TemporaryDirectory(prefix="bench-replicas-") as folder,
        fleet.fresh_schema(POSTGRES) as database,
    ):
        asyncio.run(run_phases(Path(folder), database))


if __name__ == "__main__":
    main()
