"""Git history: the per-vault git store and its private plumbing (index file, trees, packs).

Other packages use the history through these names (docs/design.md#git).
"""

from vault_core.git.store import GitStore, Identity, Revision

__all__ = ["GitStore", "Identity", "Revision"]
