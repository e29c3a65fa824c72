"""Where every vault of the deployment lives (docs/design.md#one-address), as the center's
last heartbeat answer said: per vault the MCP URLs of the nodes holding it, primary first.

Kept in memory only: a node that restarts serves its own vaults at once and learns the
others at its first heartbeat. The deployment's one address comes with it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

import structlog

from tickets.verify import canonical_resource
from vault_core import VAULT_NAME

log = structlog.get_logger("vault_node")

MAX_ENTRIES = 10_000
VERSION = re.compile(r"[0-9a-f]{32}")
MAX_HOLDERS = 16
MAX_URL = 512


@dataclass(frozen=True)
class Entry:
    """One vault: the nodes holding it (their MCP URLs, canonical, primary first) and the
    primary's lease epoch (None where the center keeps no lease)."""

    vault: str
    nodes: tuple[str, ...]
    epoch: int | None = None

    @property
    def primary(self) -> str:
        return self.nodes[0]


class Directory:
    """The last directory the center sent; replaced whole, read without a lock (one
    reference swap is atomic)."""

    def __init__(self) -> None:
        self._entries: dict[str, Entry] = {}
        self.deployment: str | None = None
        """The one address as the center names it (`SECONDBRAIN_CENTER_MCP_URL`)."""
        self.version: str | None = None
        """The center's version of the entries held, sent back at each heartbeat: the
        center sends the directory again only when it differs."""

    def replace(self, entries: Iterable[Entry], version: str | None = None) -> None:
        self._entries = {entry.vault: entry for entry in entries}
        self.version = version

    def learn(self, sent: object, version: object) -> None:
        """Apply a heartbeat answer's `directory` and `directory_version`: a directory sent
        replaces the one held; none sent keeps it only when the version is the one held
        (a center that sends neither, or another version without a directory, empties it:
        forwarding on an unconfirmed directory could send a call to the wrong node)."""
        known = version if isinstance(version, str) and VERSION.fullmatch(version) else None
        if sent is None:
            if known is None or known != self.version:
                self.replace([])
            return
        self.replace(parse(sent), known if isinstance(sent, list) else None)

    def get(self, vault: str) -> Entry | None:
        return self._entries.get(vault)

    def entries(self) -> list[Entry]:
        return sorted(self._entries.values(), key=lambda entry: entry.vault)

    def __len__(self) -> int:
        return len(self._entries)


def parse(value: object) -> list[Entry]:
    """The directory of a heartbeat answer: valid entries kept, anything else logged and
    dropped (a center that sends garbage must not make this node forward anywhere odd)."""
    if not isinstance(value, list):
        return []
    found = [entry for item in value[:MAX_ENTRIES] if (entry := _entry(item)) is not None]
    if len(found) != len(value):
        log.warning("directory_refused", refused=len(value) - len(found))
    return found


def _entry(item: object) -> Entry | None:
    if not isinstance(item, dict):
        return None
    vault, nodes, epoch = item.get("vault"), item.get("nodes"), item.get("epoch")
    if not isinstance(vault, str) or not VAULT_NAME.fullmatch(vault):
        return None
    if not isinstance(nodes, list) or not 1 <= len(nodes) <= MAX_HOLDERS:
        return None
    if not all(isinstance(url, str) and _is_url(url) for url in nodes):
        return None
    if epoch is not None and (type(epoch) is not int or epoch < 0):
        return None
    return Entry(vault, tuple(canonical_resource(url) for url in nodes), epoch)


def _is_url(url: str) -> bool:
    parts = urlsplit(url)
    return (
        len(url) <= MAX_URL
        and parts.scheme in ("http", "https")
        and bool(parts.netloc)
        and not parts.query
        and not parts.fragment
    )


def deployment_url(value: object) -> str | None:
    """The one address of a heartbeat answer, if it is a valid URL."""
    return canonical_resource(value) if isinstance(value, str) and _is_url(value) else None
