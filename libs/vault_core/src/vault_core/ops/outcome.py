"""What an operation over many notes reports besides its changes: the notes it left alone.

A move, merge, split, tag rename or replace never stops at the first note it cannot read
or write: it leaves that note as it is, goes on, and says so — each skip with the path and
the reason (a vault-core error code and its message, never note content).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vault_core.errors import VaultError


@dataclass(frozen=True)
class Skip:
    """One note left alone, and why."""

    path: str
    code: str
    reason: str

    @classmethod
    def of(cls, path: str, exc: VaultError) -> Skip:
        return cls(path, exc.code, exc.message)

    def row(self) -> dict[str, Any]:
        return {"path": self.path, "code": self.code, "reason": self.reason}
