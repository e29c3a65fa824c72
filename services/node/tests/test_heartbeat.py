"""The node's heartbeat against a real center on loopback (in this test's event loop): what
it reports, the placements it applies (a placed vault is created on the first call that
names it), a newer feed seq polled at once, and failures that are logged without the
credential and never stop the node."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
import uvicorn
from structlog.testing import capture_logs

from center import nodes
from center import testing as ct
from center.app import create_app as create_center
from center.runtime import Center
from tickets import SigningKey
from vault_node.app import Node, create_app
from vault_node.config import NodeConfig, load_config
from vault_node.directory import Directory
from vault_node.errors import ConfigError
from vault_node.heartbeat import HEARTBEAT_PATH, _placements
from vault_node.testing import PUBLIC_URL, RESOURCE, StubCenter, make_config, mint

PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
PONG = {"jsonrpc": "2.0", "id": 1, "result": {}}


@dataclass
class RunningCenter:
    url: str
    center: Center
    key: SigningKey
    http: httpx.AsyncClient

    async def register(self, node_id: str, resource: str = RESOURCE) -> str:
        body = {"id": node_id, "resource": resource}
        answer = await self.http.post("/v1/nodes", json=body, headers=ct.ADMIN)
        assert answer.status_code == 201, answer.text
        credential: str = answer.json()["credential"]
        return credential

    async def node_row(self, node_id: str) -> dict[str, Any]:
        listed = (await self.http.get("/v1/nodes", headers=ct.ADMIN)).json()["nodes"]
        row: dict[str, Any] = next(n for n in listed if n["id"] == node_id)
        return row

    async def seq(self) -> int:
        value: int = (await self.http.get("/v1/revocations")).json()["seq"]
        return value


@pytest_asyncio.fixture
async def center(tmp_path: Path) -> AsyncIterator[RunningCenter]:
    """A real center (SQLite) under uvicorn on 127.0.0.1, served by this test's loop."""
    async with serving(tmp_path) as running:
        yield running


@contextlib.asynccontextmanager
async def serving(tmp_path: Path, **overrides: Any) -> AsyncIterator[RunningCenter]:
    settings = ct.settings(tmp_path / "center", **overrides)  # info: captured warnings pass
    app = create_center(settings)
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=0, log_config=None, lifespan="on")
    )
    task = asyncio.create_task(server.serve())
    while not server.started:
        assert not task.done(), "the center did not start"
        await asyncio.sleep(0.01)
    url = f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        yield RunningCenter(url, app.state.center, settings.signing_key(), http)
    server.should_exit = True
    await task


def node_config(tmp_path: Path, center: RunningCenter, **overrides: Any) -> NodeConfig:
    values: dict[str, Any] = {
        "center_url": center.url,
        "issuer": ct.ISSUER,
        "jwks_file": None,
        "revocation_file": None,
        "revocation_poll": "1h",
        "heartbeat_interval": "1h",  # the test beats by hand after the one at start
        "node_id": "node-a",
        **overrides,
    }
    (tmp_path / "node").mkdir(exist_ok=True)
    config = make_config(tmp_path / "node", center.key, **values)
    (config.data_dir / "default").mkdir(parents=True, exist_ok=True)
    return config


@pytest_asyncio.fixture
async def running(tmp_path: Path, center: RunningCenter) -> AsyncIterator[tuple[Node, Any]]:
    """A node registered with the center as node-a, started, with a client. (The node is
    made in a thread: it fetches the JWKS synchronously from the center this loop serves.)"""
    credential = await center.register("node-a")
    app = await asyncio.to_thread(
        create_app, node_config(tmp_path, center, node_credential=credential)
    )
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=PUBLIC_URL) as client:
            yield app.state.node, client


async def beat(node: Node) -> bool:
    assert node.heartbeat is not None
    return await asyncio.to_thread(node.heartbeat.beat_once)


async def renew(node: Node) -> bool:
    """One lease renewal now: the center adopts the vaults the node holds as primary copies."""
    assert node.leases is not None
    return await asyncio.to_thread(node.leases.renew_once)


async def call(client: httpx.AsyncClient, token: str, tool: str, **arguments: Any) -> Any:
    message = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    answer = await client.post("/mcp", json=message, headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 200, answer.text
    return answer.json()["result"]


@pytest.mark.asyncio
async def test_a_beat_reports_vaults_revocation_seq_and_checkpoint(
    center: RunningCenter, running: tuple[Node, Any]
) -> None:
    node, client = running
    assert await renew(node)
    assert await beat(node)
    row = await center.node_row("node-a")
    state = node.verifier.revocation
    assert state.checkpoint is not None
    assert row["vaults"] == ["default"]
    assert row["revocation_seq"] == state.seq == await center.seq()
    assert row["checkpoint"] == {"seq": state.checkpoint.seq, "hash": state.checkpoint.hash}
    assert row["checkpoint_ok"] is True
    listed = (await center.http.get("/v1/vaults", headers=ct.ADMIN)).json()["vaults"]
    # The node's own loop may beat again meanwhile, a second later: last_seen only grows.
    assert [vault.pop("last_seen") >= row["last_seen"] for vault in listed] == [True]
    only = {"name": "default", "node": "node-a", "mcp_url": RESOURCE, "reported": True}
    assert listed == [{**only, "replicas": [], "epoch": 1}]  # adopted at the first renewal
    health = (await client.get("/healthz")).json()
    assert health["heartbeat_age_seconds"] is not None


@pytest.mark.asyncio
async def test_a_placed_vault_is_created_on_the_first_call_that_names_it(
    center: RunningCenter, running: tuple[Node, Any]
) -> None:
    node, client = running
    async with center.center.store.change() as work:
        await nodes.place(work, "alice", "node-a")
    assert await beat(node)
    vault_dir = node.config.data_dir / "alice"
    assert not vault_dir.exists()  # placed, not created until a call names it
    narrow = mint(center.key, vaults=["default"])
    refused = await call(client, narrow, "vault_stats", vault="alice")
    assert refused["_meta"]["secondbrain/error"]["code"] == "unknown_vault"
    assert not vault_dir.exists()  # a token that may not use it creates nothing
    unplaced = await call(client, mint(center.key), "vault_stats", vault="bob")
    assert unplaced["_meta"]["secondbrain/error"]["code"] == "unknown_vault"
    assert not (node.config.data_dir / "bob").exists()
    stats = await call(client, mint(center.key), "vault_stats", vault="alice")
    assert stats["isError"] is False, stats
    assert (vault_dir / "wiki").is_dir()
    assert (vault_dir / ".secondbrain" / "instructions.md").exists()
    assert await renew(node)
    assert await beat(node)
    row = await center.node_row("node-a")
    assert (row["vaults"], row["placements"]) == (["alice", "default"], ["alice", "default"])
    mine = ct.bearer(await ct.add_member(center.http, "alice", ["alice"]))
    listed = (await center.http.get("/v1/vaults", headers=mine)).json()["vaults"]
    assert [(v["name"], v["mcp_url"], v["reported"]) for v in listed] == [("alice", RESOURCE, True)]


@pytest.mark.asyncio
async def test_concurrent_first_calls_create_a_placed_vault_once(
    center: RunningCenter, running: tuple[Node, Any]
) -> None:
    node, client = running
    async with center.center.store.change() as work:
        await nodes.place(work, "team", "node-a")
    assert await beat(node)
    token = mint(center.key)
    results = await asyncio.gather(
        *(call(client, token, "inbox_capture", vault="team", text=f"n{i}") for i in range(6))
    )
    assert [r["isError"] for r in results] == [False] * 6
    assert len(list((node.config.data_dir / "team" / "inbox").glob("*.md"))) == 6


@pytest.mark.asyncio
async def test_a_newer_feed_seq_in_the_answer_is_polled_at_once(
    center: RunningCenter, running: tuple[Node, Any]
) -> None:
    node, client = running
    token = mint(center.key, jti="jti-soon-revoked")
    held = node.verifier.revocation.seq
    grant = await center.http.post(
        "/v1/grants",
        json={"vault": "default", "resource": [RESOURCE], "minutes": 10},
        headers=ct.ADMIN,
    )
    assert grant.status_code == 201
    assert (
        await center.http.delete(f"/v1/grants/{grant.json()['id']}", headers=ct.ADMIN)
    ).is_success
    grant_token = grant.json()["token"]
    assert held is not None
    assert await center.seq() > held
    headers = {"Authorization": f"Bearer {grant_token}"}
    fresh = await client.post("/mcp", json=PING, headers=headers)
    assert (fresh.status_code, fresh.json()) == (200, PONG)  # not yet
    assert await beat(node)  # the answer names the newer seq: the node polls now
    assert node.verifier.revocation.seq == await center.seq()
    refused = await client.post("/mcp", json=PING, headers=headers)
    assert refused.status_code == 401
    assert refused.json()["error"] == "invalid_token"  # the revoked grant's token
    assert "www-authenticate" in refused.headers
    other = await client.post("/mcp", json=PING, headers={"Authorization": f"Bearer {token}"})
    assert other.status_code == 200
    assert other.json() == PONG


@pytest.mark.asyncio
async def test_an_unknown_credential_is_logged_without_it_and_the_node_keeps_serving(
    tmp_path: Path, center: RunningCenter
) -> None:
    wrong = "sbn_" + "x" * 43
    config = node_config(tmp_path, center, node_credential=wrong, metrics=True)
    with capture_logs() as logs:
        app = await asyncio.to_thread(create_app, config)
        async with app.router.lifespan_context(app):
            node = app.state.node
            assert not await beat(node)
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url=PUBLIC_URL) as client:
                headers = {"Authorization": f"Bearer {mint(center.key)}"}
                served = await client.post("/mcp", json=PING, headers=headers)
                assert served.status_code == 200
                assert served.json() == PONG
                scraped = (await client.get("/metrics")).text
                health = (await client.get("/healthz")).json()
    failed = [entry for entry in logs if entry["event"] == "heartbeat_failed"]
    assert failed
    assert {entry["status"] for entry in failed} == {401}
    assert wrong not in json.dumps(logs, default=str)
    assert 'secondbrain_heartbeats_total{outcome="failed"}' in scraped
    assert health["heartbeat_age_seconds"] is None
    assert wrong not in repr(config)


@pytest.mark.asyncio
async def test_another_nodes_credential_applies_nothing(
    tmp_path: Path, center: RunningCenter
) -> None:
    await center.register("node-a")
    other = await center.register("node-b", "https://node-b.test/mcp")
    async with center.center.store.change() as work:
        await nodes.place(work, "bobs", "node-b")
    config = node_config(tmp_path, center, node_credential=other)
    with capture_logs() as logs:
        app = await asyncio.to_thread(create_app, config)
        async with app.router.lifespan_context(app):
            node = app.state.node
            assert not await beat(node)
            assert "bobs" not in node.placements
    assert "heartbeat_wrong_node" in [entry["event"] for entry in logs]


@pytest.mark.asyncio
async def test_a_center_that_is_down_fails_the_beat_not_the_node(
    tmp_path: Path, center: RunningCenter
) -> None:
    credential = await center.register("node-a")
    config = node_config(tmp_path, center, node_credential=credential)
    app = await asyncio.to_thread(create_app, config)
    async with app.router.lifespan_context(app):
        node = app.state.node
        assert node.heartbeat is not None
        node.heartbeat.url = "http://127.0.0.1:9/v1/nodes/heartbeat"  # nothing listens there
        with capture_logs() as logs:
            assert not await beat(node)
        assert node.heartbeat.sent["failed"] >= 1
    # The lease loop still reaches the center, which logs in this process too (its events
    # are dotted, `vault.adopt`, and its access lines name a `route`); the node logged only
    # the failed beats, at start too.
    node_events = {
        entry["event"] for entry in logs if "." not in entry["event"] and "route" not in entry
    }
    assert node_events == {"heartbeat_failed"}


def test_placements_from_the_answer_keep_only_vault_names() -> None:
    with capture_logs() as logs:
        kept = _placements(["alice", "../etc", "Team", 7, "", "a" * 65, "ok_2"])
    assert kept == ["alice", "ok_2"]
    assert [(e["event"], e["refused"]) for e in logs] == [("placements_refused", 5)]
    assert _placements({"alice": 1}) == []
    assert _placements(None) == []


@pytest.mark.parametrize(
    ("settings", "problem"),
    [
        ({"node_id": "node-a"}, "node_credential is missing"),
        ({"node_credential": "sbn_x"}, "node_id must be"),
        ({"node_id": "bad id!", "node_credential": "sbn_x"}, "node_id must be"),
        ({"node_id": "a", "node_credential": "env:SB_TEST_UNSET_VAR"}, "SB_TEST_UNSET_VAR"),
        ({"node_id": "a", "node_credential": "sbn_x", "center_url": ""}, "need center_url"),
        ({"heartbeat_interval": "soon"}, "heartbeat_interval"),
        ({"state_dir": "relative/state"}, "state_dir"),
    ],
)
def test_heartbeat_settings_are_validated(
    tmp_path: Path, settings: dict[str, Any], problem: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SB_TEST_UNSET_VAR", raising=False)
    values = {
        "public_url": PUBLIC_URL,
        "data_dir": str(tmp_path),
        "center_url": "http://127.0.0.1:2021",
        **settings,
    }
    path = tmp_path / "node.yaml"
    path.write_text(json.dumps(values))
    with pytest.raises(ConfigError) as refused:
        load_config(path)
    assert any(problem in line for line in refused.value.problems), refused.value.problems


def test_the_credential_comes_from_a_file_and_stays_out_of_the_repr(tmp_path: Path) -> None:
    secret = tmp_path / "node.credential"
    secret.write_text("sbn_from_a_file\n")
    path = tmp_path / "node.yaml"
    path.write_text(
        json.dumps(
            {
                "public_url": PUBLIC_URL,
                "data_dir": str(tmp_path),
                "center_url": "http://127.0.0.1:2021",
                "node_id": "node-a",
                "node_credential": f"file:{secret}",
            }
        )
    )
    config = load_config(path)
    assert config.node_credential == "sbn_from_a_file"
    assert config.heartbeat
    assert "sbn_from_a_file" not in repr(config)
    assert config.state_dir == tmp_path / ".node"


@pytest.mark.asyncio
async def test_a_beat_learns_where_every_vault_lives_and_the_one_address(
    tmp_path: Path,
) -> None:
    one = "https://brain.test/mcp"
    async with serving(tmp_path, mcp_url=one) as center:
        other = await center.register("node-b", "https://node-b.test/mcp")
        reported = await center.http.post(
            "/v1/nodes/heartbeat",
            json={"vaults": ["far"]},
            headers={"Authorization": f"Bearer {other}"},
        )
        assert reported.status_code == 200, reported.text
        credential = await center.register("node-a")
        config = node_config(tmp_path, center, node_credential=credential)
        app = await asyncio.to_thread(create_app, config)
        async with app.router.lifespan_context(app):
            node: Node = app.state.node
            assert await beat(node)
            far = node.directory.get("far")
            assert far is not None
            assert far.nodes == ("https://node-b.test/mcp",)
            own = node.directory.get("default")
            assert own is not None
            assert own.nodes[0] == RESOURCE  # its primary first (node-b may hold a replica)
            assert node.deployment == one
            assert node.verifier.deployment == one
            token = mint(center.key, audience=one)
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url=PUBLIC_URL) as client:
                listed = await call(client, token, "vault_list")
            rows = listed["structuredContent"]["vaults"]
            assert [(row["name"], row.get("remote")) for row in rows] == [
                ("default", None),
                ("far", True),
            ]


@pytest.mark.asyncio
async def test_a_node_sends_its_directory_version_back_and_keeps_the_directory_while_unchanged(
    tmp_path: Path,
) -> None:
    async with serving(tmp_path, mcp_url="https://brain.test/mcp") as center:
        other = await center.register("node-b", "https://node-b.test/mcp")

        async def report(vaults: list[str]) -> None:
            reported = await center.http.post(
                "/v1/nodes/heartbeat",
                json={"vaults": vaults},
                headers={"Authorization": f"Bearer {other}"},
            )
            assert reported.status_code == 200, reported.text

        await report(["far"])
        config = node_config(tmp_path, center, node_credential=await center.register("node-a"))
        app = await asyncio.to_thread(create_app, config)
        async with app.router.lifespan_context(app):
            node: Node = app.state.node
            assert node.heartbeat is not None
            assert "directory_version" not in node.heartbeat.body()  # none held yet
            assert await renew(node)  # its own vault's lease first: the epoch is in it
            assert await beat(node)
            version = node.directory.version
            assert version is not None
            assert node.heartbeat.body()["directory_version"] == version
            sent: list[object] = []
            learn = node.directory.learn

            def noted(found: object, version: object) -> None:
                sent.append(found)
                learn(found, version)

            node.directory.learn = noted  # type: ignore[method-assign,assignment]
            assert await beat(node)
            assert sent == [None]  # answered without a directory: the one held stays
            assert node.directory.version == version
            assert [entry.vault for entry in node.directory.entries()] == ["default", "far"]
            await report(["far", "farther"])
            assert await beat(node)
            assert node.directory.version != version
            assert node.directory.get("farther") is not None


class OldCenter(StubCenter):
    """A center from before directory versions: the field refused (422), else the whole
    directory and no version. The bodies it was sent are in `bodies`."""

    def __init__(self, key: SigningKey) -> None:
        super().__init__(key)
        self.bodies: list[dict[str, Any]] = []

    def post(self, path: str, credential: str, body: Any) -> tuple[int, Any]:
        self.bodies.append(body)
        if "directory_version" in body:
            return 422, {"detail": "extra fields not permitted"}
        far = {"vault": "far", "nodes": ["https://node-b.test/mcp"], "epoch": None}
        return 200, {"node": "node-a", "placements": [], "revocation_seq": 0, "directory": [far]}


@pytest.mark.asyncio
async def test_a_center_from_before_directory_versions_is_asked_again_without_one(
    running: tuple[Node, Any],
) -> None:
    """In a rolling upgrade of several centers, a node that learned a version from a new one
    is not refused by an old one: it asks again without the version and gets the whole
    directory."""
    node, _ = running
    assert node.heartbeat is not None
    assert await beat(node)
    learned = node.directory.version
    assert learned is not None
    old = OldCenter(SigningKey.generate())
    try:
        node.heartbeat.url = f"{old.url}{HEARTBEAT_PATH}"
        assert await beat(node)
        assert [("directory_version" in body) for body in old.bodies] == [True, False]
        assert [entry.vault for entry in node.directory.entries()] == ["far"]
        assert node.directory.version is None
        assert await beat(node)
        assert [("directory_version" in body) for body in old.bodies] == [True, False, False]
    finally:
        old.close()


def test_a_directory_is_kept_only_for_the_version_it_came_with() -> None:
    held, other = "a" * 32, "b" * 32
    sent = [{"vault": "far", "nodes": ["https://node-b.test/mcp"], "epoch": 3}]
    known = Directory()
    known.learn(sent, held)
    assert (known.version, len(known)) == (held, 1)
    known.learn(None, held)  # unchanged
    assert (known.version, len(known)) == (held, 1)
    for version in (other, None, "A" * 32, 7):  # another version, or none, and no directory
        known.learn(sent, held)
        known.learn(None, version)
        assert (known.version, len(known)) == (None, 0)
    known.learn(sent, "not a version")  # the directory, but nothing to send back
    assert (known.version, len(known)) == (None, 1)
    known.learn("garbage", held)
    assert (known.version, len(known)) == (None, 0)


@pytest.mark.asyncio
async def test_without_a_one_address_a_node_forwards_nothing(
    center: RunningCenter, running: tuple[Node, Any]
) -> None:
    node, _ = running
    assert await beat(node)
    assert node.directory.get("default") is not None
    assert node.deployment is None
    assert node.forwarder.deployment is None
