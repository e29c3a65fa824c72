"""Graceful shutdown (docs/design.md#operations): SIGTERM lets the calls in flight finish, then
exits.

A batch of note writes is in flight when the node gets SIGTERM; the batch still gets its
whole answer, every note it wrote is on disk and committed, the process exits, and the
node logs its shutdown only after the batch is done.
"""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
from pathlib import Path

import httpx

from .conftest import launch

WRITES = 60


def _batch() -> list[dict[str, object]]:
    return [
        {
            "jsonrpc": "2.0",
            "id": number,
            "method": "tools/call",
            "params": {
                "name": "note_create",
                "arguments": {"path": f"drain/n{number:03d}", "content": f"note {number}\n"},
            },
        }
        for number in range(WRITES)
    ]


def test_sigterm_drains_the_call_in_flight_then_exits(tmp_path: Path) -> None:
    with launch(tmp_path) as server:
        answer: dict[str, httpx.Response] = {}
        headers = {"Authorization": f"Bearer {server.token()}"}

        def send() -> None:
            answer["batch"] = httpx.post(server.url, json=_batch(), headers=headers, timeout=120)

        sender = threading.Thread(target=send)
        sender.start()
        drain = server.data / "default" / "drain"
        deadline = time.monotonic() + 60
        while not (drain.is_dir() and any(drain.iterdir())):  # the batch has begun
            assert time.monotonic() < deadline, "the batch never started writing"
            time.sleep(0.005)
        server.process.send_signal(signal.SIGTERM)
        sender.join(timeout=120)
        # uvicorn re-raises the signal once it has drained: the exit status says SIGTERM.
        assert server.process.wait(timeout=60) in (0, -signal.SIGTERM)

    response = answer["batch"]
    assert response.status_code == 200
    replies = response.json()
    assert len(replies) == WRITES
    assert all(not reply["result"]["isError"] for reply in replies)
    assert sorted(p.name for p in drain.iterdir()) == [f"n{n:03d}.md" for n in range(WRITES)]
    tracked = subprocess.run(
        ["git", "-C", str(drain.parent), "ls-tree", "-r", "--name-only", "HEAD", "drain"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert tracked == [f"drain/n{n:03d}.md" for n in range(WRITES)]
    lines = [
        json.loads(line) for line in server.log.read_text().splitlines() if line.startswith("{")
    ]
    events = [line.get("event") for line in lines]
    calls = [i for i, event in enumerate(events) if event == "tool_call"]
    assert len(calls) == WRITES
    assert events.index("shutdown") > calls[-1]
