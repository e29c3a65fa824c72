"""A running node reloads its configuration on SIGHUP: an Origin allow-list takes effect
without a restart, and a broken file leaves the running configuration in place."""

from __future__ import annotations

import signal
import time

import httpx
import pytest

from .conftest import NodeServer

pytestmark = pytest.mark.slow

PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


def status_with_origin(server: NodeServer, origin: str) -> int:
    headers = {"Authorization": f"Bearer {server.token()}", "Origin": origin}
    return httpx.post(server.url, json=PING, headers=headers, timeout=30).status_code


def wait_for(server: NodeServer, origin: str, status: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if status_with_origin(server, origin) == status:
            return
        time.sleep(0.1)
    pytest.fail(f"{origin} never got {status}:\n{server.log.read_text()}")


def test_sighup_applies_a_new_origin_allow_list(node_server: NodeServer) -> None:
    assert status_with_origin(node_server, "https://evil.example") == 200
    original = node_server.config.read_text()
    node_server.config.write_text(original + "allowed_origins: [https://app.example]\n")
    node_server.process.send_signal(signal.SIGHUP)
    wait_for(node_server, "https://evil.example", 403)
    assert status_with_origin(node_server, "https://app.example") == 200

    node_server.config.write_text(original + "max_response_bytes: 1\n")
    node_server.process.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + 30
    while "config_reload_rejected" not in node_server.log.read_text():
        assert time.monotonic() < deadline, node_server.log.read_text()
        time.sleep(0.1)
    assert status_with_origin(node_server, "https://evil.example") == 403
