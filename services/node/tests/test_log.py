"""The node's log lines: one JSON object each, with a millisecond UTC timestamp."""

from __future__ import annotations

import json

import pytest
import structlog

from vault_node.log import configure_logging


def test_log_lines_are_json_with_millisecond_utc_timestamps(
    capsys: pytest.CaptureFixture[str],
) -> None:
    configure_logging("info")
    try:
        structlog.get_logger("vault_node").info("tool_call", tool="note_read")
        structlog.get_logger("vault_node").debug("hidden")
        line = json.loads(capsys.readouterr().out.strip())
    finally:
        structlog.reset_defaults()
    assert line["event"] == "tool_call"
    assert line["level"] == "info"
    assert line["tool"] == "note_read"
    assert len(line["ts"]) == len("2026-07-30T09:14:02.183Z")
    assert line["ts"].endswith("Z")
