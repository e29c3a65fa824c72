"""Prometheus metrics (docs/design.md#metrics): off by default, the endpoint's order of refusals,
a key in two spellings, low-cardinality labels, tool histograms, and no note or user in any
series."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from vault_node.app import create_metrics_app
from vault_node.config import load_config
from vault_node.errors import ConfigError
from vault_node.metrics import path_label
from vault_node.testing import Harness, NodeFactory

KEY = "a-metrics-key-of-32-characters!!"


def assert_no_such_path(response: httpx.Response) -> None:
    """The answer of a path the node does not serve at all."""
    assert response.status_code == 404
    assert response.json() == {"detail": "Not Found"}


@pytest.mark.asyncio
async def test_metrics_are_off_by_default(node: Harness) -> None:
    assert_no_such_path(await node.client.get("/metrics"))


@pytest.mark.asyncio
async def test_the_endpoint_exposes_tools_http_and_vault_figures(start_node: NodeFactory) -> None:
    node = await start_node(metrics=True)
    await node.ok("note_read", {"path": "wiki/backoff"})
    await node.fails("note_read", {"path": "nope"})
    await node.ok(
        "note_edit",
        {"path": "wiki/backoff", "old_string": "jitter", "new_string": "J", "dry_run": True},
    )
    await node.client.get("/healthz")
    response = await node.client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    assert response.headers["cache-control"] == "no-store"
    text = response.text
    assert 'secondbrain_tool_calls_total{outcome="ok",tool="note_read"} 1.0' in text
    assert 'secondbrain_tool_calls_total{outcome="error",tool="note_read"} 1.0' in text
    assert 'secondbrain_tool_duration_seconds_bucket{le="0.1",tool="note_read"}' in text
    assert "secondbrain_dry_runs_total 1.0" in text
    assert 'secondbrain_vault_notes{vault="default"} 5.0' in text
    assert 'secondbrain_http_requests_total{path="/mcp",status="200"}' in text
    assert 'secondbrain_http_requests_total{path="/healthz",status="200"} 1.0' in text
    assert "secondbrain_build_info{" in text
    for private in ("wiki/backoff", "alice", "Backoff", "ops"):
        assert private not in text


@pytest.mark.asyncio
async def test_a_denied_call_is_counted_as_denied(start_node: NodeFactory) -> None:
    node = await start_node(metrics=True)
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "inbox_capture", "arguments": {"text": "x"}},
    }
    denied = await node.post(message, token=node.token("read", role="reader"))
    assert denied.status_code == 403
    assert denied.json()["error"]["data"] == {"code": "forbidden", "status": 403, "scope": "write"}
    text = (await node.client.get("/metrics")).text
    assert 'secondbrain_tool_calls_total{outcome="denied",tool="inbox_capture"} 1.0' in text


@pytest.mark.asyncio
async def test_the_order_is_method_then_rate_then_key(start_node: NodeFactory) -> None:
    node = await start_node(metrics=True, metrics_key=KEY, metrics_path="/internal/metrics")
    assert_no_such_path(await node.client.get("/metrics"))
    posted = await node.client.post("/internal/metrics")
    assert posted.status_code == 405
    assert set(posted.headers["allow"].split(", ")) == {"GET", "HEAD"}
    missing = await node.client.get("/internal/metrics")
    assert missing.status_code == 401
    assert missing.headers["www-authenticate"] == 'Bearer realm="secondbrain metrics"'
    wrong = await node.client.get("/internal/metrics", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401
    assert wrong.headers["www-authenticate"] == 'Bearer realm="secondbrain metrics"'
    bearer = await node.client.get("/internal/metrics", headers={"Authorization": f"bearer {KEY} "})
    assert bearer.status_code == 200
    assert "secondbrain_build_info{" in bearer.text
    api_key = await node.client.head("/internal/metrics", headers={"X-API-Key": KEY})
    assert api_key.status_code == 200
    assert api_key.content == b""
    statuses = [(await node.client.get("/internal/metrics")).status_code for _ in range(60)]
    assert statuses[-1] == 429


@pytest.mark.asyncio
async def test_a_separate_listener_serves_metrics_and_the_main_one_does_not(
    start_node: NodeFactory,
) -> None:
    node = await start_node(metrics=True, metrics_listen="127.0.0.1:9090")
    assert_no_such_path(await node.client.get("/metrics"))
    side = create_metrics_app(node.app.state.node)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=side), base_url="http://m") as c:
        served = await c.get("/metrics")
        assert (served.status_code, "secondbrain_build_info{" in served.text) == (200, True)
        assert (await c.get("/healthz")).json() == {"status": "ok"}


@pytest.mark.asyncio
async def test_a_reload_reaches_the_endpoint_and_scrapes_count_as_metrics(
    start_node: NodeFactory,
) -> None:
    node = await start_node(metrics=True)
    running = node.app.state.node
    running.apply_config(running.config.model_copy(update={"metrics_key": KEY}))
    missing = await node.client.get("/metrics")
    assert missing.headers["www-authenticate"] == 'Bearer realm="secondbrain metrics"'
    served = await node.client.get("/metrics", headers={"X-API-Key": KEY})
    assert 'secondbrain_http_requests_total{path="metrics",status="401"} 1.0' in served.text
    running.apply_config(running.config.model_copy(update={"metrics": False}))
    switched_off = await node.client.get("/metrics", headers={"X-API-Key": KEY})
    assert (switched_off.status_code, switched_off.content) == (404, b"")


def test_paths_become_a_fixed_set_of_labels() -> None:
    assert path_label("/mcp", "/metrics") == "/mcp"
    assert path_label("/.well-known/oauth-protected-resource/mcp", "/metrics") == "/.well-known"
    assert path_label("/metrics", "/metrics") == "metrics"
    assert path_label("/wiki/secret-note", "/metrics") == "other"


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        ("metrics_path: metrics\n", "metrics_path 'metrics' must start with /"),
        ("metrics_path: /mcp\n", "must start with / and not be /, /mcp or /healthz"),
        ("metrics_key: short\n", "metrics_key must be at least 16 characters"),
        ("metrics_key: env:SECONDBRAIN_TEST_NOPE\n", "SECONDBRAIN_TEST_NOPE is not set"),
        ("metrics_listen: nine\n", "metrics_listen 'nine' must be [host]:port"),
    ],
)
def test_metrics_settings_are_checked_only_when_on(
    tmp_path: Path, extra: str, fragment: str
) -> None:
    base = "public_url: https://n.example\ncenter_url: https://c.example\n"
    (tmp_path / "off.yaml").write_text(base + extra)
    assert load_config(tmp_path / "off.yaml").metrics is False
    (tmp_path / "on.yaml").write_text(base + "metrics: true\n" + extra)
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path / "on.yaml")
    assert any(fragment in line for line in caught.value.problems), caught.value.problems


def test_the_validate_summary_never_shows_the_key(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(
        f"public_url: https://n.example\ncenter_url: https://c.example\nmetrics: true\n"
        f"metrics_key: {KEY}\nmetrics_listen: ':9090'\n"
    )
    summary = load_config(tmp_path / "c.yaml").metrics_summary()
    assert summary == "metrics: /metrics on :9090, key required"
    assert KEY not in summary
