"""Operations over many notes: move, merge, split, relink, replace, tag rename, trash.

Each operation is a module the node's maintenance tools call (`move.move_note`, …); `Skip`
is a note an operation left alone.
"""

from vault_core.ops import merge, move, relink, replace, retag, split, trash
from vault_core.ops.outcome import Skip

__all__ = ["Skip", "merge", "move", "relink", "replace", "retag", "split", "trash"]
