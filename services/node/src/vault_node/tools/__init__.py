"""The tools, each declared with `@tool` right above its handler, one module per lifecycle.

`find` looks across a vault and `read` at one note or file, changing nothing; `write`
creates, changes or deletes one note or file; `capture` adds to notes from a pattern
(template, daily note, inbox); `maint` changes many notes at once, or the vault itself;
`history` works on git history. Shared pieces live in `base` (declarations), `common`
(note views and path helpers), `shape` (answer schemas and fitting) and `attachments`
(reading images, PDFs and other files). `vault_node.registry` gathers the tools and
`vault_node.dispatch` runs a call.
"""
