"""Metrics on their own listener (docs/design.md#metrics-listener): served there, absent from the
main one."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from vault_node.testing import free_port

from .conftest import NodeServer, launch

pytestmark = pytest.mark.slow

KEY = "metrics-key-for-the-e2e-test-0123"


@pytest.fixture(scope="module")
def metrics_port() -> int:
    return free_port()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, metrics_port: int) -> Iterator[NodeServer]:
    extra = f"metrics: true\nmetrics_listen: 127.0.0.1:{metrics_port}\nmetrics_key: {KEY}\n"
    with launch(tmp_path_factory.mktemp("metrics"), extra) as running:
        yield running


def test_metrics_live_on_the_second_listener_only(server: NodeServer, metrics_port: int) -> None:
    headers = {"Authorization": f"Bearer {server.token()}"}
    ping = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "vault_stats", "arguments": {}},
    }
    answered = httpx.post(server.url, json=ping, headers=headers, timeout=30)
    assert answered.status_code == 200
    assert answered.json()["result"]["isError"] is False
    public = httpx.get(f"{server.base}/metrics", timeout=30)
    assert (public.status_code, public.json()) == (404, {"detail": "Not Found"})
    side = f"http://127.0.0.1:{metrics_port}"
    keyless = httpx.get(f"{side}/metrics", timeout=30)
    assert keyless.status_code == 401
    assert keyless.headers["www-authenticate"] == 'Bearer realm="secondbrain metrics"'
    scraped = httpx.get(f"{side}/metrics", headers={"X-API-Key": KEY}, timeout=30)
    assert scraped.status_code == 200
    assert 'secondbrain_tool_calls_total{outcome="ok",tool="vault_stats"} 1.0' in scraped.text
    assert httpx.get(f"{side}/healthz", timeout=30).json() == {"status": "ok"}
