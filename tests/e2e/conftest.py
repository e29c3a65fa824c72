"""A real node on 127.0.0.1: `secondbrain serve` as a subprocess, on a port chosen at start.

The node runs offline (JWKS and revocation snapshot from files) over a data directory
with the sample vault; its stdout (the structured log) is kept for the leak check.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tickets import SigningKey
from tickets import testing as tt
from vault_node.testing import SAMPLE_NOTES, mint, serving_node, write_files

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
    write_files(root / "data" / "default", SAMPLE_NOTES)
    with serving_node(root, key, extra, deadline=READY_DEADLINE) as node:
        yield NodeServer(node.base, key, root / "data", node.log, node.config, node.process)


@pytest.fixture(scope="module")
def node_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeServer]:
    with launch(tmp_path_factory.mktemp("node")) as server:
        yield server
