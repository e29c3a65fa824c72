"""Every failure the tickets library reports, each carrying the fields a caller needs.

A refused token always raises `TokenError` with a machine-readable `reason`, so a
node answers one generic 401 while logging why. Third-party errors (joserfc,
cryptography, json, rfc8785) are translated here at the library edge.

    TicketsError
    ├── SecretError                   the signing secret is not 32 bytes of base64url or hex
    ├── JWKError                      a public JWK or JWKS document is unusable
    ├── ClaimsError                   a claim set cannot be issued (lifetime, depth, types)
    ├── TokenError                    an access token is refused; `reason` in REASONS
    ├── SnapshotError                 a revocation snapshot is refused; `reason` says why
    │   └── RollbackError             reason "rollback": its seq is lower than the one held
    ├── ScopeError
    │   ├── UnknownScopeError         not a wire scope, alias or atomic permission
    │   ├── UnknownRoleError          not reader / editor / admin / owner
    │   ├── ScopeExceededError        a child asks for more than its parent holds
    │   └── InsufficientScopeError    the caller lacks the permission a tool needs (403)
    └── AuditError
        ├── RecordError               an audit record cannot be built (field, problem)
        └── CheckpointError           an audit checkpoint is malformed or its signature fails
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, get_args

Reason = Literal[
    "bad_size",
    "malformed",
    "bad_typ",
    "bad_alg",
    "unknown_kid",
    "bad_signature",
    "bad_json",
    "bad_claims",
    "bad_iss",
    "bad_aud",
    "expired",
    "not_yet_valid",
    "lifetime",
    "depth",
    "revoked",
    "generation",
    "key_revoked",
    "stale",
]
"""Why a token was refused, in the order the checks run (`malformed` and `bad_claims`
cover a token that is not a compact JWS at all and a payload with missing or mistyped
claims)."""

REASONS: tuple[Reason, ...] = get_args(Reason)


class TicketsError(Exception):
    """Base of every failure this library raises; `message` is for people."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class SecretError(TicketsError):
    def __init__(self, problem: str) -> None:
        super().__init__(
            f"signing secret rejected: {problem}; give exactly 32 bytes as base64url "
            "(43 characters) or hex (64 characters)"
        )
        self.problem = problem


class JWKError(TicketsError):
    def __init__(self, problem: str) -> None:
        super().__init__(f"public key rejected: {problem}")
        self.problem = problem


class ClaimsError(TicketsError):
    def __init__(self, claim: str, problem: str) -> None:
        super().__init__(f"claim {claim!r} rejected: {problem}")
        self.claim = claim
        self.problem = problem


class TokenError(TicketsError):
    """A token was refused. Answer the generic 401; log `reason` and `detail`."""

    def __init__(self, reason: Reason, detail: str = "") -> None:
        super().__init__(f"token refused ({reason}){': ' + detail if detail else ''}")
        self.reason: Reason = reason
        self.detail = detail


class SnapshotError(TicketsError):
    """A revocation snapshot was refused; the node keeps the one it holds."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"revocation snapshot refused ({reason}){': ' + detail if detail else ''}")
        self.reason = reason
        self.detail = detail


class RollbackError(SnapshotError):
    def __init__(self, held_seq: int, offered_seq: int) -> None:
        super().__init__("rollback", f"offered seq {offered_seq} is older than held seq {held_seq}")
        self.held_seq = held_seq
        self.offered_seq = offered_seq


class ScopeError(TicketsError):
    pass


class UnknownScopeError(ScopeError):
    def __init__(self, value: str) -> None:
        super().__init__(
            f"unknown scope {value!r}; use read, write, read_write, read_write_delete or "
            "allow_all (aliases: r, w, rw, rwd, all)"
        )
        self.value = value


class UnknownRoleError(ScopeError):
    def __init__(self, value: str) -> None:
        super().__init__(f"unknown role {value!r}; use reader, editor, admin or owner")
        self.value = value


def _names(permissions: Iterable[str]) -> str:
    return " ".join(sorted(permissions)) or "(none)"


class ScopeExceededError(ScopeError):
    def __init__(self, parent: Iterable[str], child: Iterable[str]) -> None:
        self.parent = frozenset(parent)
        self.child = frozenset(child)
        self.extra = self.child - self.parent
        super().__init__(
            f"requested permissions exceed the issuer's: {_names(self.extra)} not held; "
            f"ask for at most {_names(self.parent)}"
        )


class InsufficientScopeError(ScopeError):
    """The token is valid but lacks a permission: answer 403 `insufficient_scope`."""

    def __init__(self, needed: Iterable[str], held: Iterable[str]) -> None:
        self.needed = frozenset(needed)
        self.held = frozenset(held)
        self.missing = self.needed - self.held
        super().__init__(
            f"this call needs {_names(self.needed)} but the token holds {_names(self.held)}; "
            "request a token with the missing permission"
        )


class AuditError(TicketsError):
    pass


class RecordError(AuditError):
    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"audit record field {field!r} rejected: {problem}")
        self.field = field
        self.problem = problem


class CheckpointError(AuditError):
    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"audit checkpoint refused ({reason}){': ' + detail if detail else ''}")
        self.reason = reason
        self.detail = detail
