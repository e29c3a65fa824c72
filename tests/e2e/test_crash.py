"""A crash at any instant (docs/design.md#operations): SIGKILL the node in the middle of a burst
of writes, start it again, and every note is old or new, never torn, every change on disk is in git
history (what the crash kept out is committed at start), and the repository is sound."""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from pathlib import Path

import httpx

from .conftest import launch

WRITES = 400
CONTENT = "burst note {n}: " + "x" * 2000 + "\n"


def _batch(start: int) -> list[dict[str, object]]:
    return [
        {
            "jsonrpc": "2.0",
            "id": n,
            "method": "tools/call",
            "params": {
                "name": "note_create",
                "arguments": {"path": f"burst/n{n:04d}", "content": CONTENT.format(n=n)},
            },
        }
        for n in range(start, start + 100)
    ]


def git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, check=False
    )


def uncommitted(root: Path) -> list[str]:
    """Vault paths (no dot segment) whose state on disk differs from HEAD."""
    lines = git(root, "status", "--porcelain", "--untracked-files=all").stdout.splitlines()
    paths = [line[3:] for line in lines]
    return [p for p in paths if not any(part.startswith(".") for part in p.split("/"))]


def test_a_node_killed_mid_burst_loses_nothing_from_history(tmp_path: Path) -> None:
    with launch(tmp_path) as server:
        headers = {"Authorization": f"Bearer {server.token()}"}
        burst = server.data / "default" / "burst"

        def send() -> None:
            with httpx.Client() as client:
                for start in range(0, WRITES, 100):
                    try:
                        client.post(server.url, json=_batch(start), headers=headers, timeout=120)
                    except httpx.TransportError:
                        return  # the node is gone

        sender = threading.Thread(target=send)
        sender.start()
        deadline = time.monotonic() + 60
        while not (burst.is_dir() and len(list(burst.iterdir())) >= 30):
            assert time.monotonic() < deadline, "the burst never got going"
            time.sleep(0.002)
        server.process.send_signal(signal.SIGKILL)
        server.process.wait(timeout=60)
        sender.join(timeout=120)

    vault = tmp_path / "data" / "default"
    written = sorted(burst.glob("*.md"))
    assert written, "the kill came before any write"
    assert len(written) < WRITES, "the kill came after the burst"
    for path in written:  # the write path renames whole files into place: old or new
        text = path.read_text()
        assert text.endswith(CONTENT.format(n=int(path.stem[1:])))

    with launch(tmp_path) as again:
        assert httpx.get(f"{again.base}/healthz", timeout=10).status_code == 200
        assert uncommitted(vault) == []
        fsck = git(vault, "fsck", "--strict")
        assert fsck.returncode == 0, fsck.stdout + fsck.stderr
        tracked = git(vault, "ls-files", "burst").stdout.split()
        assert tracked == [p.relative_to(vault).as_posix() for p in written]
