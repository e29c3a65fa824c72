"""Where every vault lives, as nodes learn it in the heartbeat answer
(docs/design.md#one-address), so any node can pass a call on to the one holding the vault.

Per vault the MCP URLs of the nodes holding it in `nodes.holders` order, primary first,
and the primary's lease epoch (null while the center keeps no lease for it). A heartbeat
answer carries it only when it differs from the version the node says it holds: at 10,000
vaults it is 1.5 MB, and most heartbeats find it unchanged.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from center.db import VaultLease
from center.nodes import holders


async def entries(session: AsyncSession) -> list[dict[str, Any]]:
    """The directory: one entry per vault some node holds or is placed on, by name."""
    held = await holders(session)
    rows = (await session.execute(select(VaultLease.vault, VaultLease.epoch))).all()
    epochs: dict[str, int] = dict(rows)
    return [
        {
            "vault": vault,
            "nodes": [node.resource for node in held[vault]],
            "epoch": epochs.get(vault),
        }
        for vault in sorted(held)
        if held[vault]
    ]


def version(found: list[dict[str, Any]]) -> str:
    """A short digest of the directory `entries` gave: equal exactly when the entries are."""
    encoded = json.dumps(found, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(encoded).hexdigest()[:32]
