"""The application around /mcp: health, startup refusals, trash purge."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tickets import testing as tt
from vault_node.app import create_app
from vault_node.errors import ConfigError
from vault_node.testing import Harness, make_config


@pytest.mark.asyncio
async def test_healthz_is_public_and_names_no_user_vault_or_note(node: Harness) -> None:
    response = await node.client.get("/healthz")
    assert response.status_code == 200
    health = response.json()
    assert health["status"] == "ok"
    assert (health["vaults"], health["vaults_opening"]) == (1, 0)
    assert health["protocol_versions"] == ["2025-11-25", "2025-06-18"]
    assert health["stateless"] is True
    assert 0 <= health["revocation_age_seconds"] < 60
    assert set(health) == {
        "status",
        "version",
        "commit",
        "vaults",
        "vaults_opening",
        "started",
        "uptime_seconds",
        "protocol_versions",
        "revocation_age_seconds",
        "revocation_seq",
        "audit_checkpoint_seq",
        "audit_checkpoint_rollback",
        "heartbeat_age_seconds",
        "stateless",
    }
    assert health["revocation_seq"] == 1
    assert health["audit_checkpoint_rollback"] is None
    assert health["heartbeat_age_seconds"] is None  # no center to report to
    assert "default" not in response.text
    assert "alice" not in response.text


def test_an_unreadable_jwks_file_stops_the_start(tmp_path: Path) -> None:
    config = make_config(tmp_path, tt.throwaway_key())
    assert config.jwks_file is not None
    config.jwks_file.write_text("{not json")
    with pytest.raises(ConfigError, match="jwks_file"):
        create_app(config)


@pytest.mark.asyncio
async def test_old_trash_copies_are_purged_and_recent_ones_kept(node: Harness) -> None:
    await node.ok("note_edit", {"path": "wiki/backoff", "old_string": "jitter", "new_string": "J"})
    await node.ok("note_delete", {"path": "raw/article"})
    trash = node.data / "default/.secondbrain/trash"
    old, recent = sorted(trash.iterdir())
    long_ago = time.time() - 31 * 86400
    os.utime(old, (long_ago, long_ago))
    assert node.app.state.node.purge_trash() == 1
    assert list(trash.iterdir()) == [recent]
