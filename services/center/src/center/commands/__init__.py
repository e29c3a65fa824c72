"""The remote verbs of `secondbrain-center`: members, grants, requests, tokens, nodes and consents,
one module per noun.

The operator's verbs (`member`, `node`) send `SECONDBRAIN_CENTER_ADMIN_TOKEN`; the verbs
only a member runs (`request create|cancel|claim`, `token issue`) send the member's own
`SECONDBRAIN_CENTER_TOKEN`; every verb both may run sends the member's token with
`--as-member` or when no admin token is set (`Remote.either`). Ids are checked here with
the center's own rules before any call. A credential or token the center returns is
printed once, by the verb that created it. Path rules are given as `VAULT:FOLDER` with
`--read-path`, `--write-path` and `--exclude` (each repeatable) and listed compactly.
`consent list|revoke` show and end what members allowed OAuth clients on the consent page.
"""

from __future__ import annotations

from center.commands._shared import AsMember
from center.commands.consents import consent_app
from center.commands.grants import grant_app
from center.commands.members import member_app
from center.commands.nodes import node_app, vaults
from center.commands.requests import request_app
from center.commands.tokens import token_app

__all__ = [
    "AsMember",
    "consent_app",
    "grant_app",
    "member_app",
    "node_app",
    "request_app",
    "token_app",
    "vaults",
]
