"""The `instructions` of the initialize answer (docs/design.md#instructions), for one caller.

Three parts: working rules for the tools this token may use, the default and the
visible vaults, and each visible vault's own `.secondbrain/instructions.md` — so a
knowledge base's conventions travel with it.
"""

from __future__ import annotations

from vault_core import layouts
from vault_node.context import Context

VAULT_TEXT_LIMIT = 8 * 1024  # per vault: conventions, not a second copy of the notes

READ_RULES = (
    "Search before you write: note_search first (ranked full text), vault_grep for exact "
    "strings or regular expressions.",
    "For a long note call note_outline first, then note_read with a heading.",
    "A result cut to fit the size limit says so in `truncated` and `notice`; ask for less.",
)
WRITE_RULES = (
    "Read before you change, and pass the content_hash you read back with the change.",
    "Prefer note_edit and note_section_edit over rewriting a whole note with note_write.",
    "Use dry_run for anything that touches more than one note (note_move, note_merge, "
    "note_split, tag_rename, vault_replace).",
    "Link every new note from at least one existing note.",
)


def rules(ctx: Context) -> list[str]:
    reads, writes = ctx.sees_content, ctx.ticket.allows("add")
    found: list[str] = []
    if reads:
        found += READ_RULES
    if writes and reads:
        found += WRITE_RULES
    if reads and not writes:
        found.append("This token may only read: no tools that change notes are offered.")
    if writes and not reads:
        found.append(
            "This token may add but not read: only the tools that add without looking at "
            "what is there are offered (a new note, an inbox capture, an append to a daily "
            "note, a new attachment), and their answers say nothing of what the vault holds."
        )
    return found


def compose(ctx: Context) -> str:
    """The instructions text for this caller."""
    visible = [name for name in ctx.library.names() if ctx.ticket.allows_vault(name)]
    elsewhere = ctx.vaults_elsewhere()  # served by other nodes: their own texts not included
    default = ctx.config.default_vault
    lines = ["# secondbrain", "", *(f"- {rule}" for rule in rules(ctx)), ""]
    if default in visible or default in elsewhere:
        lines.append(f"The default vault is {default}; tools use it when you omit `vault`.")
    else:
        lines.append("Pass `vault` with every call: the default vault is not one of yours.")
    every = sorted({*visible, *elsewhere})
    lines.append("Vaults you can use: " + (", ".join(every) if every else "none") + ".")
    for name in visible:
        opened = ctx.library.ready(name)
        if opened is None:  # still being opened: its own instructions are not waited for
            lines += ["", f"## Vault {name}", "", "Being opened (its first index); retry soon."]
            continue
        own = layouts.read_instructions(opened.vault.root).strip()
        if own:
            if len(own.encode("utf-8")) > VAULT_TEXT_LIMIT:
                own = own.encode("utf-8")[:VAULT_TEXT_LIMIT].decode("utf-8", "ignore") + " …"
            lines += ["", f"## Vault {name}", "", own]
    return "\n".join(lines) + "\n"
