"""What a commit says it did: a verb its caller chooses, and the subject vault_core knows.

vault_core names no tool. Every commit it makes itself (a move, a merge, a delete, the first
import of a vault, a recovery at start, …) begins with the verb for that operation, taken
from the vault's `Verbs`; the node passes its tool names (vault_node.verbs), so a vault's
history reads `note_move: a.md -> b.md`. A single-note write names its verb in
`WriteOp.commit_as`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Verbs:
    """The first word of each commit vault_core makes on its own; plain verbs by default."""

    move: str = "move"
    merge: str = "merge"
    split: str = "split"
    retag: str = "retag"
    replace: str = "replace"
    delete: str = "delete"
    attach: str = "attach"
    restore: str = "restore"
    import_: str = "import"
    recover: str = "recover"
    create: str = "create"
