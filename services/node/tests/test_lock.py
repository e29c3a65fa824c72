"""One process per data directory: a second `secondbrain serve` on a node's data_dir refuses
to start, naming the first, and touches nothing there."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tickets import SigningKey
from tickets import testing as tt
from vault_node.testing import free_port, serving_node

CLI = [sys.executable, "-c", "from vault_node.cli import main; main()"]


def files_under(root: Path) -> dict[str, tuple[int, int]]:
    """Every file and folder below `root` with its size and mtime: what a writer would change."""
    return {
        str(path.relative_to(root)): (path.lstat().st_size, path.lstat().st_mtime_ns)
        for path in sorted(root.rglob("*"))
    }


@pytest.mark.slow
def test_a_second_serve_on_one_data_dir_exits_naming_the_first(tmp_path: Path) -> None:
    key: SigningKey = tt.throwaway_key()
    with serving_node(tmp_path, key) as first:
        data = tmp_path / "data"
        assert (data / "default").is_dir()  # the first node opened (and made) its vault
        before = files_under(data)
        port = free_port()
        second_config = tmp_path / "second.yaml"
        second_config.write_text(
            first.config.read_text().replace(first.base.rsplit(":", 1)[1], str(port))
        )
        assert f"listen: 127.0.0.1:{port}" in second_config.read_text()
        env = {k: v for k, v in os.environ.items() if not k.startswith("SECONDBRAIN_")}
        second = subprocess.run(
            [*CLI, "serve", "--config", str(second_config)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env=env,
        )
        assert second.returncode == 2
        assert second.stdout == ""
        assert second.stderr.splitlines() == [
            f"error: another `secondbrain serve` (pid {first.process.pid}) uses this data "
            "directory; stop it first, or give this one a data_dir of its own"
        ]
        assert files_under(data) == before
        with pytest.raises(httpx.TransportError):
            httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2)
        health = httpx.get(f"{first.base}/healthz", timeout=5)
        assert (health.status_code, health.json()["status"]) == (200, "ok")
    # The first one gone, its lock went with it: the data directory serves again.
    with serving_node(tmp_path, key) as again:
        health = httpx.get(f"{again.base}/healthz", timeout=5)
        assert (health.status_code, health.json()["status"]) == (200, "ok")
