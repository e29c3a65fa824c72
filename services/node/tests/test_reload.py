"""Configuration reload: a valid file is swapped in, a bad one keeps the running config,
and settings bound to what is open keep their running values."""

from __future__ import annotations

from pathlib import Path

import pytest
from structlog.testing import capture_logs

from vault_node.config import NodeConfig
from vault_node.reload import Reloader, _stamp
from vault_node.testing import NodeFactory


def yaml_of(node_config: NodeConfig, **changes: object) -> str:
    values = {**node_config.model_dump(mode="json", exclude_defaults=True), **changes}
    return "".join(f"{key}: {value}\n" for key, value in values.items())


@pytest.mark.asyncio
async def test_a_valid_file_is_applied_and_fixed_settings_keep_running(
    start_node: NodeFactory, tmp_path: Path
) -> None:
    node = await start_node()
    path = tmp_path / "node.yaml"
    running = node.app.state.node
    path.write_text(
        yaml_of(
            node.config, max_response_bytes=5000, rate_limit=2, public_url="https://elsewhere.test"
        )
    )
    with capture_logs() as logs:
        assert Reloader(path, lambda: running.config, running.apply_config).reload()
    assert running.config.max_response_bytes == 5000
    assert running.config.public_url == "https://node-a.test"
    assert running.buckets.capacity == 2
    events = {line["event"]: line for line in logs}
    assert events["config_reload_partial"]["ignored"] == ["public_url"]
    assert "config_reloaded" in events
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert [(await node.post(ping)).status_code for _ in range(3)] == [200, 200, 429]


@pytest.mark.asyncio
async def test_a_bad_file_keeps_the_running_configuration(
    start_node: NodeFactory, tmp_path: Path
) -> None:
    node = await start_node()
    path = tmp_path / "node.yaml"
    path.write_text(yaml_of(node.config, max_response_bytes=10))
    running = node.app.state.node
    before = running.config
    with capture_logs() as logs:
        assert not Reloader(path, lambda: running.config, running.apply_config).reload()
    assert running.config is before
    rejected = next(line for line in logs if line["event"] == "config_reload_rejected")
    assert rejected["problems"] == ["max_response_bytes must be at least 4096"]


@pytest.mark.asyncio
async def test_a_reloaded_staleness_reaches_the_verifier_and_a_fixed_poll_keeps_running(
    start_node: NodeFactory, tmp_path: Path
) -> None:
    node = await start_node()
    path = tmp_path / "node.yaml"
    path.write_text(yaml_of(node.config, max_stale="5m", revocation_poll="1s"))
    running = node.app.state.node
    poll = running.config.durations.revocation_poll
    assert Reloader(path, lambda: running.config, running.apply_config).reload()
    assert running.verifier.max_stale == 300
    assert running.config.durations.max_stale == 300
    assert running.config.revocation_poll == node.config.revocation_poll
    assert running.config.durations.revocation_poll == poll != 1


def test_the_stamp_changes_when_a_file_is_replaced(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("a: 1\n")
    first = _stamp(path)
    replacement = tmp_path / "new.yaml"
    replacement.write_text("a: 1\n")
    replacement.replace(path)
    assert _stamp(path) != first
    assert _stamp(tmp_path / "missing") is None
