"""The node's data-directory locks: which file each command holds (`tickets.lock` holds it)."""

from __future__ import annotations

from tickets.lock import DataDirBusyError, exclusive

__all__ = ["NODE_LOCK", "UP_LOCK", "DataDirBusyError", "exclusive"]

NODE_LOCK = ".node.lock"
"""The lock `secondbrain serve` holds in its data_dir (a dot file: never taken for a vault)."""
UP_LOCK = "up.lock"
"""The lock `secondbrain up` holds in its data directory, beside center/ and vaults/."""
