"""One address for the deployment (docs/design.md#one-address), as processes on loopback:
a center whose `mcp_url` is `https://brain.localhost:PORT/mcp`, three nodes each holding
different vaults, and Caddy sending every request to that host to one of the three at
random. Each node keeps its own URL, its loopback address here: the nodes forward to it, and
they do not resolve `*.localhost` or trust Caddy's test CA.

The official MCP SDK client, configured with the one URL only, lists and uses every vault
its token reaches, whichever node a request lands on; concurrent writes all land where
their vaults live; a token still reaches nothing else
through forwarding; a forwarded request is not forwarded again; an oversized one is refused;
a node that is down gives a clear error; and an OAuth sign-in for the one URL gives a token
every node takes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from vault_node.forward import FORWARDED
from vault_node.rpc import MAX_BODY
from vault_node.testing import free_port

from .conftest import (
    CenterSetup,
    Service,
    call,
    error_code,
    mcp_session,
    member_token,
    names,
    rpc,
    start_deployment_node,
)
from .test_caddy_multinode import UPSTREAM, caddy

pytestmark = pytest.mark.slow

NODE_VAULTS = {"node-a": ("team", "ops"), "node-b": ("personal",), "node-c": ("scratch",)}
EVERY_VAULT = sorted(v for vaults in NODE_VAULTS.values() for v in vaults)
READY_DEADLINE = 60.0
LANDINGS = 12
"""Calls made through the one address where any node may answer: at random, each of three
nodes is missed by all twelve with probability (2/3)^12, under 1%."""


@dataclass
class Deployment:
    port: int
    tls: Any
    center: CenterSetup
    nodes: dict[str, Service]
    configs: dict[str, Path]

    def public(self, host: str) -> str:
        return f"https://{host}.localhost:{self.port}"

    def mcp(self, node: str) -> str:
        return f"{self.nodes[node].base}/mcp"

    @property
    def one(self) -> str:
        return f"{self.public('brain')}/mcp"

    def http(self, **headers: str) -> httpx.Client:
        return httpx.Client(verify=self.tls, timeout=30, headers=headers)


def start_one(root: Path, center: CenterSetup, node: str, port: int) -> Service:
    return start_deployment_node(root, center, node, (UPSTREAM, port), NODE_VAULTS[node])


@pytest.fixture(scope="module")
def deployment(
    tmp_path_factory: pytest.TempPathFactory, localhost_names: None
) -> Iterator[Deployment]:
    root = tmp_path_factory.mktemp("one")
    port = free_port()
    center = CenterSetup(
        root / "center",
        issuer=f"https://center.localhost:{port}",
        mcp_url=f"https://brain.localhost:{port}/mcp",
        # One copy per vault: this module is about forwarding, and "the node holding it"
        # must be one node (replicas through the one address: test_failover.py).
        settings={"replication_factor": "1"},
    )
    services = [center.start(root / "center.log")]
    ports = {node: free_port() for node in NODE_VAULTS}
    nodes: dict[str, Service] = {}
    try:
        for node, upstream in ports.items():
            nodes[node] = start_one(root, center, node, upstream)
        upstreams: dict[str, int | tuple[int, ...]] = {"center": center.port}
        upstreams["brain"] = tuple(ports.values())
        with caddy(root, port, upstreams) as tls:
            found = Deployment(port, tls, center, nodes, {n: root / n for n in NODE_VAULTS})
            wait_for_directories(found)
            yield found
    finally:
        for service in [*services, *nodes.values()]:  # node C may be a restarted process
            service.stop()


def wait_for_directories(deployment: Deployment) -> None:
    """Until every node's last heartbeat answer named every vault."""
    token = member_token(deployment.center, "probe", EVERY_VAULT)["token"]
    deadline = time.monotonic() + READY_DEADLINE
    with deployment.http(Authorization=f"Bearer {token}") as http:
        while time.monotonic() < deadline:
            listed = [
                names(rpc(http, deployment.mcp(node), "vault_list", {})) for node in NODE_VAULTS
            ]
            if all(found == EVERY_VAULT for found in listed):
                return
            time.sleep(0.2)
    pytest.fail(f"the nodes never learned every vault: {listed}")


def test_tokens_name_the_one_address(deployment: Deployment) -> None:
    minted = member_token(deployment.center, "alice", ["team", "personal"])
    assert sorted(minted["audience"]) == sorted(
        [deployment.one, deployment.mcp("node-a"), deployment.mcp("node-b")]
    )


@pytest.mark.asyncio
async def test_the_sdk_client_on_the_one_address_uses_every_vault_of_every_node(
    deployment: Deployment,
) -> None:
    token = member_token(deployment.center, "carol", ["team", "personal", "scratch"])["token"]
    async with mcp_session(deployment.one, token, deployment.tls) as session:
        for landing in range(LANDINGS):
            listed = await call(session, "vault_list", {})
            assert sorted(row["name"] for row in listed["vaults"]) == [
                "personal",
                "scratch",
                "team",
            ]
            for vault in ("team", "personal", "scratch"):
                path = f"landing-{landing}"
                made = await call(
                    session, "note_create", {"vault": vault, "path": path, "content": f"{vault}\n"}
                )
                assert made["vault"] == vault
                read = await call(session, "note_read", {"vault": vault, "path": path})
                assert read["content"].strip() == vault


def test_each_node_reads_and_writes_every_vault(deployment: Deployment) -> None:
    token = member_token(deployment.center, "dan", EVERY_VAULT)["token"]
    with deployment.http(Authorization=f"Bearer {token}") as http:
        for node in NODE_VAULTS:
            for vault in EVERY_VAULT:
                path = f"via-{node}"
                content = {"vault": vault, "path": path, "content": f"{node} wrote {vault}\n"}
                assert not rpc(http, deployment.mcp(node), "note_create", content)["isError"]
        for node in NODE_VAULTS:
            for vault in EVERY_VAULT:
                read = rpc(
                    http, deployment.mcp(node), "note_read", {"vault": vault, "path": "via-node-c"}
                )
                assert read["structuredContent"]["content"].strip() == f"node-c wrote {vault}"
    held = deployment.configs["node-b"] / "vaults" / "personal" / "via-node-a.md"
    assert held.read_text(encoding="utf-8").strip().endswith("node-a wrote personal")


@pytest.mark.asyncio
async def test_concurrent_writes_through_the_one_address_all_land(deployment: Deployment) -> None:
    token = member_token(deployment.center, "lea", EVERY_VAULT)["token"]
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(verify=deployment.tls, timeout=60, headers=headers) as http:

        async def write(n: int) -> dict[str, Any]:
            vault = EVERY_VAULT[n % len(EVERY_VAULT)]
            arguments = {"vault": vault, "path": f"crowd/{n}", "content": f"{n}\n"}
            message = {
                "jsonrpc": "2.0",
                "id": n,
                "method": "tools/call",
                "params": {"name": "note_create", "arguments": arguments},
            }
            answer = await http.post(deployment.one, json=message)
            assert answer.status_code == 200, answer.text
            result: dict[str, Any] = answer.json()["result"]
            return result

        results = await asyncio.gather(*(write(n) for n in range(40)))
    assert [result["isError"] for result in results] == [False] * 40
    for n in range(40):
        vault = EVERY_VAULT[n % len(EVERY_VAULT)]
        holder = next(node for node, vaults in NODE_VAULTS.items() if vault in vaults)
        note = deployment.configs[holder] / "vaults" / vault / "crowd" / f"{n}.md"
        assert note.read_text(encoding="utf-8").strip().endswith(str(n))


def listed_uris(http: httpx.Client, url: str) -> list[str]:
    """Every resource `resources/list` names through `url`, page after page."""
    uris: list[str] = []
    params: dict[str, Any] = {}
    while True:
        message = {"jsonrpc": "2.0", "id": 1, "method": "resources/list", "params": params}
        answer = http.post(url, json=message)
        assert answer.status_code == 200, answer.text
        result = answer.json()["result"]
        uris += [entry["uri"] for entry in result["resources"]]
        if "nextCursor" not in result:
            return uris
        params = {"cursor": result["nextCursor"]}


def test_resources_list_pages_through_every_node_the_same_way(deployment: Deployment) -> None:
    token = member_token(deployment.center, "max", ["team", "personal", "scratch"])["token"]
    with deployment.http(Authorization=f"Bearer {token}") as http:
        for vault in ("team", "personal", "scratch"):
            for n in range(60):  # more than a page (100) in all, so pages cross nodes
                note = {"vault": vault, "path": f"listed/{n:02d}", "content": "x\n"}
                assert not rpc(http, deployment.mcp("node-a"), "note_create", note)["isError"]
        seen = {node: listed_uris(http, deployment.mcp(node)) for node in NODE_VAULTS}
        through_one = [listed_uris(http, deployment.one) for _ in range(3)]
    reference = seen["node-a"]
    assert all(uris == reference for uris in [*seen.values(), *through_one])
    assert reference == sorted(reference, key=lambda uri: uri.split("/", 3)[2:])
    assert len(reference) == len(set(reference))
    for vault in ("team", "personal", "scratch"):
        assert f"secondbrain://{vault}/listed/59.md" in reference
    assert not any(uri.startswith("secondbrain://ops/") for uri in reference)


def test_a_token_reaches_no_other_vault_through_forwarding(deployment: Deployment) -> None:
    made = member_token(deployment.center, "erin", ["team", "personal"], vaults=["team"])
    with deployment.http(Authorization=f"Bearer {made['token']}") as http:
        for node in NODE_VAULTS:
            url = deployment.mcp(node)
            assert names(rpc(http, url, "vault_list", {})) == ["team"]
            assert not rpc(http, url, "note_list", {"vault": "team"})["isError"]
            for other in ("personal", "ops", "scratch", "nowhere"):
                found = rpc(http, url, "note_read", {"vault": other, "path": "via-node-a"})
                assert error_code(found) == "unknown_vault", (node, other)
                written = rpc(
                    http, url, "note_create", {"vault": other, "path": "x", "content": "x"}
                )
                assert error_code(written) == "unknown_vault", (node, other)
    assert not (deployment.configs["node-b"] / "vaults" / "personal" / "x.md").exists()


def test_a_read_only_token_is_refused_before_forwarding(deployment: Deployment) -> None:
    made = deployment.center.admin(
        "POST",
        "/v1/members",
        {"id": "gina", "vaults": ["personal"], "role": "reader", "scope": "read"},
    )
    minted = deployment.center.admin(
        "POST", "/v1/tokens", {"minutes": 30}, token=made["credential"]
    )
    message = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {
            "name": "note_create",
            "arguments": {"vault": "personal", "path": "y", "content": "y"},
        },
    }
    with deployment.http(Authorization=f"Bearer {minted['token']}") as http:
        refused = http.post(deployment.mcp("node-a"), json=message)
    assert refused.status_code == 403
    assert refused.json()["id"] == 7
    assert not (deployment.configs["node-b"] / "vaults" / "personal" / "y.md").exists()


def test_a_forwarded_request_is_not_forwarded_again(deployment: Deployment) -> None:
    token = member_token(deployment.center, "hal", EVERY_VAULT)["token"]
    headers = {"Authorization": f"Bearer {token}", FORWARDED: deployment.mcp("node-a")}
    with deployment.http(**headers) as http:
        answer = rpc(
            http, deployment.mcp("node-b"), "note_read", {"vault": "team", "path": "via-node-a"}
        )
        served = rpc(
            http, deployment.mcp("node-b"), "note_read", {"vault": "personal", "path": "via-node-a"}
        )
    assert error_code(answer) == "misdirected"
    assert "never forwarded again" in answer["content"][0]["text"]
    assert not served["isError"]  # a node still answers what it holds


def test_an_oversized_request_is_refused_before_forwarding(deployment: Deployment) -> None:
    token = member_token(deployment.center, "ida", EVERY_VAULT)["token"]
    content = "x" * (MAX_BODY + 1)
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "note_create",
            "arguments": {"vault": "personal", "path": "big", "content": content},
        },
    }
    with deployment.http(Authorization=f"Bearer {token}") as http:
        answer = http.post(deployment.mcp("node-a"), json=message)
    assert answer.status_code == 413
    assert answer.json()["error"] == "payload_too_large"
    assert not (deployment.configs["node-b"] / "vaults" / "personal" / "big.md").exists()


def test_the_metadata_at_the_one_address_names_it(deployment: Deployment) -> None:
    with deployment.http() as http:
        one = http.get(f"{deployment.public('brain')}/.well-known/oauth-protected-resource").json()
        own = http.get(
            f"{deployment.nodes['node-a'].base}/.well-known/oauth-protected-resource"
        ).json()
        refused = http.post(deployment.one, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert one["resource"] == deployment.one
    assert own["resource"] == deployment.mcp("node-a")
    assert refused.status_code == 401
    challenge = refused.headers["www-authenticate"]
    assert f'resource_metadata="{deployment.public("brain")}/.well-known/' in challenge


@pytest.mark.asyncio
async def test_sign_in_for_the_one_address_gives_a_token_every_node_takes(
    deployment: Deployment,
) -> None:
    from center.oauth import testing as oauth  # noqa: PLC0415

    deployment.center.admin(
        "POST",
        "/v1/members",
        {
            "id": "jane",
            "vaults": ["team", "personal"],
            "role": "editor",
            "scope": "read_write",
            "password": oauth.PASSWORD,
        },
    )
    async with httpx.AsyncClient(verify=deployment.tls, timeout=60) as http:
        refused = await http.post(
            deployment.one, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}
        )
        metadata_url = refused.headers["www-authenticate"].split('resource_metadata="')[1][:-1]
        resource = (await http.get(metadata_url)).json()["resource"]
    assert resource == deployment.one
    async with httpx.AsyncClient(
        base_url=deployment.public("center"), verify=deployment.tls, timeout=60
    ) as center:
        client_id = await oauth.register(center)
        proof = oauth.pkce()
        params = oauth.authorize_params(client_id, proof, resource=(resource,))
        signed_in = await oauth.sign_in(center, params, "jane", oauth.PASSWORD)
        answer = await oauth.exchange(
            center, client_id, oauth.redirect_params(signed_in)["code"], proof
        )
        assert answer.status_code == 200, answer.text
    token = answer.json()["access_token"]
    async with mcp_session(deployment.one, token, deployment.tls) as session:
        for _ in range(LANDINGS):
            listed = await call(session, "vault_list", {})
            assert sorted(row["name"] for row in listed["vaults"]) == ["personal", "team"]
            await call(session, "note_list", {"vault": "personal"})
    with deployment.http(Authorization=f"Bearer {token}") as http:
        for node in NODE_VAULTS:  # its audience is the one address only: every node takes it
            assert names(rpc(http, deployment.mcp(node), "vault_list", {})) == ["personal", "team"]


def test_a_node_that_is_down_gives_a_clear_error(deployment: Deployment) -> None:
    """Last in this module: it stops node C, then starts it again."""
    token = member_token(deployment.center, "kim", EVERY_VAULT)["token"]
    deployment.nodes["node-c"].stop()
    try:
        with deployment.http(Authorization=f"Bearer {token}") as http:
            read = rpc(
                http,
                deployment.mcp("node-a"),
                "note_read",
                {"vault": "scratch", "path": "via-node-a"},
            )
            write = rpc(
                http,
                deployment.mcp("node-b"),
                "note_create",
                {"vault": "scratch", "path": "z", "content": "z"},
            )
            served = rpc(
                http,
                deployment.mcp("node-a"),
                "note_read",
                {"vault": "personal", "path": "via-node-a"},
            )
    finally:
        root = deployment.configs["node-c"].parent
        port = int(deployment.nodes["node-c"].base.rsplit(":", 1)[1])
        deployment.nodes["node-c"] = start_one(root, deployment.center, "node-c", port)
    assert error_code(read) == "unavailable"
    assert "retry in a few seconds" in read["content"][0]["text"]
    assert error_code(write) == "unavailable"
    assert not served["isError"]
