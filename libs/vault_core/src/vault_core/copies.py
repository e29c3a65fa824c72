"""Which copy of a replicated vault this folder holds, kept on disk so a restart keeps it.

A replica refuses commits from an epoch older than the newest it saw, and a restart must
not forget that epoch; a replica's working tree is brought back to HEAD when it opens,
never committed (docs/design.md#replication-between-nodes).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from vault_core.errors import StorageError

STATE_FILE = "replication.json"
"""In the vault's `.secondbrain/`: role, epoch and primary as last learnt."""

Role = Literal["", "primary", "replica"]


@dataclass(frozen=True)
class CopyState:
    """`role` "" is a vault nobody replicates; `epoch` the newest the node saw for it;
    `head_epoch` the epoch its head was written under (as primary, or received)."""

    role: Role = ""
    epoch: int = 0
    primary: str = ""
    head_epoch: int = 0


def load(root: Path) -> CopyState:
    """The state saved in the vault at `root`; an unreplicated one when none is (or it is
    unreadable, which the next save repairs)."""
    try:
        raw = json.loads((root / ".secondbrain" / STATE_FILE).read_text(encoding="utf-8"))
        role, epoch, primary = raw["role"], raw["epoch"], raw["primary"]
        head_epoch = raw.get("head_epoch", 0)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return CopyState()
    valid = role in {"", "primary", "replica"} and type(epoch) is int
    if not valid or not isinstance(primary, str) or type(head_epoch) is not int:
        return CopyState()
    return CopyState(role, epoch, primary, head_epoch)


def save(root: Path, state: CopyState) -> None:
    """Write `state` durably (temporary file, fsync, rename) before anything relies on it."""
    folder = root / ".secondbrain"
    # A name of its own per save: two threads saving at once never rename each other's.
    temp = folder / f".{STATE_FILE}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        folder.mkdir(exist_ok=True)
        with temp.open("w", encoding="utf-8") as out:
            json.dump(asdict(state), out)
            out.flush()
            os.fsync(out.fileno())
        temp.replace(folder / STATE_FILE)
    except OSError as exc:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise StorageError(f".secondbrain/{STATE_FILE}", exc.strerror or "cannot write") from exc


def is_replica(root: Path) -> bool:
    return load(root).role == "replica"
