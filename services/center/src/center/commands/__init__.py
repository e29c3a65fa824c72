"""The nouns of `secondbrain-center` — members, grants, requests, tokens, nodes, vaults,
consents, keys and the audit log — one module per noun, each found by `center.cli` at start.

A module gives its verbs as `app`, a Typer: named for its noun (`typer.Typer(name="member")`)
its verbs are `member …`; unnamed, they join the top level (`vaults`). Adding a noun is
adding its module. The operator's verbs (`member`, `node`) send
`SECONDBRAIN_CENTER_ADMIN_TOKEN`; the verbs only a member runs (`request create|cancel|claim`,
`token issue`) send the member's own `SECONDBRAIN_CENTER_TOKEN`; every verb both may run
sends the member's token with `--as-member` or when no admin token is set
(`Remote.either`). Ids are checked here with the center's own rules before any call. A
credential or token the center returns is printed once, by the verb that created it. Path
rules are given as `VAULT:FOLDER` with `--read-path`, `--write-path` and `--exclude` (each
repeatable) and listed compactly.
"""
