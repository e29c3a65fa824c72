"""The index: a per-vault SQLite cache of the notes, its schema and rows, and the watcher
that keeps it true (docs/design.md#index).

Other packages use the index through these names; the modules below are its own business.
"""

from vault_core.index.store import Index, ReconcileStats
from vault_core.index.watch import Watcher

__all__ = ["Index", "ReconcileStats", "Watcher"]
