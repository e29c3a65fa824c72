"""What the node's commits say: each begins with the name of the tool that made it.

vault_core knows no tool; it begins the commits it makes with the verbs it is given. The node
gives these once, when it opens its library (`app`), and single-note writes name their tool
in `WriteOp.commit_as`. A vault's history so reads `note_move: a.md -> b.md`,
`vault_recover: …`, the way `note_history` shows it.
"""

from __future__ import annotations

from vault_core import Verbs

VERBS = Verbs(
    move="note_move",
    merge="note_merge",
    split="note_split",
    retag="tag_rename",
    replace="vault_replace",
    delete="note_delete",
    attach="attachment_put",
    restore="note_restore",
    import_="vault_import",
    recover="vault_recover",
    create="vault_create",
)
