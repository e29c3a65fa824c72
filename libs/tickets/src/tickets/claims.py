"""The claim set every token carries (docs/design.md#tokens) and the lifetime bound of each kind.

One format serves three kinds. The kind follows from the signed claims, so no extra
claim is needed: a `gid` makes a grant token (1-60 min), a `client_id` without one an
OAuth access token (at most 1 h), neither an agent token (at most 90 days).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from tickets.errors import ClaimsError, ScopeError
from tickets.reach import NO_PATHS, Paths, RuleError
from tickets.scopes import ROLES, Permissions, Role, as_permissions, from_claim, role_cap, to_claim

Kind = Literal["oauth", "grant", "agent"]
MINUTE, HOUR, DAY = 60, 3600, 86400
LIFETIME: Mapping[Kind, tuple[int, int]] = {
    "oauth": (1, HOUR),
    "grant": (MINUTE, HOUR),
    "agent": (1, 90 * DAY),
}
"""Inclusive bounds on `exp - iat` in seconds, per kind."""
DEFAULT_LIFETIME: Mapping[Kind, int] = {"oauth": HOUR, "grant": 15 * MINUTE, "agent": 30 * DAY}
MAX_DEPTH = 2
ALL_VAULTS = "*"
"""`vaults: ["*"]` — every vault the member may see; never combined with names."""

T = TypeVar("T")


@dataclass(frozen=True)
class Claims:
    """A validated claim set. `chain` is the grant and its ancestors, root first, so
    `dep == len(chain)` and `chain[-1] == gid`; a token without a grant has dep 0."""

    iss: str
    sub: str
    aud: tuple[str, ...]
    iat: int
    nbf: int
    exp: int
    jti: str
    scope: Permissions
    vaults: tuple[str, ...]
    role: Role
    mgen: int = 0
    gid: str | None = None
    chain: tuple[str, ...] = ()
    dep: int = 0
    client_id: str | None = None
    paths: Paths = NO_PATHS
    """Path rules per vault (tickets.reach); a vault not named is reached whole."""

    @property
    def kind(self) -> Kind:
        if self.gid is not None:
            return "grant"
        return "oauth" if self.client_id is not None else "agent"

    @property
    def lifetime(self) -> int:
        return self.exp - self.iat

    def allows_vault(self, vault: str) -> bool:
        return self.vaults == (ALL_VAULTS,) or vault in self.vaults

    def lifetime_problem(self) -> str | None:
        low, high = LIFETIME[self.kind]
        if not low <= self.lifetime <= high:
            return f"{self.kind} token lives {self.lifetime} s; allowed {low}-{high} s"
        if self.nbf > self.exp:
            return "nbf is after exp"
        return None

    def depth_problem(self) -> str | None:
        if not 0 <= self.dep <= MAX_DEPTH:
            return f"delegation depth {self.dep} exceeds {MAX_DEPTH}"
        if len(self.chain) != self.dep:
            return f"chain has {len(self.chain)} grants but dep is {self.dep}"
        if len(set(self.chain)) != len(self.chain):
            return "chain repeats a grant"
        if (self.chain[-1] if self.chain else None) != self.gid:
            return "gid is not the last grant of chain"
        return None

    def to_payload(self) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "iss": self.iss,
            "sub": self.sub,
            "aud": self.aud[0] if len(self.aud) == 1 else list(self.aud),
            "iat": self.iat,
            "nbf": self.nbf,
            "exp": self.exp,
            "jti": self.jti,
            "scope": to_claim(self.scope),
            "vaults": list(self.vaults),
            "role": self.role,
            "mgen": self.mgen,
        }
        if self.gid is not None:
            payload.update(gid=self.gid, chain=list(self.chain), dep=self.dep)
        if self.client_id is not None:
            payload["client_id"] = self.client_id
        if self.paths:
            payload["paths"] = self.paths.to_claim()
        return payload

    @classmethod
    def from_payload(cls, payload: Mapping[str, Any]) -> Claims:
        """Read a payload with strict types; ClaimsError names the first bad claim."""
        get = _Reader(payload)
        return cls(
            iss=get.text("iss"),
            sub=get.text("sub"),
            aud=get.audience(),
            iat=get.number("iat"),
            nbf=get.number("nbf"),
            exp=get.number("exp"),
            jti=get.text("jti"),
            scope=get.convert("scope", str, from_claim),
            vaults=get.vaults(),
            role=get.convert("role", str, _role),
            mgen=get.number("mgen"),
            gid=get.optional("gid", get.text),
            chain=tuple(get.optional("chain", get.texts) or ()),
            dep=get.optional("dep", get.number) or 0,
            client_id=get.optional("client_id", get.text),
            paths=get.paths(),
        )


def _role(name: str) -> Role:
    if name not in ROLES:
        raise ValueError(f"unknown role {name!r}")
    return name


class _Reader:
    def __init__(self, payload: Mapping[str, Any]) -> None:
        self.payload = payload

    def _get(self, name: str) -> Any:
        if name not in self.payload:
            raise ClaimsError(name, "missing")
        return self.payload[name]

    def text(self, name: str) -> str:
        value = self._get(name)
        if not isinstance(value, str) or not value:
            raise ClaimsError(name, "must be a non-empty string")
        return value

    def texts(self, name: str) -> list[str]:
        value = self._get(name)
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise ClaimsError(name, "must be a list of non-empty strings")
        return value

    def number(self, name: str) -> int:
        value = self._get(name)
        if type(value) is not int or value < 0:
            raise ClaimsError(name, "must be a non-negative integer")
        return value

    def audience(self) -> tuple[str, ...]:
        value = self._get("aud")
        audience = [value] if isinstance(value, str) else self.texts("aud")
        if not audience or not all(audience):
            raise ClaimsError("aud", "must name at least one resource")
        return tuple(audience)

    def vaults(self) -> tuple[str, ...]:
        vaults = self.texts("vaults")
        if not vaults or (ALL_VAULTS in vaults and len(vaults) > 1):
            raise ClaimsError("vaults", 'must be vault names, or ["*"] alone')
        return tuple(vaults)

    def convert(self, name: str, kind: type[str], parse: Callable[[str], T]) -> T:
        value = self._get(name)
        if not isinstance(value, kind):
            raise ClaimsError(name, f"must be a {kind.__name__}")
        try:
            return parse(value)
        except (ValueError, ScopeError) as exc:
            raise ClaimsError(name, str(exc)) from exc

    def paths(self) -> Paths:
        try:
            paths = Paths.from_claim(self.payload.get("paths"))
        except RuleError as exc:
            raise ClaimsError("paths", exc.message) from exc
        vaults = self.vaults()
        if vaults != (ALL_VAULTS,) and (outside := sorted(set(paths.vaults) - set(vaults))):
            raise ClaimsError("paths", f"names vaults the token does not reach: {outside}")
        return paths

    def optional(self, name: str, read: Callable[[str], T]) -> T | None:
        return read(name) if name in self.payload else None


def new_jti() -> str:
    """128 random bits, base64url-sized: unique per token, the key for revocation. Never
    begins with '-', so a command line takes it as an argument, not as an option."""
    return plain_id(secrets.token_urlsafe(16))


def plain_id(text: str) -> str:
    """A base64url id as a command line takes it: a leading '-' becomes 'A' (the id stays as
    unique as before, less than one bit in 128 given up, and a derived id stays derived)."""
    return "A" + text[1:] if text.startswith("-") else text


def issue(
    *,
    iss: str,
    sub: str,
    aud: str | Sequence[str],
    scope: str | Sequence[str] | Permissions,
    vaults: Sequence[str],
    role: Role,
    now: int,
    mgen: int = 0,
    chain: Sequence[str] = (),
    client_id: str | None = None,
    lifetime: int | None = None,
    jti: str | None = None,
    paths: Paths | None = None,
) -> Claims:
    """Build a claim set for the center to sign, refusing one no node would accept.

    `chain` is the grant and its ancestors, root first (empty for a member's own
    token); the scope is refused if it exceeds the role's cap."""
    permissions = as_permissions(scope)
    if not permissions <= role_cap(role):
        raise ClaimsError("scope", f"{to_claim(permissions)} exceeds the cap of role {role}")
    kind: Kind = "grant" if chain else "oauth" if client_id is not None else "agent"
    exp = now + (DEFAULT_LIFETIME[kind] if lifetime is None else lifetime)
    payload: dict[str, Any] = {"iss": iss, "sub": sub, "iat": now, "nbf": now, "exp": exp}
    payload.update(aud=aud if isinstance(aud, str) else list(aud), jti=jti or new_jti())
    payload.update(scope=to_claim(permissions), vaults=list(vaults), role=role, mgen=mgen)
    if chain:
        payload.update(gid=chain[-1], chain=list(chain), dep=len(chain))
    if client_id is not None:
        payload["client_id"] = client_id
    if paths:
        payload["paths"] = paths.to_claim()
    claims = Claims.from_payload(payload)
    if problem := claims.lifetime_problem():
        raise ClaimsError("exp", problem)
    if problem := claims.depth_problem():
        raise ClaimsError("chain", problem)
    return claims
