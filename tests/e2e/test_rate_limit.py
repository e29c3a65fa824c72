"""The rate limit counts tool calls, not HTTP requests: every message of a JSON-RPC batch
is one call, a batch runs whole or not at all, and its 429 says when all of it fits."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import httpx

from .conftest import NodeServer, launch


def pings(count: int, start: int = 0) -> list[dict[str, Any]]:
    return [{"jsonrpc": "2.0", "id": start + n, "method": "ping"} for n in range(count)]


def creates(count: int) -> list[dict[str, Any]]:
    return [
        {
            "jsonrpc": "2.0",
            "id": n,
            "method": "tools/call",
            "params": {"name": "note_create", "arguments": {"path": f"limited/n{n}"}},
        }
        for n in range(count)
    ]


def post(server: NodeServer, client: httpx.Client, body: Any) -> httpx.Response:
    headers = {"Authorization": f"Bearer {server.token()}"}
    return client.post(server.url, json=body, headers=headers, timeout=60)


def test_twelve_batches_of_a_hundred_get_no_more_calls_than_the_limit(tmp_path: Path) -> None:
    with launch(tmp_path) as server, httpx.Client() as client:  # 600 calls a minute
        started = time.monotonic()
        answers = [post(server, client, pings(100, 100 * n)) for n in range(12)]
        elapsed = time.monotonic() - started
    served = sum(len(a.json()) for a in answers if a.status_code == 200)
    refused = [a for a in answers if a.status_code != 200]
    # 600 at once, then 10 a second: what the bucket refilled while the batches went out.
    assert served <= 600 + 10 * elapsed
    assert served >= 600
    assert refused
    assert {a.status_code for a in refused} == {429}
    assert all(a.json()["error"] == "rate_limited" for a in refused)
    # The first refusal comes when the bucket is about empty: 100 more calls take 10 s.
    assert math.ceil(10 - elapsed) <= int(refused[0].headers["retry-after"]) <= 10


def test_a_batch_that_does_not_fit_runs_no_call_and_says_when_it_will(tmp_path: Path) -> None:
    with launch(tmp_path, "rate_limit: 60\n") as server, httpx.Client() as client:
        started = time.monotonic()
        assert post(server, client, pings(30)).status_code == 200
        assert post(server, client, pings(20)).status_code == 200
        refused = post(server, client, creates(30))
        elapsed = time.monotonic() - started
        assert refused.status_code == 429
        assert refused.json()["error"] == "rate_limited"
        assert "none of this batch of 30 ran" in refused.json()["message"]
        assert not (server.data / "default" / "limited").exists()
        # 60 - 50 = 10 calls were left (plus one a second since): the 30 fit after 20 s more.
        wait = int(refused.headers["retry-after"])
        assert math.ceil(20 - elapsed) <= wait <= 20
        # Until they do, every request is refused before its body is read, told the same.
        again = post(server, client, pings(1))
        assert again.status_code == 429
        assert 1 <= int(again.headers["retry-after"]) <= wait
        assert not (server.data / "default" / "limited").exists()


def test_a_batch_larger_than_the_whole_limit_is_refused_for_good(tmp_path: Path) -> None:
    with launch(tmp_path, "rate_limit: 10\n") as server, httpx.Client() as client:
        answer = post(server, client, pings(11))
        assert answer.status_code == 400
        error = answer.json()["error"]
        assert error["data"]["code"] == "invalid_request"
        assert error["message"] == (
            "this batch holds 11 calls but this node allows 10 a minute; send smaller batches"
        )
        assert post(server, client, pings(9)).status_code == 200
