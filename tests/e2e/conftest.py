"""A real node on 127.0.0.1: `secondbrain serve` as a subprocess, on a port chosen at start.

The node runs offline (JWKS and revocation snapshot from files) over a data directory
with the sample vault; its stdout (the structured log) is kept for the leak check.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tickets import SigningKey
from tickets import testing as tt
from vault_node.testing import (
    SAMPLE_NOTES,
    free_port,
    key_files,
    mint,
    stop,
    wait_ready,
    write_files,
)

READY_DEADLINE = 60.0


@dataclass
class NodeServer:
    """A running node: where it listens, who it trusts, and where its log goes."""

    base: str
    key: SigningKey
    data: Path
    log: Path
    config: Path
    process: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"{self.base}/mcp"

    def token(self, scope: str = "read write delete manage", **claims: object) -> str:
        return mint(self.key, scope, audience=self.url, **claims)


@contextlib.contextmanager
def launch(root: Path, extra: str = "") -> Iterator[NodeServer]:
    """`secondbrain serve` over the sample vault, with `extra` YAML lines in its config."""
    key = tt.throwaway_key()
    jwks, revocations = key_files(root, key)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    write_files(root / "data" / "default", SAMPLE_NOTES)
    config = root / "node.yaml"
    config.write_text(
        f"public_url: {base}\nlisten: 127.0.0.1:{port}\ndata_dir: {root / 'data'}\n"
        f"issuer: {tt.ISSUER}\njwks_file: {jwks}\nrevocation_file: {revocations}\n"
        f"max_stale: 1h\n{extra}"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("SECONDBRAIN_")}
    log = root / "node.log"
    command = [
        sys.executable,
        "-c",
        "from vault_node.cli import main; main()",
        "serve",
        "--config",
        str(config),
    ]
    with log.open("wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, env=env)
    try:
        problem = wait_ready(base, process, log, READY_DEADLINE)
        if problem:
            pytest.fail(problem)
        yield NodeServer(base, key, root / "data", log, config, process)
    finally:
        stop(process)


@pytest.fixture(scope="module")
def node_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeServer]:
    with launch(tmp_path_factory.mktemp("node")) as server:
        yield server
