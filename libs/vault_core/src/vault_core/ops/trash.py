"""Emptying a vault's trash of copies kept longer than the retention (docs/design.md#trash).

The write path puts a copy of every destroyed note in `.secondbrain/trash/`; this is the
one place copies leave it. A copy that cannot be inspected or removed is left for the next
purge.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from vault_core.storage import TRASH


def purge(state_dir: Path, cutoff: float) -> int:
    """Delete the trash copies under `state_dir` last modified before `cutoff` (a Unix
    time); returns how many went. A vault without a trash has nothing to purge."""
    trash = state_dir / TRASH
    if not trash.is_dir():
        return 0
    removed = 0
    for copy in trash.iterdir():
        with contextlib.suppress(OSError):
            if copy.is_file() and copy.stat().st_mtime < cutoff:
                copy.unlink()
                removed += 1
    return removed
