"""Revocation reaching every node: a real center and two real nodes on loopback (each its
own process), polling every 0.5 s. A revoked grant, a member's bumped generation, a removed
member and a revoked key are refused on both nodes; a rotated key's tokens are accepted.
With the center stopped the nodes keep serving reads as configured, refuse writes after
`max_stale`, survive a restart from their persisted snapshot, and recover when it returns.

Refusals are awaited by polling with a generous deadline (many poll intervals): the test
asserts what the nodes do, never how fast; bench/bench_propagation.py measures the lag.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tickets import SigningKey
from vault_node.testing import free_port

from .cluster import ADMIN, MAX_STALE, POLL, Cluster, clean_env, mcp_session, python

pytestmark = pytest.mark.slow

DEADLINE = 60 * POLL + 30  # sixty poll intervals, plus room for a loaded machine
READ = ("vault_stats", {})
WRITE = ("inbox_capture", {"text": "propagation probe"})


def wait_for(cluster: Cluster, condition: Callable[[], bool], what: str) -> float:
    """Poll `condition` until it holds; seconds it took. Fails after DEADLINE."""
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > DEADLINE:
            pytest.fail(f"{what}: not within {DEADLINE:.0f} s\n{cluster.logs()}")
        time.sleep(0.05)
    return time.monotonic() - started


def everywhere(cluster: Cluster, token: str, outcome: str, probe: Any = READ) -> Callable[[], bool]:
    return lambda: all(cluster.call(n, token, probe) == outcome for n in cluster.nodes)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("propagation")
    running = Cluster(root, free_port(), SigningKey.generate().export_secret())
    running.start_center()
    try:
        running.add_node("node-a", read_when_stale=True)
        running.add_node("node-b", read_when_stale=False)
        for node in running.nodes:
            running.start_node(node)
        yield running
    finally:
        running.close()


def revoked(cluster: Cluster, token: str, revoke: Callable[[], object], what: str) -> None:
    """`token` works on both nodes, `revoke` runs, and both nodes refuse it."""
    assert [cluster.call(n, token, READ) for n in cluster.nodes] == ["ok", "ok"], what
    revoke()
    wait_for(cluster, everywhere(cluster, token, "refused"), f"{what} refused on both nodes")


def test_revocations_reach_both_nodes(cluster: Cluster) -> None:
    grant = cluster.admin(
        "POST",
        "/v1/grants",
        {
            "vault": "team",
            "scope": "read_write",
            "minutes": 30,
            "grantee": None,
            "resource": [n.url for n in cluster.nodes],
        },
    )
    revoked(
        cluster,
        grant["token"],
        lambda: cluster.admin("DELETE", f"/v1/grants/{grant['id']}"),
        "a revoked grant",
    )

    bumped = cluster.agent_token(cluster.member("bob"))["token"]
    revoked(
        cluster,
        bumped,
        lambda: cluster.admin("PATCH", "/v1/members/bob", {"scope": "read"}),
        "a token from before a generation bump",
    )

    removed = cluster.agent_token(cluster.member("carol"))["token"]
    revoked(
        cluster,
        removed,
        lambda: cluster.admin("DELETE", "/v1/members/carol"),
        "a removed member's token",
    )
    fresh = cluster.agent_token(cluster.member("dave"))["token"]
    assert [cluster.call(n, fresh, WRITE) for n in cluster.nodes] == ["ok", "ok"]


def test_a_rotated_key_is_learned_and_a_revoked_key_refused(cluster: Cluster) -> None:
    credential = cluster.member("erin")
    old = cluster.agent_token(credential)["token"]
    old_kid = SigningKey.from_secret(cluster.secret).kid
    cluster.stop_center()
    cluster.secret = SigningKey.generate().export_secret()
    cluster.start_center()
    new = cluster.agent_token(credential)["token"]
    wait_for(cluster, everywhere(cluster, new, "ok"), "a token of the new key accepted")
    assert [cluster.call(n, old, READ) for n in cluster.nodes] == ["ok", "ok"]  # retired
    revoke = subprocess.run(
        [*python("center.cli", "key", "revoke", old_kid, "--reason", "e2e"), "--json"],
        env=clean_env(
            SECONDBRAIN_CENTER_URL=cluster.center_url, SECONDBRAIN_CENTER_ADMIN_TOKEN=ADMIN
        ),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert revoke.returncode == 0, revoke.stdout + revoke.stderr
    answer = json.loads(revoke.stdout)
    assert (answer["kid"], answer["revoked"]) == (old_kid, True)
    wait_for(cluster, everywhere(cluster, old, "refused"), "the revoked key's token refused")
    assert [cluster.call(n, new, READ) for n in cluster.nodes] == ["ok", "ok"]
    wait_for(
        cluster,
        lambda: all(
            cluster.health(n)["revocation_seq"] >= answer["revocation_seq"] for n in cluster.nodes
        ),
        "both nodes at the seq the revocation answered",
    )


async def sdk_read(url: str, token: str) -> dict[str, Any]:
    async with mcp_session(url, token) as session:
        result = await session.call_tool("vault_stats", {})
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


@pytest.mark.asyncio
async def test_nodes_outlive_the_center_and_restart_from_their_snapshot(
    cluster: Cluster,
) -> None:
    a, b = cluster.nodes
    credential = cluster.member("frank")
    token = cluster.agent_token(credential)["token"]
    doomed = cluster.agent_token(credential)
    revoked(
        cluster,
        doomed["token"],
        lambda: cluster.admin("DELETE", f"/v1/tokens/{doomed['jti']}", token=credential),
        "a revoked agent token",
    )
    assert [cluster.call(n, token, WRITE) for n in cluster.nodes] == ["ok", "ok"]
    seq = cluster.health(a)["revocation_seq"]

    cluster.stop_center()
    wait_for(cluster, everywhere(cluster, token, "refused", WRITE), "writes refused when stale")
    assert cluster.call(a, token, READ) == "ok"  # read_when_stale: true
    assert cluster.call(b, token, READ) == "refused"  # read_when_stale: false
    assert (await sdk_read(a.url, token))["stats"]["notes"] >= 1
    assert cluster.health(a)["revocation_age_seconds"] >= MAX_STALE  # rounded to 0.1 s

    cluster.stop_node(a)
    cluster.start_node(a)  # the center is still down
    health = cluster.health(a)
    assert health["revocation_seq"] == seq
    assert (await sdk_read(a.url, token))["stats"]["notes"] >= 1
    assert cluster.call(a, token, WRITE) == "refused"
    assert cluster.call(a, doomed["token"], READ) == "refused"
    assert "revocation_restored" in a.log.read_text()

    cluster.start_center()
    wait_for(cluster, everywhere(cluster, token, "ok", WRITE), "writes accepted again")
    assert cluster.call(a, doomed["token"], READ) == "refused"
    center_seq = cluster.http.get(f"{cluster.center_url}/v1/revocations").json()["seq"]

    def reported() -> bool:
        listed = cluster.admin("GET", "/v1/nodes")["nodes"]
        return all(
            n["revocation_seq"] == center_seq and n["checkpoint_ok"] is True and n["vaults"]
            for n in listed
        )

    wait_for(cluster, reported, "both nodes' heartbeats at the center's seq")
    vaults = cluster.admin("GET", "/v1/vaults")["vaults"]
    assert [(v["name"], v["mcp_url"] in {a.url, b.url}) for v in vaults] == [("team", True)]
