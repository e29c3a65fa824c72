"""Failover and moves (docs/design.md#replication-and-failover) as processes on loopback: a
center on PostgreSQL, three `secondbrain serve` nodes and Caddy spreading the one address
`https://brain.localhost:PORT/mcp` over them at random. Every vault has two copies (the
default replication factor) and synchronous replication.

The official MCP SDK client, configured with the one URL only, writes with several
writers at once while the primary of its vault is SIGKILLed, cut off from the center, or
moved away; a writer retries what it is refused (`failing_over`, `unavailable`,
`not_primary`, a 502 from the proxy), always under a new path, so the notes a writer was
told are written are exactly the acknowledged writes. Afterwards every acknowledged write
is in the files and the git history of the vault's one primary, `git fsck` is clean and
the index equals the files on every copy. The lease settings are the defaults (ttl 10 s,
grace 2 s): each failover or move takes about 15 s here.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import signal
import ssl
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import ClientSession, MCPError

from center.fleet import Relay
from vault_core import Index, copies, paths
from vault_core.paths import TEMP_PREFIX
from vault_node.testing import free_port

from .conftest import (
    RETRIED,
    CenterSetup,
    Service,
    clean_env,
    error_code,
    mcp_session,
    member_token,
    postgres_database,
    prepare_deployment_node,
    rpc,
    start_deployment_node,
)
from .test_caddy_multinode import UPSTREAM, caddy

pytestmark = pytest.mark.slow

NODE_VAULTS = {"node-a": ("killed", "echo"), "node-b": ("moved",), "node-c": ("cut",)}
EVERY_VAULT = sorted(v for vaults in NODE_VAULTS.values() for v in vaults)
CUT_NODE = "node-c"
"""The node that reaches the center through a relay the tests can cut."""
WRITERS = 4
DEADLINE = 120.0
"""Seconds to wait for a failover, a move or a copy to catch up: a lease (10 s) and its
grace (2 s) take 12 of them; the rest is room for a loaded machine."""


@dataclass
class Fleet:
    """The running deployment; nodes may be killed and started again."""

    root: Path
    port: int
    tls: ssl.SSLContext
    center: CenterSetup
    relay: Relay
    nodes: dict[str, Service]
    ports: dict[str, int]

    @property
    def one(self) -> str:
        return f"https://brain.localhost:{self.port}/mcp"

    def mcp(self, node: str) -> str:
        return f"http://{UPSTREAM}:{self.ports[node]}/mcp"

    def folder(self, node: str, vault: str) -> Path:
        return self.root / node / "vaults" / vault

    def start(self, node: str) -> None:
        center_url = f"http://{UPSTREAM}:{self.relay.port}" if node == CUT_NODE else ""
        self.nodes[node] = start_deployment_node(
            self.root,
            self.center,
            node,
            (UPSTREAM, self.ports[node]),
            NODE_VAULTS[node],
            center_url,
        )

    def kill(self, node: str) -> None:
        process = self.nodes[node].process
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)

    def replication(self, vault: str) -> dict[str, Any]:
        """The center's view of `vault` (`GET /v1/replication`)."""
        listed = self.center.admin("GET", "/v1/replication")["vaults"]
        found: dict[str, Any] = next(v for v in listed if v["name"] == vault)
        return found


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory, localhost_names: None) -> Iterator[Fleet]:
    root = tmp_path_factory.mktemp("failover")
    port = free_port()
    with postgres_database() as database:
        center = CenterSetup(
            root / "center",
            issuer=f"https://center.localhost:{port}",
            database_url=database,
            mcp_url=f"https://brain.localhost:{port}/mcp",
        )
        center_service = center.start(root / "center.log")
        relay = Relay((UPSTREAM, center.port))
        while relay.port == port:  # Caddy's port is chosen, not yet bound
            relay.close()
            relay = Relay((UPSTREAM, center.port))
        chosen = distinct_ports(len(NODE_VAULTS), {port, center.port, relay.port})
        ports = dict(zip(NODE_VAULTS, chosen, strict=True))
        running = Fleet(root, port, ssl.create_default_context(), center, relay, {}, ports)
        try:
            # Every node is known before the first one adopts its vaults, so each vault
            # gets its replica on another node at once.
            for node, vaults in NODE_VAULTS.items():
                relayed = f"http://{UPSTREAM}:{relay.port}" if node == CUT_NODE else ""
                prepare_deployment_node(
                    root, center, node, (UPSTREAM, ports[node]), vaults, relayed
                )
                for vault in vaults:  # a first commit to replicate
                    (running.folder(node, vault) / "start.md").write_text(f"# {vault}\n")
            for node in NODE_VAULTS:
                running.start(node)
            upstreams: dict[str, int | tuple[int, ...]] = {"center": center.port}
            upstreams["brain"] = tuple(ports.values())
            with caddy(root, port, upstreams) as tls:
                running.tls = tls
                for vault in EVERY_VAULT:
                    wait_serving(running, vault)
                yield running
        finally:
            for service in [*running.nodes.values(), center_service]:
                service.stop()
            relay.close()


def distinct_ports(count: int, taken: set[int]) -> list[int]:
    """`count` ports free a moment ago, none of them in `taken` nor twice."""
    found: list[int] = []
    while len(found) < count:
        candidate = free_port()
        if candidate not in taken and candidate not in found:
            found.append(candidate)
    return found


def wait_serving(fleet: Fleet, vault: str, *, primary: str | None = None) -> dict[str, Any]:
    """Until the center shows `vault` serving (on `primary`, if given) with every copy in
    sync at the head each holds on disk, and every node's directory names that primary."""
    deadline = time.monotonic() + DEADLINE
    seen: dict[str, Any] = {}
    while time.monotonic() < deadline:
        seen = fleet.replication(vault)
        held = seen["copies"]
        heads = {copy["head"] for copy in held}
        settled = (
            seen["state"] == "serving"
            and (primary is None or seen["node"] == primary)
            and len(held) >= 2
            and all(copy["in_sync"] for copy in held if copy["role"] == "replica")
            and len(heads) == 1
            and None not in heads
            and all(on_disk(fleet, copy["node"], vault) in heads for copy in held)
        )
        if settled and directories_agree(fleet, vault):
            return seen
        time.sleep(0.2)
    pytest.fail(f"vault {vault} never settled: {seen}")


def on_disk(fleet: Fleet, node: str, vault: str) -> str:
    """The head of `node`'s copy of `vault` (the center's view of it may be a renewal old)."""
    return git(fleet.folder(node, vault), "rev-parse", "HEAD").stdout.strip()


def directories_agree(fleet: Fleet, vault: str) -> bool:
    """Whether a write through each node's own URL reaches the primary: a dry run of
    `note_create`, which a node with a stale directory sends to a copy that refuses it."""
    token = member_token(fleet.center, f"probe-{time.monotonic_ns()}", [vault])["token"]
    with httpx.Client(timeout=30, headers={"Authorization": f"Bearer {token}"}) as http:
        for node in fleet.nodes:
            probe = {"vault": vault, "path": "probe", "content": "x\n", "dry_run": True}
            if rpc(http, fleet.mcp(node), "note_create", probe)["isError"]:
                return False
    return True


@dataclass
class Load:
    """What the writers were told: the notes acknowledged (path → content), in order, and
    how often each kind of refusal came."""

    vault: str
    acked: dict[str, str] = field(default_factory=dict)
    acked_at: list[float] = field(default_factory=list)
    sent_at: list[float] = field(default_factory=list)
    refused: collections.Counter[str] = field(default_factory=collections.Counter)
    stop: asyncio.Event = field(default_factory=asyncio.Event)


async def write_until_stopped(session: ClientSession, load: Load, writer: int) -> None:
    attempt = 0
    while not load.stop.is_set():
        attempt += 1
        path = f"load/w{writer}-{attempt:05d}.md"
        content = f"writer {writer} attempt {attempt}\n"
        arguments = {"vault": load.vault, "path": path, "content": content}
        sent = time.monotonic()
        try:
            result = await session.call_tool("note_create", arguments, read_timeout_seconds=60)
        except MCPError as exc:  # the proxy's 502 while a node is down, a lost answer
            load.refused[f"rpc: {exc}"[:60]] += 1
            await asyncio.sleep(0.2)
            continue
        if result.is_error:
            code = (result.meta or {}).get("secondbrain/error", {}).get("code")
            assert code in RETRIED, (code, result.content)
            load.refused[code] += 1
            await asyncio.sleep(0.2)
            continue
        load.acked[path] = content
        load.acked_at.append(time.monotonic())
        load.sent_at.append(sent)
        await asyncio.sleep(0.02)


@contextlib.asynccontextmanager
async def writing(fleet: Fleet, vault: str, member: str) -> AsyncIterator[Load]:
    """WRITERS SDK clients on the one address writing to `vault` until the block ends."""
    token = member_token(fleet.center, member, [vault])["token"]
    load = Load(vault)
    async with contextlib.AsyncExitStack() as stack:
        sessions = [
            await stack.enter_async_context(mcp_session(fleet.one, token, fleet.tls))
            for _ in range(WRITERS)
        ]
        tasks = [
            asyncio.create_task(write_until_stopped(session, load, n))
            for n, session in enumerate(sessions)
        ]
        try:
            yield load
        finally:
            load.stop.set()
            await asyncio.gather(*tasks)


async def until_acked(load: Load, more: int) -> None:
    """Until `more` writes beyond those acknowledged now are acknowledged."""
    wanted = len(load.acked) + more
    deadline = time.monotonic() + DEADLINE
    while len(load.acked) < wanted:
        assert time.monotonic() < deadline, f"writes never went on: {load.refused}"
        await asyncio.sleep(0.1)


async def until_epoch(fleet: Fleet, vault: str, epoch: int) -> dict[str, Any]:
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        seen = await asyncio.to_thread(fleet.replication, vault)
        if seen["epoch"] >= epoch and seen["state"] == "serving":
            return seen
        await asyncio.sleep(0.2)
    pytest.fail(f"vault {vault} never reached epoch {epoch}: {seen}")


def git(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(folder), *args], capture_output=True, text=True, check=False, timeout=60
    )


def assert_all_acknowledged_on(fleet: Fleet, node: str, load: Load) -> None:
    """Every acknowledged note is on `node` with its content (after the frontmatter
    `note_create` adds) and in its branch's history."""
    folder = fleet.folder(node, load.vault)
    missing = [
        path
        for path, content in load.acked.items()
        if not (folder / path).is_file()
        or not (folder / path).read_text(encoding="utf-8").endswith(f"---\n{content}")
    ]
    assert not missing, f"{len(missing)} acknowledged writes are not on {node}: {missing[:5]}"
    logged = git(folder, "log", "--format=", "--name-only", "HEAD")
    assert logged.returncode == 0, logged.stderr
    committed = set(logged.stdout.split())
    unlogged = sorted(set(load.acked) - committed)
    assert not unlogged, f"acknowledged writes not in {node}'s history: {unlogged[:5]}"


def assert_copies_sound(fleet: Fleet, vault: str) -> None:
    """On every copy the center names: `git fsck` clean, the working tree at HEAD, and the
    index holding exactly the files on disk as they are."""
    seen = fleet.replication(vault)
    for copy in seen["copies"]:
        folder = fleet.folder(copy["node"], vault)
        checked = git(folder, "fsck", "--no-progress")
        assert checked.returncode == 0, (copy["node"], checked.stdout, checked.stderr)
        status = git(folder, "status", "--porcelain", "--untracked-files=all")
        # A node killed in the middle of an atomic write leaves its temporary file, which
        # nothing reads, indexes or commits (docs/design.md#atomic-write).
        changed = [line for line in status.stdout.splitlines() if TEMP_PREFIX not in line]
        assert changed == [], (copy["node"], changed)
        assert git(folder, "rev-parse", "HEAD").stdout.strip() == copy["head"]
        assert_index_matches_files(folder, vault)


def assert_index_matches_files(folder: Path, vault: str) -> None:
    files = {entry.rel for entry in paths.walk(folder, "")}
    index = Index.open(folder, vault)
    try:
        with index.reading() as db:
            indexed = {row[0] for row in db.execute("SELECT path FROM notes")}
        stale = sorted(rel for rel in files | indexed if not index.current(rel))
    finally:
        index.close()
    assert indexed == files, (folder, sorted(files ^ indexed)[:5])
    assert not stale, (folder, stale[:5])


def primaries_on_disk(fleet: Fleet, vault: str) -> dict[str, int]:
    """Each node whose saved copy of `vault` says it is primary, with the epoch it says."""
    found = {}
    for node in fleet.nodes:
        state = copies.load(fleet.folder(node, vault))
        if state.role == "primary":
            found[node] = state.epoch
    return found


@pytest.mark.asyncio
async def test_a_killed_primary_fails_over_and_every_acknowledged_write_survives(
    fleet: Fleet,
) -> None:
    before = wait_serving(fleet, "killed")
    primary = before["node"]
    async with writing(fleet, "killed", "kim") as load:
        await until_acked(load, 20)
        fleet.kill(primary)
        killed_at = time.monotonic()
        after = await until_epoch(fleet, "killed", before["epoch"] + 1)
        await until_acked(load, 20)
        pairs = zip(load.sent_at, load.acked_at, strict=True)
        resumed = min(done for sent, done in pairs if sent > killed_at)
    print(f"writes resumed {resumed - killed_at:.1f} s after the SIGKILL; refused {load.refused}")
    assert after["node"] != primary
    assert after["epoch"] == before["epoch"] + 1
    assert_all_acknowledged_on(fleet, after["node"], load)
    fleet.start(primary)
    rejoined = wait_serving(fleet, "killed", primary=after["node"])
    assert rejoined["epoch"] == before["epoch"] + 1
    roles = {copy["node"]: copy["role"] for copy in rejoined["copies"]}
    assert roles[primary] == "replica"
    assert_all_acknowledged_on(fleet, primary, load)  # the rejoined replica has them too
    assert_copies_sound(fleet, "killed")
    assert primaries_on_disk(fleet, "killed") == {after["node"]: after["epoch"]}


def test_a_write_through_any_node_is_read_back_through_every_node(fleet: Fleet) -> None:
    seen = wait_serving(fleet, "echo")
    assert seen["replicas"], seen
    token = member_token(fleet.center, "rita", ["echo"])["token"]
    with httpx.Client(timeout=30, headers={"Authorization": f"Bearer {token}"}) as http:
        for writer in fleet.nodes:
            for round_ in range(3):
                path = f"ryw/{writer}-{round_}.md"
                note = {"vault": "echo", "path": path, "content": f"{writer} {round_}\n"}
                assert not rpc(http, fleet.mcp(writer), "note_create", note)["isError"]
                for reader in fleet.nodes:
                    read = rpc(
                        http, fleet.mcp(reader), "note_read", {"vault": "echo", "path": path}
                    )
                    assert not read["isError"], (writer, reader, read)
                    assert read["structuredContent"]["content"] == f"{writer} {round_}\n"


@pytest.mark.asyncio
async def test_a_primary_cut_off_from_the_center_stops_before_another_is_promoted(
    fleet: Fleet,
) -> None:
    before = wait_serving(fleet, "cut", primary=CUT_NODE)
    token = member_token(fleet.center, "cora", ["cut"])["token"]
    headers = {"Authorization": f"Bearer {token}"}
    direct: list[tuple[float, bool, int]] = []  # (when, acknowledged, center's epoch then)
    async with (
        writing(fleet, "cut", "carl") as load,
        httpx.AsyncClient(timeout=60, headers=headers) as http,
    ):
        await until_acked(load, 20)
        fleet.relay.cut()
        try:
            cut_at = time.monotonic()
            # Straight to the cut-off primary, the way a client the proxy sends there is
            # served, until the center has promoted another copy.
            n = 0
            while True:
                n += 1
                arguments = {"vault": "cut", "path": f"direct/{n:05d}.md", "content": f"{n}\n"}
                message = {
                    "jsonrpc": "2.0",
                    "id": n,
                    "method": "tools/call",
                    "params": {"name": "note_create", "arguments": arguments},
                }
                answer = (await http.post(fleet.mcp(CUT_NODE), json=message)).json()["result"]
                epoch = (await asyncio.to_thread(fleet.replication, "cut"))["epoch"]
                if answer["isError"]:
                    assert error_code(answer) == "failing_over", answer
                else:
                    load.acked[arguments["path"]] = arguments["content"]
                direct.append((time.monotonic(), not answer["isError"], epoch))
                if epoch > before["epoch"]:
                    break
                assert time.monotonic() - cut_at < DEADLINE, "the center never promoted"
                await asyncio.sleep(0.2)
            after = await until_epoch(fleet, "cut", before["epoch"] + 1)
            await until_acked(load, 20)
        finally:
            fleet.relay.restore()
    refusing = [epoch for _, acked, epoch in direct if not acked]
    assert refusing, "the cut-off primary never refused a write"
    assert refusing[0] == before["epoch"], "it refused only after another was promoted"
    last_ack = max((at for at, acked, _ in direct if acked), default=cut_at)
    first_refusal = next(at for at, acked, _ in direct if not acked)
    assert last_ack <= first_refusal, "it acknowledged a write after refusing one"
    assert all(not acked for _, acked, epoch in direct if epoch > before["epoch"])
    assert after["node"] != CUT_NODE
    assert_all_acknowledged_on(fleet, after["node"], load)
    rejoined = wait_serving(fleet, "cut", primary=after["node"])
    roles = {copy["node"]: copy["role"] for copy in rejoined["copies"]}
    assert roles[CUT_NODE] == "replica"
    assert_copies_sound(fleet, "cut")
    assert primaries_on_disk(fleet, "cut") == {after["node"]: after["epoch"]}


@pytest.mark.asyncio
async def test_a_move_under_load_loses_nothing_and_the_client_keeps_its_address(
    fleet: Fleet,
) -> None:
    """The writers never pause: the target catches up while they write and is counted in
    sync on the primary's word that it holds its head; then the switch pauses writes for
    at most the rest of one lease plus the grace."""
    before = wait_serving(fleet, "moved")
    held = {copy["node"] for copy in before["copies"]}
    target = next(node for node in sorted(fleet.nodes) if node not in held)
    async with writing(fleet, "moved", "mona") as load:
        await until_acked(load, 20)
        moved = subprocess.run(
            [sys.executable, "-m", "center.cli", "vault", "move", "moved", "--to", target],
            env=clean_env(
                SECONDBRAIN_CENTER_URL=fleet.center.url,
                SECONDBRAIN_CENTER_ADMIN_TOKEN=fleet.center.admin_token,
            ),
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        assert moved.returncode == 0, moved.stderr
        after = await until_epoch(fleet, "moved", before["epoch"] + 1)
        await until_acked(load, 20)
    assert after["node"] == target
    assert_all_acknowledged_on(fleet, target, load)
    settled = wait_serving(fleet, "moved", primary=target)
    assert [c["node"] for c in settled["copies"] if c["role"] == "primary"] == [target]
    assert before["node"] not in {copy["node"] for copy in settled["copies"]}
    assert_copies_sound(fleet, "moved")
    assert primaries_on_disk(fleet, "moved") == {target: after["epoch"]}
    # The old primary's folder stays on its disk (nothing is deleted), but it answers
    # nothing for the vault: a call landing there goes to the new primary.
    token = member_token(fleet.center, "otto", ["moved"])["token"]
    with httpx.Client(timeout=30, headers={"Authorization": f"Bearer {token}"}) as http:
        note = {"vault": "moved", "path": "after-move.md", "content": "after\n"}
        assert not rpc(http, fleet.mcp(before["node"]), "note_create", note)["isError"]
    assert (fleet.folder(target, "moved") / "after-move.md").is_file()
