"""A real center and a real node on loopback, set up for the OAuth sign-in tests.

The center (`secondbrain-center serve`, SQLite, its issuer its own URL) knows the node's
MCP URL as an RFC 8707 resource because the node is registered with it; the node fetches
the center's keys and revocation feed itself. `alice` is an editor of vault `team` with
a password, so a client can sign her in on the login page. Process handling comes from
the deployment tests' helpers; only the OAuth-specific setup lives here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from center.oauth.testing import PASSWORD
from vault_node.testing import SAMPLE_NOTES, free_port, write_files

from ..deploy.conftest import (
    CenterSetup,
    Service,
    clean_env,
    start_node,
    wait_for_snapshot,
    write_node_config,
)

MEMBER = "alice"
VAULT = "team"
NODE_ID = "node-a"


@dataclass(frozen=True)
class Stack:
    """The running pair: the center (operator API, URL) and the node's public base URL."""

    center: CenterSetup
    center_service: Service
    node: Service
    member_credential: str = ""
    """alice's durable credential (for the CLI verbs a member runs)."""

    @property
    def issuer(self) -> str:
        return self.center.url

    @property
    def mcp_url(self) -> str:
        return f"{self.node.base}/mcp"

    def logs(self) -> str:
        """Both servers' logs as they stand (for failure messages and the leak checks)."""
        return "\n".join(
            f"--- {service.log.name}\n{service.log.read_text()}"
            for service in (self.center_service, self.node)
        )


@contextlib.contextmanager
def oauth_stack(
    root: Path, database_url: str | None = None, setup: CenterSetup | None = None
) -> Iterator[Stack]:
    """Start the center (`setup`, else one on `database_url`, else SQLite), register and
    start the node, add `alice`; stop both after."""
    center = setup or CenterSetup(root / "center", database_url=database_url)
    center_service = center.start(root / "center.log")
    try:
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        registered = center.admin("POST", "/v1/nodes", {"id": NODE_ID, "resource": f"{base}/mcp"})
        write_files(root / "vaults" / VAULT, SAMPLE_NOTES)
        config = write_node_config(
            root / "node.yaml",
            public_url=base,
            listen=f"127.0.0.1:{port}",
            data_dir=root / "vaults",
            default_vault=VAULT,
            center_url=center.url,
            node_id=NODE_ID,
            node_credential="env:NODE_CREDENTIAL",  # the file holds no secret
            watch="false",
        )
        env = clean_env(NODE_CREDENTIAL=registered["credential"])
        node = start_node(config, base, root / "node.log", env)
        try:
            wait_for_snapshot(base)
            member = {
                "id": MEMBER,
                "vaults": [VAULT],
                "role": "editor",
                "scope": "read_write",
                "password": PASSWORD,
            }
            added = center.admin("POST", "/v1/members", member)
            yield Stack(center, center_service, node, added["credential"])
        finally:
            node.stop()
    finally:
        center_service.stop()
