"""The names the center gives and checks — member ids, vault names, the operator's id — and
path rules in their one spelled-out shape (`Rules`), with no database behind them: the CLI
checks an id or a rule before any call without loading what the center's own routes need.
`center.principals` and `center.rules` use these."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from center.errors import InvalidArgumentError

if TYPE_CHECKING:
    from tickets.reach import Reach

OPERATOR_ID = "center-admin"
MEMBER_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
VAULT_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
"""The node's vault-name rule (`vault_core.paths.VAULT_NAME`; a test keeps them equal)."""
VaultRules = dict[str, list[str] | None]
"""One vault's path rules: `{"read": [...], "write": [...], "exclude": [...]}`, `read` or
`write` None (or absent, as a caller may send them) where it is the whole vault."""
Rules = dict[str, VaultRules]
"""Path rules as they cross every edge — the CLI's and the console's fields, a request's
body, a stored row, an answer: `{vault: VaultRules}`, a vault not named reached whole.
Inside the center they are `tickets.Paths`; `center.rules` converts at the edges."""
RULES_FIELD = "paths"
CREDENTIAL_PREFIXES = ("sbm_", "sbn_")
"""Member and node credentials start so; no id may, so no id is mistaken for one."""


def check_member_id(value: str) -> str:
    if not MEMBER_ID.fullmatch(value):
        raise InvalidArgumentError("id", "use 1-64 characters of A-Z, a-z, 0-9, '-' and '_'")
    if value == OPERATOR_ID:
        raise InvalidArgumentError("id", f"{OPERATOR_ID!r} is reserved for the operator")
    if value.startswith(CREDENTIAL_PREFIXES):
        raise InvalidArgumentError("id", "ids starting sbm_ or sbn_ look like credentials")
    return value


def check_vault(value: str, field: str = "vault") -> str:
    if not VAULT_NAME.fullmatch(value):
        raise InvalidArgumentError(field, "use vault names of 1-64 characters of a-z, 0-9, _ and -")
    return value


def rules_of(reach: Reach) -> VaultRules:
    """Every list spelled out; `read` or `write` None where it is the whole vault."""
    from tickets.reach import ROOT  # noqa: PLC0415 - the CLI checks names without tickets

    def folders(items: tuple[str, ...]) -> list[str] | None:
        return None if items == (ROOT,) else list(items)

    return {
        "read": folders(reach.read),
        "write": folders(reach.write),
        "exclude": list(reach.exclude),
    }


def rules_from_args(read: Iterable[str], write: Iterable[str], exclude: Iterable[str]) -> Rules:
    """Rules from `vault:folder` values (the CLI's --read-path, --write-path, --exclude
    and the console's fields). A vault with write folders or exclusions but no read folders
    reads the whole vault."""
    rules: Rules = {}
    for key, values in (("read", read), ("write", write), ("exclude", exclude)):
        for value in values:
            vault, sep, folder = value.strip().partition(":")
            if not sep or not vault or not folder.strip():
                raise InvalidArgumentError(
                    RULES_FIELD, f"{value!r}: write VAULT:FOLDER, e.g. team:projects/acme"
                )
            listed = rules.setdefault(vault.strip(), {}).setdefault(key, [])
            assert listed is not None  # only ever set to a list here
            listed.append(folder.strip())
    return rules


def _replica(copy: Mapping[str, Any]) -> str:
    if copy["in_sync"]:
        return f"{copy['node']} (in sync)"
    lag = copy.get("lag")
    return f"{copy['node']} (lagging {lag if lag is not None else '?'})"


def described(vault: Mapping[str, Any], when: Callable[[int], str]) -> dict[str, Any]:
    """A vault's replication state in words (the CLI's table, the console's page): its
    replicas in sync or lagging by how many commits, the lease's expiry (`when` writes
    Unix ms as text), a move's target and step in place of the state."""
    copies = vault.get("copies") or []
    expires = vault.get("expires")
    state = vault.get("state") or "unplaced"
    move = vault.get("move")
    if move:
        state = f"moving to {move['target']} ({move['step']})"
    return {
        **vault,
        "replicas": [_replica(c) for c in copies if c["role"] == "replica"],
        "lease": when(expires) if expires is not None else None,
        "state": state,
    }
