"""A center that loses its database says so on `/readyz` (503, so a proxy stops sending
to it) and answers requests with 503 `storage`, never a 500; when the database is back it
serves again without a restart. The database "goes away" by cutting a TCP relay in front
of the shared test server, which itself keeps running for every other test."""

from __future__ import annotations

import http.client
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from center import fleet
from center import testing as t

DEADLINE = 60.0


@pytest.fixture
def relay() -> Iterator[fleet.Relay]:
    cut = fleet.Relay(("127.0.0.1", 5432))
    try:
        yield cut
    finally:
        cut.close()


def _through(url: str, relay: fleet.Relay) -> str:
    """`url` with its host and port replaced by the relay's."""
    scheme, rest = url.split("://", 1)
    user, _, tail = rest.rpartition("@")
    database = tail.split("/", 1)[1]
    return f"{scheme}://{user + '@' if user else ''}127.0.0.1:{relay.port}/{database}"


def _eventually_ready(url: str) -> httpx.Response:
    until = time.monotonic() + DEADLINE
    while True:
        answer = httpx.get(f"{url}/readyz", timeout=10)
        if answer.status_code == 200 or time.monotonic() > until:
            return answer
        time.sleep(0.2)


def test_a_replica_without_its_database_is_not_ready_and_recovers_by_itself(
    postgres_database: Any, relay: fleet.Relay, tmp_path: Path
) -> None:
    env = fleet.center_env(_through(postgres_database.url, relay), postgres_database.schema)
    with fleet.replicas(env, tmp_path, 1) as (replica,), httpx.Client(base_url=replica.url) as http:
        assert http.get("/readyz").json() == {"status": "ready", "reason": None}
        body = {"id": "before", "vaults": ["team"]}
        assert http.post("/v1/members", json=body, headers=t.ADMIN).status_code == 201
        relay.cut()
        down = http.get("/readyz")
        assert down.status_code == 503
        assert down.json()["status"] == "not_ready"
        assert down.json()["reason"].startswith("database: ")
        body = {"id": "lost", "vaults": ["team"]}
        t.refused(
            http.post("/v1/members", json=body, headers=t.ADMIN), 503, "storage", "retry later"
        )
        t.refused(http.get("/v1/members", headers=t.ADMIN), 503, "storage", "retry later")
        assert http.get("/v1/revocations").status_code == 503
        relay.restore()
        assert _eventually_ready(replica.url).status_code == 200
        body = {"id": "after", "vaults": ["team"]}
        assert http.post("/v1/members", json=body, headers=t.ADMIN).status_code == 201
        listed = http.get("/v1/members", headers=t.ADMIN).json()["members"]
        assert {m["id"] for m in listed} == {"before", "after"}
        assert http.get("/healthz").json()["status"] == "ok"


def test_a_stopping_center_drains_first_then_stops(tmp_path: Path) -> None:
    """With `shutdown_drain`, SIGTERM turns /readyz to 503 `draining` while every other
    request is still served, and the process ends by itself once the drain is over; a
    second SIGTERM during the drain stops it at once."""
    env = fleet.center_env(f"sqlite+aiosqlite:///{tmp_path / 'center.db'}", None)
    replica = fleet.Replica(env, tmp_path).start(shutdown_drain="3", log_level="info")
    process = replica.process
    assert process is not None
    try:
        with httpx.Client(base_url=replica.url, timeout=10) as http:
            assert http.get("/readyz").status_code == 200
            process.terminate()
            until = time.monotonic() + DEADLINE
            while (down := http.get("/readyz")).status_code == 200:
                assert time.monotonic() < until, "never began to drain"
                time.sleep(0.05)
            assert down.status_code == 503
            assert down.json() == {"status": "not_ready", "reason": "draining: stopping"}
            made = http.post("/v1/members", json={"id": "late", "vaults": ["t"]}, headers=t.ADMIN)
            assert made.status_code == 201
            assert process.poll() is None
        assert process.wait(timeout=DEADLINE) == -signal.SIGTERM
        assert '"draining"' in replica.output()

        replica.start(shutdown_drain="60")  # a drain longer than the wait below
        again = replica.process
        assert again is not None
        again.terminate()
        with httpx.Client(base_url=replica.url, timeout=10) as http:
            until = time.monotonic() + DEADLINE
            while http.get("/readyz").status_code == 200:
                assert time.monotonic() < until, "never began to drain"
                time.sleep(0.05)
        again.terminate()
        assert again.wait(timeout=DEADLINE / 2) == -signal.SIGTERM
    finally:
        replica.stop()


def test_an_idle_connection_outlives_uvicorns_default_keep_alive(tmp_path: Path) -> None:
    """A proxy reuses its idle connections to the center: one left idle past uvicorn's
    default of 5 s is still open, so the proxy (which closes first) never sends a request
    over a connection the center is closing."""
    env = fleet.center_env(f"sqlite+aiosqlite:///{tmp_path / 'center.db'}", None)
    replica = fleet.Replica(env, tmp_path).start()
    conn = http.client.HTTPConnection("127.0.0.1", replica.port, timeout=10)
    try:
        conn.request("GET", "/readyz")
        assert conn.getresponse().read() == b'{"status":"ready","reason":null}'
        assert conn.sock is not None
        first = conn.sock.getsockname()
        time.sleep(7)
        conn.request("GET", "/readyz")  # RemoteDisconnected had the center closed it
        assert conn.getresponse().status == 200
        assert conn.sock.getsockname() == first, "the connection was not kept"
    finally:
        conn.close()
        replica.stop()
