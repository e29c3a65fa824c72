"""Rate limits: token buckets per principal on /mcp, 429 with Retry-After, bounded keys."""

from __future__ import annotations

import pytest

from vault_node.ratelimit import Buckets, retry_after
from vault_node.testing import NodeFactory


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_bucket_allows_its_burst_then_refills_evenly() -> None:
    clock = Clock()
    buckets = Buckets(60, clock=clock)
    assert all(buckets.take("alice") == 0.0 for _ in range(60))
    assert buckets.take("alice") == pytest.approx(1.0)
    assert buckets.take("bob") == 0.0
    clock.now += 1.0
    assert buckets.take("alice") == 0.0
    assert buckets.take("alice") > 0


def test_several_calls_are_taken_all_or_none_with_the_wait_for_all() -> None:
    clock = Clock()
    buckets = Buckets(60, clock=clock)
    assert buckets.take("alice", 50) == 0.0
    assert buckets.take("alice", 20) == pytest.approx(10.0)
    assert buckets.take("alice", 10) == 0.0  # the refused 20 took nothing
    clock.now += 10.0
    assert buckets.take("alice", 11) == pytest.approx(1.0)
    assert buckets.take("alice", 10) == 0.0


def test_a_check_waits_for_a_request_the_size_of_the_last_one() -> None:
    clock = Clock()
    buckets = Buckets(60, clock=clock)
    assert buckets.check("alice") == 0.0
    assert buckets.take("alice", 30) == 0.0
    assert buckets.take("alice", 30) == 0.0
    assert buckets.check("alice") == pytest.approx(30.0)  # another 30 fit in 30 s
    clock.now += 5.0
    assert buckets.check("alice") == 0.0  # a smaller request may be read
    assert buckets.take("alice", 1) == 0.0


def test_after_a_refusal_a_check_refuses_until_the_refused_request_fits() -> None:
    clock = Clock()
    buckets = Buckets(60, clock=clock)
    assert buckets.take("alice", 50) == 0.0
    assert buckets.take("alice", 30) == pytest.approx(20.0)
    assert buckets.check("alice") == pytest.approx(20.0)  # 10 are free, but not the 30
    clock.now += 20.0
    assert buckets.check("alice") == 0.0
    assert buckets.take("alice", 30) == 0.0


def test_keys_are_bounded_and_idle_ones_go_first() -> None:
    clock = Clock()
    buckets = Buckets(600, clock=clock, max_keys=3)
    buckets.take("old")
    clock.now += 700
    for key in ("a", "b"):
        buckets.take(key)
    buckets.take("c")
    assert len(buckets) == 3
    buckets.take("d")
    assert len(buckets) == 3


def test_retry_after_is_whole_seconds_and_at_least_one() -> None:
    assert retry_after(0.01) == "1"
    assert retry_after(2.2) == "3"


@pytest.mark.asyncio
async def test_the_node_answers_429_with_retry_after_per_principal(
    start_node: NodeFactory,
) -> None:
    node = await start_node(rate_limit=3)
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    statuses = [(await node.post(ping)).status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    limited = await node.post(ping)
    assert limited.json()["error"] == "rate_limited"
    assert int(limited.headers["retry-after"]) >= 1
    other = await node.post(ping, token=node.token(sub="bob"))
    assert other.status_code == 200
    assert other.json() == {"jsonrpc": "2.0", "id": 1, "result": {}}


@pytest.mark.asyncio
async def test_each_message_of_a_batch_is_one_call(start_node: NodeFactory) -> None:
    node = await start_node(rate_limit=5)
    batch = [{"jsonrpc": "2.0", "id": n, "method": "ping"} for n in range(3)]
    answered = await node.post(batch)
    assert answered.status_code == 200
    assert [reply["id"] for reply in answered.json()] == [0, 1, 2]
    limited = await node.post(batch)
    assert limited.status_code == 429
    assert int(limited.headers["retry-after"]) >= 1
    single = await node.post(batch[:1])  # refused until the whole batch fits
    assert (single.status_code, single.json()["error"]) == (429, "rate_limited")
