"""The audit log: append-only, hash-chained, verified at start, tamper-evident, and a
failed append locks the center.

SQLite deployments keep `audit.jsonl`; PostgreSQL the `audit` table. Each tamper case
below damages a stopped center's log and checks the restart names the first bad seq.
"""

from __future__ import annotations

import asyncio
import json
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from center import testing as t
from center.config import Settings
from center.errors import AuditChainError
from center.routes.audit import AuditLine
from tickets import chain_verify, make_record, to_line

Lines = list[str]


async def populate(settings: Settings, members: int = 4, prefix: str = "m") -> None:
    async with t.running(settings) as app, t.client(app) as client:
        for index in range(members):
            await t.add_member(client, f"{prefix}{index}")


def audit_file(settings: Settings) -> Path:
    return settings.data_dir / "audit.jsonl"


def _edit(lines: Lines) -> Lines:
    lines[2] = lines[2].replace('"member.add"', '"member.set"')
    return lines


def _swap(lines: Lines) -> Lines:
    lines[2], lines[3] = lines[3], lines[2]
    return lines


def _genesis(lines: Lines) -> Lines:
    lines[0] = lines[0].replace('"prev_hash":"' + "0" * 64, '"prev_hash":"' + "1" * 64)
    return lines


TAMPERING: dict[str, tuple[Callable[[Lines], Lines], int, str]] = {
    "edited field": (_edit, 3, "hash_mismatch"),
    "deleted line": (lambda lines: lines[:2] + lines[3:], 3, "seq_gap"),
    "swapped lines": (_swap, 3, "seq_gap"),
    "duplicated line": (lambda lines: lines[:3] + lines[2:], 4, "seq_repeat"),
    "truncated tail": (lambda lines: lines[:-1], 5, "truncated"),
    "wrong genesis": (_genesis, 1, "bad_genesis"),
}


@pytest.mark.asyncio
async def test_the_log_is_private_and_one_canonical_line_per_record(
    sqlite_settings: Settings,
) -> None:
    await populate(sqlite_settings, 2)
    path = audit_file(sqlite_settings)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(sqlite_settings.data_dir.stat().st_mode) == 0o700
    lines = path.read_text().splitlines()
    assert [json.loads(line)["seq"] for line in lines] == [1, 2, 3]
    assert chain_verify(lines).ok


@pytest.mark.asyncio
async def test_a_restart_continues_the_chain(settings: Settings) -> None:
    await populate(settings, 2)
    await populate(settings, 2, "n")
    async with t.running(settings) as app, t.client(app) as client:
        lines = (await client.get("/v1/audit", headers=t.ADMIN)).text.splitlines()
    assert [json.loads(line)["seq"] for line in lines] == [1, 2, 3, 4, 5]
    assert chain_verify(lines).ok


@pytest.mark.asyncio
@pytest.mark.parametrize("case", list(TAMPERING))
async def test_a_tampered_log_refuses_to_start_naming_the_first_bad_seq(
    sqlite_settings: Settings, case: str
) -> None:
    await populate(sqlite_settings)
    tamper, seq, problem = TAMPERING[case]
    path = audit_file(sqlite_settings)
    path.write_text("\n".join(tamper(path.read_text().splitlines())) + "\n")
    with pytest.raises(AuditChainError) as refused:
        async with t.running(sqlite_settings):
            pass
    assert (refused.value.seq, refused.value.problem) == (seq, problem)


async def _sql(sqlite_settings: Settings, *statements: str) -> None:
    assert sqlite_settings.database_url is not None
    url = sqlite_settings.database_url.replace("postgresql+asyncpg://", "postgresql://")
    connection = await asyncpg.connect(
        url, server_settings={"search_path": str(sqlite_settings.database_schema)}
    )
    try:
        for statement in statements:
            await connection.execute(statement)
    finally:
        await connection.close()


def postgres_only(sqlite_settings: Settings) -> None:
    if sqlite_settings.backend != "postgresql":
        pytest.skip("the audit table belongs to PostgreSQL deployments")


@pytest.mark.asyncio
async def test_the_audit_table_refuses_updates_and_deletes(postgres_settings: Settings) -> None:
    await populate(postgres_settings, 1)
    for statement in ("UPDATE audit SET vault = 'x'", "DELETE FROM audit", "TRUNCATE audit"):
        with pytest.raises(asyncpg.RaiseError, match="append-only"):
            await _sql(postgres_settings, statement)


SQL_TAMPERING = {
    "edited row": (
        "UPDATE audit SET line = replace(line, 'member.add', 'member.set') WHERE seq = 3",
        3,
        "hash_mismatch",
    ),
    "deleted row": ("DELETE FROM audit WHERE seq = 3", 3, "seq_gap"),
    "truncated tail": ("DELETE FROM audit WHERE seq = 5", 5, "head_mismatch"),
}


@pytest.mark.asyncio
@pytest.mark.parametrize("case", list(SQL_TAMPERING))
async def test_a_tampered_table_refuses_to_start(postgres_settings: Settings, case: str) -> None:
    await populate(postgres_settings)
    statement, seq, problem = SQL_TAMPERING[case]
    await _sql(postgres_settings, "ALTER TABLE audit DISABLE TRIGGER audit_append_only", statement)
    with pytest.raises(AuditChainError) as refused:
        async with t.running(postgres_settings):
            pass
    assert (refused.value.seq, refused.value.problem) == (seq, problem)


@pytest.mark.asyncio
async def test_records_a_crash_left_uncommitted_are_named_at_start(
    sqlite_settings: Settings,
) -> None:
    await populate(sqlite_settings, 1)
    path = audit_file(sqlite_settings)
    last = json.loads(path.read_text().splitlines()[-1])
    orphan = make_record((last["seq"], last["hash"]), action="member.add", actor="center-admin")
    with path.open("a") as log:
        log.write(to_line(orphan) + "\n")
    async with t.running(sqlite_settings) as app, t.client(app) as client:
        lines = (await client.get("/v1/audit", headers=t.ADMIN)).text.splitlines()
    recovered = json.loads(lines[-1])
    assert recovered["action"] == "audit.recover"
    assert f"records {orphan['seq']}-{orphan['seq']}" in recovered["reason"]


@pytest.mark.asyncio
async def test_a_log_changed_behind_the_centers_back_locks_changes(
    sqlite_settings: Settings,
) -> None:
    async with t.running(sqlite_settings) as app, t.client(app) as client:
        await t.add_member(client, "alice")
        with audit_file(sqlite_settings).open("a") as log:
            log.write("{}\n")
        failed = await client.post(
            "/v1/members", json={"id": "b", "vaults": ["x"]}, headers=t.ADMIN
        )
        assert failed.status_code == 503
        assert failed.json()["error"]["code"] == "restart_required"
        await assert_locked(client)


async def assert_locked(client: httpx.AsyncClient) -> None:
    """Changes answer 503 restart_required; reads and health go on."""
    again = await client.post("/v1/members", json={"id": "c", "vaults": ["x"]}, headers=t.ADMIN)
    assert again.json()["error"]["code"] == "restart_required"
    assert (await client.get("/v1/members", headers=t.ADMIN)).status_code == 200
    assert (await client.get("/healthz")).json()["status"] == "restart_required"
    assert (await client.get("/v1/revocations")).status_code == 200


@pytest.mark.asyncio
async def test_a_failed_table_append_changes_nothing_and_passes_once_repaired(
    postgres_settings: Settings,
) -> None:
    async with t.running(postgres_settings) as app, t.client(app) as client:
        await t.add_member(client, "alice")
        await _sql(postgres_settings, "ALTER TABLE audit RENAME TO audit_moved")
        failed = await client.post(
            "/v1/members", json={"id": "b", "vaults": ["x"]}, headers=t.ADMIN
        )
        t.refused(failed, 503, "storage", "audit append failed")
        assert (await client.get("/healthz")).json()["status"] == "ok"
        await _sql(postgres_settings, "ALTER TABLE audit_moved RENAME TO audit")
        members = (await client.get("/v1/members", headers=t.ADMIN)).json()["members"]
        assert [m["id"] for m in members] == ["alice"]
        await t.add_member(client, "b")


@pytest.mark.asyncio
async def test_parallel_changes_append_without_fork_or_gap(client: httpx.AsyncClient) -> None:
    results = await asyncio.gather(*(t.add_member(client, f"m{i}") for i in range(30)))
    assert len(set(results)) == 30
    lines = (await client.get("/v1/audit", headers=t.ADMIN)).text.splitlines()
    assert [json.loads(line)["seq"] for line in lines] == list(range(1, 32))
    assert chain_verify(lines).ok


@pytest.mark.asyncio
async def test_two_centers_on_one_database_share_one_chain(
    postgres_settings: Settings, tmp_path: Path
) -> None:
    other = postgres_settings.model_copy(update={"data_dir": tmp_path / "second"})
    async with (
        t.running(postgres_settings) as first,
        t.running(other) as second,
        t.client(first) as a,
        t.client(second) as b,
    ):
        await asyncio.gather(
            *(t.add_member(a, f"a{i}") for i in range(15)),
            *(t.add_member(b, f"b{i}") for i in range(15)),
        )
        lines = (await a.get("/v1/audit", headers=t.ADMIN)).text.splitlines()
    report = chain_verify(lines)
    assert report.ok
    assert report.records == 31  # key.activate once, then 30 member.add


async def _records(
    client: httpx.AsyncClient, headers: dict[str, str], query: str = ""
) -> list[dict[str, Any]]:
    response = await client.get(f"/v1/audit{query}", headers=headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/x-ndjson"
    return [json.loads(line) for line in response.text.splitlines()]


@pytest.mark.asyncio
async def test_the_export_filters_by_vault_and_seq_range(client: httpx.AsyncClient) -> None:
    await t.add_member(client, "a", ["team"])
    await t.add_member(client, "b", ["ops"])
    await t.add_member(client, "c", ["ops", "team"])
    everything = await _records(client, t.ADMIN)
    assert [r["seq"] for r in everything] == [1, 2, 3, 4]
    assert [r["subject"] for r in await _records(client, t.ADMIN, "?vault=ops")] == ["b"]
    assert [r["seq"] for r in await _records(client, t.ADMIN, "?since=2&until=3")] == [2, 3]
    t.refused(
        await client.get("/v1/audit?since=3&until=2", headers=t.ADMIN),
        400,
        "invalid_argument",
        "until: must not be below since",
    )


@pytest.mark.asyncio
async def test_a_vault_manager_sees_only_its_vaults_records(client: httpx.AsyncClient) -> None:
    team_admin = t.bearer(await t.add_member(client, "ada", ["team"], role="admin"))
    await t.add_member(client, "b", ["ops"])
    mine = await _records(client, team_admin)
    assert {r["vault"] for r in mine} == {"team"}
    t.refused(
        await client.get("/v1/audit?vault=ops", headers=team_admin),
        403,
        "forbidden",
        "only an admin or owner of vault 'ops' may read its audit",
    )
    two = t.bearer(await t.add_member(client, "two", ["ops", "team"], role="owner", scope="all"))
    t.refused(
        await client.get("/v1/audit", headers=two),
        400,
        "invalid_argument",
        "vault: name the vault whose records you want",
    )
    everywhere = t.bearer(await t.add_member(client, "all", ["*"], role="owner", scope="all"))
    assert all(r["vault"] is not None for r in await _records(client, everywhere))
    reader = t.bearer(await t.add_member(client, "reed", ["team"]))
    t.refused(
        await client.get("/v1/audit", headers=reader),
        403,
        "forbidden",
        "only an admin or owner of vault 'team' may read its audit",
    )


@pytest.mark.asyncio
async def test_a_token_shaped_value_never_reaches_the_log(client: httpx.AsyncClient) -> None:
    token_like = "eyJhbGciOiJFZDI1NTE5In0.eyJzdWIiOiJ4In0.c2ln"
    body = {"vault": "team", "reason": f"see {token_like}", "resource": [t.RESOURCE]}
    response = await client.post("/v1/grants", json=body, headers=t.ADMIN)
    t.refused(response, 400, "invalid_argument", "reason: looks like a token")
    assert token_like not in (await client.get("/v1/audit", headers=t.ADMIN)).text
    assert (await client.get("/v1/grants", headers=t.ADMIN)).json()["grants"] == []


@pytest.mark.asyncio
async def test_every_exported_line_is_the_audit_line_the_schema_declares(
    client: httpx.AsyncClient,
) -> None:
    await t.add_member(client, "pat", paths={"team": {"read": ["projects"]}})
    body = {"vault": "team", "resource": [t.RESOURCE], "scope": "all", "minutes": 10}
    root = (await client.post("/v1/grants", json=body, headers=t.ADMIN)).json()
    delegated = body | {"scope": "rw", "minutes": 5}
    child = await client.post("/v1/grants", json=delegated, headers=t.bearer(root["token"]))
    assert child.status_code == 201, child.text
    await client.delete(f"/v1/grants/{root['id']}", headers=t.ADMIN)
    lines = (await client.get("/v1/audit", headers=t.ADMIN)).text.splitlines()
    records = [AuditLine.model_validate_json(line, strict=True) for line in lines]
    assert [r.action for r in records] == [
        "key.activate",
        "member.add",
        "grant.issue",
        "grant.issue",
        "grant.revoke",
        "grant.revoke",  # the delegation goes with its parent
    ]
    rules = '{"team":{"exclude":[],"read":["projects"],"write":["projects"]}}'
    assert (records[1].paths, records[3].via_grant) == (rules, root["id"])
    assert all(isinstance(r.expiry, int) for r in records[2:4])
