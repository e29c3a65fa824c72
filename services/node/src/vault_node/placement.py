"""The vaults the center placed on this node, and the library that creates one on demand.

The heartbeat records the center's placements; a tool call naming a placed vault the node
does not hold yet creates it (default layout) instead of answering not found.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

import structlog

from vault_core import Library, NotFoundError, OpenVault, VaultExistsError

log = structlog.get_logger("vault_node")

PLACED_LAYOUT = "wiki-raw"
"""The layout of a vault the center placed here: the one a fresh data dir starts with."""


class Placements:
    """The vaults the center's last answer placed on this node (thread-safe)."""

    def __init__(self) -> None:
        self._names: frozenset[str] = frozenset()
        self._lock = threading.Lock()

    def replace(self, names: Iterable[str]) -> None:
        with self._lock:
            self._names = frozenset(names)

    def __contains__(self, name: object) -> bool:
        with self._lock:
            return name in self._names


class PlacingLibrary(Library):
    """A Library that creates a vault the center placed here on the first call naming it."""

    def __init__(self, *args: Any, placements: Placements, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.placements = placements

    def get(self, name: str) -> OpenVault:
        try:
            return super().get(name)
        except NotFoundError:
            if name not in self.placements:
                raise
        try:
            opened = self.create(name, PLACED_LAYOUT)
        except VaultExistsError:  # another call created it a moment ago
            return super().get(name)
        log.info("placed_vault_created", vault=name, layout=PLACED_LAYOUT)
        return opened
