"""The primary's lease (docs/design.md#replication-and-failover): a compact JWS the center
signs for one replica of one vault, saying which node is primary at which epoch and until
when.

The primary presents it when it pushes commits to that replica; the replica verifies it
offline with the keys it already trusts for tokens and refuses a push whose epoch is older
than the newest it has seen (the fencing token). The lease names the replica's own MCP URL
as `aud`, so a lease for one replica is worth nothing at another.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NoReturn

from tickets import jws
from tickets.errors import Reason, TokenError
from tickets.keys import KeySet, SigningKey, b64url_encode
from tickets.verify import canonical_resource

LEASE_TYP = "sb-lease+jwt"
MAX_LEASE_BYTES = 2048
LEASE_SKEW = 5
"""Seconds of clock difference forgiven at `iat` and `exp`: a lease lives about ten
seconds, so a minute (what access tokens forgive) would outlive it several times."""
VAULT_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
CLAIMS = ("iss", "aud", "sub", "vault", "epoch", "iat", "exp")


@dataclass(frozen=True)
class Lease:
    """`sub` (a node id) is primary of `vault` at `epoch` until `exp` (Unix seconds), as
    told to the replica at `aud` (its MCP URL) by the center `iss`."""

    iss: str
    aud: str
    sub: str
    vault: str
    epoch: int
    iat: int
    exp: int

    def to_payload(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in CLAIMS}

    @classmethod
    def from_payload(cls, payload: Mapping[str, Any]) -> Lease:
        """Read a lease's claims with strict types (TokenError reason bad_claims)."""
        extra = set(payload) - set(CLAIMS)
        missing = [name for name in CLAIMS if name not in payload]
        if extra or missing:
            _refuse("bad_claims", f"claims missing {missing} or not allowed {sorted(extra)}")
        strings = [payload[name] for name in ("iss", "aud", "sub", "vault")]
        if not all(isinstance(value, str) and value for value in strings):
            _refuse("bad_claims", "iss, aud, sub and vault must be non-empty strings")
        numbers = [payload[name] for name in ("epoch", "iat", "exp")]
        if not all(type(value) is int and 0 <= value < 2**63 for value in numbers):
            _refuse("bad_claims", "epoch, iat and exp must be non-negative integers")
        if payload["epoch"] < 1:
            _refuse("bad_claims", "epoch starts at 1")
        if not VAULT_NAME.fullmatch(payload["vault"]):
            _refuse("bad_claims", "vault is not a vault name")
        if payload["exp"] <= payload["iat"]:
            _refuse("bad_claims", "exp must be after iat")
        return cls(**{name: payload[name] for name in CLAIMS})


def _refuse(reason: Reason, detail: str) -> NoReturn:
    raise TokenError(reason, detail)


def sign_lease(lease: Lease, key: SigningKey) -> str:
    """The lease as a compact JWS of type `sb-lease+jwt`, signed by the center's key.

    Assembled here and signed with the raw Ed25519 key rather than through joserfc: a
    primary's renewal signs one per replica of every vault it holds, and this is an
    order of magnitude faster; `verify_lease` checks it like any other JWS."""
    payload = lease.to_payload()
    Lease.from_payload(payload)
    header = jws.dumps({"alg": jws.ALG, "typ": LEASE_TYP, "kid": key.kid})
    signing_input = f"{b64url_encode(header)}.{b64url_encode(jws.dumps(payload))}"
    return f"{signing_input}.{b64url_encode(key.sign(signing_input.encode('ascii')))}"


def verify_lease(
    token: str,
    keys: KeySet,
    *,
    issuer: str,
    audience: str,
    now: float | None = None,
    skew: int = LEASE_SKEW,
) -> Lease:
    """Verify a lease for the replica at `audience`; returns its claims.

    Checks in order: size and shape, `typ`, `alg`, a known and usable `kid`, the
    signature, strict claims, `iss`, `aud`, `iat` not in the future and `exp` not past
    (each with `skew`). Whether `epoch` is new enough is the replica's to judge: it alone
    knows the newest epoch it has seen. Refusals raise TokenError with a reason."""
    now = time.time() if now is None else now
    header = jws.read_header(token, max_bytes=MAX_LEASE_BYTES)
    if not jws.typ_matches(header.typ, LEASE_TYP):
        _refuse("bad_typ", f"typ {header.typ!r}, expected {LEASE_TYP!r}")
    if header.alg != jws.ALG:
        _refuse("bad_alg", f"alg {header.alg!r}, only {jws.ALG} is accepted")
    key = keys.get(header.kid, now)
    if key is None:
        _refuse("unknown_kid", f"kid {header.kid!r} is not in the key set")
    payload = jws.loads(jws.verify_signature(token, key, max_bytes=MAX_LEASE_BYTES))
    lease = Lease.from_payload(payload)
    if lease.iss != issuer:
        _refuse("bad_iss", f"issuer {lease.iss!r}")
    if canonical_resource(lease.aud) != canonical_resource(audience):
        _refuse("bad_aud", f"audience {lease.aud!r} does not name this node")
    if lease.iat > now + skew:
        _refuse("not_yet_valid", f"iat {lease.iat}, now {int(now)}")
    if lease.exp + skew <= now:
        _refuse("expired", f"exp {lease.exp}, now {int(now)}")
    return lease


__all__ = ["LEASE_SKEW", "LEASE_TYP", "MAX_LEASE_BYTES", "Lease", "sign_lease", "verify_lease"]
