"""Scopes, roles and atomic permissions, and the one rule that maps tools onto them.

Wire scopes are bundles; tokens carry only the atomic permissions they expand to
(`read`, `write`, `delete`, `manage`), never a bundle or a wildcard. `manage` is the
vault-level permission (today: `vault_create`) that only `allow_all` includes. A role
caps what its member may hold, and a delegated child never exceeds its parent. This
module holds the rules; whether a verified token may call a tool is asked of it alone
(`tickets.verify.Ticket.allows`, `.require`, `.sees_content`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal, cast, get_args

from tickets.errors import (
    ScopeExceededError,
    UnknownRoleError,
    UnknownScopeError,
)

Permission = Literal["read", "write", "delete", "manage"]
Scope = Literal["read", "write", "read_write", "read_write_delete", "allow_all"]
Role = Literal["reader", "editor", "admin", "owner"]
ToolKind = Literal["read", "add", "write", "delete", "vault_create"]
"""What a tool does: reads; adds without looking at what is there (a new note, a capture,
an append — the only tools a write-only caller may use); changes what is there (its
outcome depends on existing content, so it needs `read` too); destroys (delete, merge,
displacing overwrite); or creates a vault."""

PERMISSIONS: tuple[Permission, ...] = get_args(Permission)
SCOPES: tuple[Scope, ...] = get_args(Scope)
ROLES: tuple[Role, ...] = get_args(Role)
Permissions = frozenset[Permission]

EXPANSION: Mapping[Scope, Permissions] = {
    "read": frozenset({"read"}),
    "write": frozenset({"write"}),
    "read_write": frozenset({"read", "write"}),
    "read_write_delete": frozenset({"read", "write", "delete"}),
    "allow_all": frozenset(PERMISSIONS),
}
"""Each wire scope and the atomic permissions it grants. `write` alone is write-only."""

ROLE_CAPS: Mapping[Role, Scope] = {
    "reader": "read",
    "editor": "read_write",
    "admin": "read_write_delete",
    "owner": "allow_all",
}

ALIASES: Mapping[str, Scope] = {
    "r": "read",
    "ro": "read",
    "w": "write",
    "wo": "write",
    "rw": "read_write",
    "rwd": "read_write_delete",
    "all": "allow_all",
}
"""Short forms the CLI and HTTP accept. Spellings with `-`, `+` or spaces between
words (`read+write+delete`, `Read-Write`) normalize to the wire name as well."""

NEEDED: Mapping[ToolKind, Permissions] = {
    "read": frozenset({"read"}),
    "add": frozenset({"write"}),
    "write": frozenset({"read", "write"}),
    "delete": frozenset({"read", "write", "delete"}),
    "vault_create": EXPANSION["allow_all"],
}
"""Write-only is blind: every tool whose answer could depend on what a note says needs
`read`, so a `write`-only token reaches only the `add` tools (docs/security.md)."""


def parse_scope(text: str) -> Scope:
    """The wire scope named by `text`: a wire name or an alias, case-insensitive."""
    name = text.strip().lower()
    for separator in ("-", "+", " "):
        name = name.replace(separator, "_")
    if name in ALIASES:
        return ALIASES[name]
    if name in SCOPES:
        return name
    raise UnknownScopeError(text)


def parse_role(text: str) -> Role:
    name = text.strip().lower()
    if name not in ROLES:
        raise UnknownRoleError(text)
    return name


def expand(scope: str) -> Permissions:
    """Atomic permissions of a wire scope or alias."""
    return EXPANSION[parse_scope(scope)]


def as_permissions(value: str | Iterable[str]) -> Permissions:
    """A wire scope (string) or an iterable of atomic permission names, as a set."""
    if isinstance(value, str):
        return expand(value)
    names = frozenset(value)
    for name in names:
        if name not in PERMISSIONS:
            raise UnknownScopeError(name)
    return cast(Permissions, names)


def scope_name(permissions: Iterable[str]) -> Scope | None:
    """The wire scope that expands to exactly these permissions, if there is one."""
    held = frozenset(permissions)
    return next((s for s in SCOPES if EXPANSION[s] == held), None)


def role_cap(role: str) -> Permissions:
    """The most a member of `role` may hold: a token's scope is cut to it."""
    return EXPANSION[ROLE_CAPS[parse_role(role)]]


def narrow(parent: str | Iterable[str], child: str | Iterable[str]) -> Permissions:
    """The child's permissions, refused with ScopeExceededError if any exceeds the parent."""
    held, asked = as_permissions(parent), as_permissions(child)
    if not asked <= held:
        raise ScopeExceededError(held, asked)
    return asked


def to_claim(permissions: Iterable[str]) -> str:
    """The `scope` claim: space-separated atomic permissions in canonical order."""
    held = as_permissions(permissions)
    return " ".join(p for p in PERMISSIONS if p in held)


def from_claim(text: str) -> Permissions:
    """Parse a `scope` claim; an unknown name refuses the whole claim."""
    return as_permissions(text.split())


def needed(kind: ToolKind, *, displaces: bool = False) -> Permissions:
    """Permissions a tool of `kind` needs; `displaces` marks an overwrite that replaces
    an existing note or attachment, which needs `delete` as well."""
    base = NEEDED[kind]
    return base | NEEDED["delete"] if displaces else base
