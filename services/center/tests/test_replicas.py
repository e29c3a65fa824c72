"""Several centers on one PostgreSQL database behave as one: three real `serve` processes
on a fresh schema, each request of a flow sent to the next replica in turn.

Pinned here: one audit chain under concurrent appends from every replica; an OAuth
sign-in whose steps cross replicas; refresh reuse caught across them; console sessions
and form tokens valid on every replica; a revocation feed whose seq never goes back and
never drops an acknowledged revocation; limits that hold for the fleet, not per process;
a key rotated on one seen by all.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
import pytest_asyncio

from center import fleet
from center import testing as t
from center.console.testing import Browser
from center.oauth import testing as o
from tickets import ChainVerifier, KeySet, SigningKey, jws, verify_snapshot
from tickets.keys import b64url_decode

pytestmark = pytest.mark.asyncio(loop_scope="module")
REPLICAS = 3


def fresh_schema(postgres: str | None) -> Iterator[tuple[str, str]]:
    """(asyncpg URL, schema): a new schema in the session's database, dropped after."""
    if postgres is None:
        pytest.fail("PostgreSQL is not reachable; the replica tests need it")
    with fleet.fresh_schema(postgres) as database:
        yield database


@pytest.fixture(scope="module")
def database(postgres: str | None) -> Iterator[tuple[str, str]]:
    yield from fresh_schema(postgres)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("replicas")


@pytest.fixture(scope="module")
def documents(folder: Path) -> Iterator[o.DocumentServer]:
    (folder / "documents").mkdir()
    with o.document_server(folder / "documents") as server:
        yield server


@pytest.fixture(scope="module")
def centers(
    database: tuple[str, str], folder: Path, documents: o.DocumentServer
) -> Iterator[list[fleet.Replica]]:
    """Three replicas started at once on an empty schema (their start-up races)."""
    env = fleet.center_env(
        *database,
        login_rate_limit="4/h",
        oauth_client_metadata_hosts=json.dumps(["127.0.0.1"]),
        oauth_client_metadata_ca_file=str(documents.ca_file),
    )
    with fleet.replicas(env, folder, REPLICAS) as started:
        yield started


@pytest_asyncio.fixture(loop_scope="module")
async def http(centers: list[fleet.Replica]) -> AsyncIterator[httpx.AsyncClient]:
    async with fleet.spread(centers) as client:
        yield client


def served(http: httpx.AsyncClient) -> set[int]:
    transport = http._transport
    assert isinstance(transport, fleet.RoundRobin)
    return set(transport.served)


async def test_the_audit_chain_stays_one_line_under_appends_from_every_replica(
    http: httpx.AsyncClient, centers: list[fleet.Replica]
) -> None:
    ids = [f"load-{index}" for index in range(60)]
    answers = await asyncio.gather(
        *(
            http.post("/v1/members", json={"id": i, "vaults": ["team"]}, headers=t.ADMIN)
            for i in ids
        )
    )
    assert [answer.status_code for answer in answers] == [201] * len(ids)
    assert served(http) == {replica.port for replica in centers}
    lines = (await http.get("/v1/audit", headers=t.ADMIN)).text.splitlines()
    verifier = ChainVerifier()
    for line in lines:
        assert verifier.feed(line)
    report = verifier.finish()
    assert report.ok, report.problem
    seqs = [json.loads(line)["seq"] for line in lines]
    assert seqs == list(range(1, len(lines) + 1))
    added = [json.loads(line)["subject"] for line in lines if '"member.add"' in line]
    assert sorted(added) == sorted(ids)


async def _member(http: httpx.AsyncClient, member: str) -> None:
    body = {"id": member, "vaults": ["team"], "role": "owner", "password": o.PASSWORD}
    answer = await http.post("/v1/members", json=body, headers=t.ADMIN)
    assert answer.status_code == 201, answer.text


async def test_an_oauth_sign_in_and_its_refreshes_cross_replicas(
    http: httpx.AsyncClient, centers: list[fleet.Replica]
) -> None:
    await _member(http, "alice")
    client_id = await o.register(http)
    proof = o.pkce()
    # page, login post and consent post each go to the next replica; so do the exchange,
    # the refresh and the replay below
    code = o.redirect_params(await o.sign_in(http, o.authorize_params(client_id, proof), "alice"))[
        "code"
    ]
    issued = await o.exchange(http, client_id, code, proof)
    assert issued.status_code == 200, issued.text
    first = issued.json()["refresh_token"]
    tokens = [first]
    for _ in range(2):  # each rotation at the next replica; the second spends the first's
        rotated = await o.refresh(http, client_id, tokens[-1])  # successor, ending its grace
        assert rotated.status_code == 200, rotated.text
        tokens.append(rotated.json()["refresh_token"])
    newest = tokens[-1]
    replayed = await o.refresh(http, client_id, first)
    assert replayed.status_code == 400
    assert replayed.json()["error"] == "invalid_grant"
    family_gone = await o.refresh(http, client_id, newest)
    assert family_gone.status_code == 400, "reuse must revoke the family on every replica"
    again = await o.exchange(http, client_id, code, proof)
    assert again.status_code == 400, "a code is spent on every replica"
    assert len(served(http)) == REPLICAS


async def test_a_console_session_and_its_forms_work_on_every_replica(
    http: httpx.AsyncClient, centers: list[fleet.Replica]
) -> None:
    await _member(http, "frank")
    browser = Browser(http)
    signed = await browser.sign_in_operator()
    assert signed.status_code == 303, signed.text
    for _ in centers:
        assert (await browser.get("/console/members/frank")).status_code == 200
    form = browser.csrf
    new = "a brand new password, long enough"
    changed = await browser.post("/console/members/frank/password", password=new)
    assert changed.status_code == 303, changed.text
    replayed = await browser.post("/console/members/frank/password", csrf=form, password=new)
    assert replayed.status_code == 403, "a spent form token is spent on every replica"


async def test_the_revocation_feed_never_goes_back_nor_drops_a_revocation(
    http: httpx.AsyncClient, centers: list[fleet.Replica]
) -> None:
    await _member(http, "dave")
    jwks = KeySet.from_jwks((await http.get("/.well-known/jwks.json")).json())
    seen: list[int] = []
    revoked: list[str] = []

    async def poll() -> None:
        for _ in range(30):
            acknowledged = set(revoked)
            answer = (await http.get("/v1/revocations")).json()
            snapshot, _kid = verify_snapshot(answer["snapshot"], jwks, issuer=fleet.ISSUER)
            seen.append(snapshot.seq)
            assert acknowledged <= set(snapshot.grants), "an acknowledged revocation vanished"

    async def revoke() -> None:
        for _ in range(10):
            body = {"grantee": "dave", "vault": "team", "scope": "read", "minutes": 30}
            body["resource"] = [t.RESOURCE]
            grant = (await http.post("/v1/grants", json=body, headers=t.ADMIN)).json()
            gone = await http.delete(f"/v1/grants/{grant['id']}", headers=t.ADMIN)
            assert gone.status_code == 200, gone.text
            revoked.append(grant["id"])

    await asyncio.gather(poll(), revoke())
    assert seen == sorted(seen)
    final = (await http.get("/v1/revocations")).json()
    snapshot, _kid = verify_snapshot(final["snapshot"], jwks, issuer=fleet.ISSUER)
    assert set(revoked) <= set(snapshot.grants)


async def test_failed_sign_ins_count_against_one_budget_across_replicas(
    http: httpx.AsyncClient, centers: list[fleet.Replica]
) -> None:
    client_id = await o.register(http)
    statuses = []
    for _ in range(5):  # the fleet runs with 4 failures an hour per address
        page = await http.get("/authorize", params=o.authorize_params(client_id, o.pkce()))
        form = o.login_form(page)
        body = {"username": "nobody", "password": "wrong password!", "csrf": form.csrf}
        statuses.append((await http.post(form.action, data=body)).status_code)
    assert statuses == [401, 401, 401, 401, 429]


async def test_client_registrations_count_against_one_budget_across_replicas(
    http: httpx.AsyncClient, centers: list[fleet.Replica]
) -> None:
    statuses = [
        (await http.post("/register", json={"redirect_uris": [o.REDIRECT]})).status_code
        for _ in range(21)
    ]
    # 20 an hour per address: two of them were spent by the tests above
    assert statuses.count(201) == 18
    assert statuses[18:] == [429, 429, 429]


async def test_a_client_metadata_document_fetched_by_one_replica_is_not_fetched_by_each(
    http: httpx.AsyncClient, centers: list[fleet.Replica], documents: o.DocumentServer
) -> None:
    path = "/fleet/client.json"
    url = documents.url(path)
    document = {"client_id": url, "client_name": "Fleet", "redirect_uris": [o.REDIRECT]}
    documents.publish(path, document, **{"Cache-Control": "max-age=600"})
    for _ in centers:
        page = await http.get("/authorize", params=o.authorize_params(url, o.pkce()))
        assert page.status_code == 200, page.text
    assert documents.hits[path] == 1


@pytest.fixture
def rotation(postgres: str | None, tmp_path: Path) -> Iterator[list[fleet.Replica]]:
    for database in fresh_schema(postgres):
        with fleet.replicas(fleet.center_env(*database), tmp_path, 2) as started:
            yield started


async def test_a_key_rotated_on_one_replica_is_seen_and_honoured_by_all(
    rotation: list[fleet.Replica],
) -> None:
    first, second = rotation
    new = SigningKey.generate()
    old_kid = SigningKey.from_secret(t.SECRET).kid
    first.stop()
    first.start(secret=new.export_secret())
    async with httpx.AsyncClient(base_url=second.url, timeout=60) as lagging:
        kids = {k["kid"] for k in (await lagging.get("/.well-known/jwks.json")).json()["keys"]}
        assert kids == {old_kid, new.kid}, "the lagging replica publishes the new key"
        credential = await t.add_member(lagging, "erin", role="owner")
        body = {"minutes": 24 * 60, "resource": [t.RESOURCE]}
        minted = await lagging.post("/v1/tokens", json=body, headers=t.bearer(credential))
        assert minted.status_code == 201, minted.text
    token = minted.json()["token"]
    assert jws.read_header(token).kid == old_kid
    expires = json.loads(b64url_decode(token.split(".")[1]))["exp"]
    async with httpx.AsyncClient(base_url=first.url, timeout=60) as rotated:
        keys = (await rotated.get("/.well-known/jwks.json")).json()["keys"]
        retired = next(key for key in keys if key["kid"] == old_kid)
        assert retired["not_after"] >= expires, "the retired key outlives what it still signs"
        revoked = await rotated.post(f"/v1/keys/{old_kid}/revoke", headers=t.ADMIN)
        assert revoked.status_code == 200, revoked.text
    async with httpx.AsyncClient(base_url=second.url, timeout=60) as lagging:
        refused = await lagging.post("/v1/tokens", json=body, headers=t.bearer(credential))
        t.refused(refused, 503, "unavailable", "was revoked by another center process")
