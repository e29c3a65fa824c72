"""CLI start-up: wall time of `version` and `--help` of both CLIs (`secondbrain`,
`secondbrain-center`) and a remote center verb (`member list` against a real center on
loopback), each as a fresh process the way a person or a script runs it; the goal is 0.3 s.

Each command runs RUNS times after one warm-up (the file cache); the median and the
fastest are printed, with the modules the remote verb loaded that it should not need.
"""

from __future__ import annotations

import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from tickets.testing import cli_imports
from vault_node.testing import free_port

RUNS = 7
BIN = Path(sys.executable).parent
HEAVY = ("sqlalchemy", "alembic", "fastapi", "uvicorn", "numpy", "vault_core", "httpx")


def timed(command: list[str], env: dict[str, str]) -> list[float]:
    subprocess.run(command, env=env, capture_output=True, check=True, timeout=120)  # warm-up
    seconds = []
    for _ in range(RUNS):
        started = time.perf_counter()
        subprocess.run(command, env=env, capture_output=True, check=True, timeout=120)
        seconds.append(time.perf_counter() - started)
    return seconds


def loaded(module: str, args: list[str], env: dict[str, str]) -> list[str]:
    """Which HEAVY packages running `module`'s main with `args` imports."""
    return sorted(set(HEAVY) & cli_imports(module, args, env)[1])


def start_center(folder: Path, port: int, admin: str) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "SECONDBRAIN_CENTER_DATA_DIR": str(folder),
        "SECONDBRAIN_CENTER_SECRET": secrets.token_urlsafe(32),
        "SECONDBRAIN_CENTER_ADMIN_TOKEN": admin,
        "SECONDBRAIN_CENTER_ISSUER": f"http://127.0.0.1:{port}",
        "SECONDBRAIN_CENTER_PORT": str(port),
        "SECONDBRAIN_CENTER_HOST": "127.0.0.1",
        "SECONDBRAIN_CENTER_LOG_LEVEL": "error",
    }
    process = subprocess.Popen(
        [str(BIN / "secondbrain-center"), "serve"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return process
        except httpx.HTTPError:
            time.sleep(0.2)
    process.kill()
    raise SystemExit("the center did not start")


def main() -> None:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SECONDBRAIN_")}
    port, admin = free_port(), secrets.token_urlsafe(32)
    with tempfile.TemporaryDirectory() as folder:
        center = start_center(Path(folder), port, admin)
        try:
            remote = {
                **clean,
                "SECONDBRAIN_CENTER_URL": f"http://127.0.0.1:{port}",
                "SECONDBRAIN_CENTER_ADMIN_TOKEN": admin,
            }
            cases = [
                ("secondbrain version", [str(BIN / "secondbrain"), "version"], clean),
                ("secondbrain --help", [str(BIN / "secondbrain"), "--help"], clean),
                ("secondbrain-center version", [str(BIN / "secondbrain-center"), "version"], clean),
                ("secondbrain-center --help", [str(BIN / "secondbrain-center"), "--help"], clean),
                (
                    "secondbrain-center member list",
                    [str(BIN / "secondbrain-center"), "member", "list"],
                    remote,
                ),
            ]
            print(f"{'command':34} {'median':>8} {'fastest':>8}   ({RUNS} runs each)")
            for name, command, env in cases:
                seconds = timed(command, env)
                print(f"{name:34} {statistics.median(seconds):7.3f}s {min(seconds):7.3f}s")
            heavy = loaded("center.cli", ["member", "list"], remote)
            print(f"member list loads: {', '.join(heavy) or 'none of ' + ', '.join(HEAVY)}")
            heavy = loaded("center.cli", ["version"], clean)
            print(f"center version loads: {', '.join(heavy) or 'none of ' + ', '.join(HEAVY)}")
            heavy = loaded("vault_node.cli", ["version"], clean)
            print(f"secondbrain version loads: {', '.join(heavy) or 'none of ' + ', '.join(HEAVY)}")
        finally:
            center.terminate()
            center.wait(30)


if __name__ == "__main__":
    main()
