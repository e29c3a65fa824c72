"""The signed revocation snapshot (docs/design.md#revocation-feed) and a node's view of the
newest one.

A node keeps the highest `seq` it has seen and refuses a rollback. One that never got a
snapshot cannot know what was revoked, so it refuses every token; one whose snapshot is
older than `max_stale` refuses writes and deletes (reads: a verifier setting).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tickets import jws
from tickets.audit import Checkpoint, verify_checkpoint
from tickets.claims import Claims
from tickets.errors import CheckpointError, Reason, RollbackError, SnapshotError, TokenError
from tickets.keys import KeySet, SigningKey

SNAPSHOT_TYP = "secondbrain-revocation+jwt"
MAX_SNAPSHOT_BYTES = 4 * 1024 * 1024
DEFAULT_MAX_STALE = 120
SKEW = 60
IdMap = Mapping[str, int]


@dataclass(frozen=True)
class RevocationSnapshot:
    """What the center has revoked as of `seq`: grant ids and token ids (jti) with the
    `exp` after which they may be dropped, the minimum generation per member, revoked
    key ids, and the latest audit checkpoint."""

    iss: str
    seq: int
    iat: int
    grants: IdMap = field(default_factory=dict)
    tokens: IdMap = field(default_factory=dict)
    min_gen: IdMap = field(default_factory=dict)
    revoked_kids: frozenset[str] = frozenset()
    checkpoint: Checkpoint | None = None

    def refusal(self, claims: Claims, kid: str) -> tuple[Reason, str] | None:
        """Why this snapshot refuses a token, or None."""
        if kid in self.revoked_kids:
            return "key_revoked", f"kid {kid} is revoked"
        if claims.jti in self.tokens:
            return "revoked", f"token {claims.jti} is revoked"
        for grant in (*claims.chain, claims.gid):
            if grant is not None and grant in self.grants:
                return "revoked", f"grant {grant} in the chain is revoked"
        if claims.mgen < self.min_gen.get(claims.sub, 0):
            return "generation", f"member generation {claims.mgen} is below the minimum"
        return None

    def same_revocations(self, other: RevocationSnapshot) -> bool:
        return (self.grants, self.tokens, self.min_gen, self.revoked_kids) == (
            other.grants,
            other.tokens,
            other.min_gen,
            other.revoked_kids,
        )

    def to_payload(self) -> dict[str, Any]:
        return {
            "iss": self.iss,
            "seq": self.seq,
            "iat": self.iat,
            "revoked_grants": dict(self.grants),
            "revoked_tokens": dict(self.tokens),
            "min_gen": dict(self.min_gen),
            "revoked_kids": sorted(self.revoked_kids),
            "checkpoint": self.checkpoint.to_dict() if self.checkpoint else None,
        }

    @classmethod
    def from_payload(cls, payload: Mapping[str, Any]) -> RevocationSnapshot:
        """Read a snapshot payload with strict types (SnapshotError reason bad_claims)."""
        try:
            iss, seq, iat = payload["iss"], payload["seq"], payload["iat"]
            kids = payload["revoked_kids"]
            cp = payload["checkpoint"]
            grants, tokens = _ids(payload["revoked_grants"]), _ids(payload["revoked_tokens"])
            min_gen = _ids(payload["min_gen"])
        except (KeyError, TypeError) as exc:
            raise SnapshotError("bad_claims", f"missing or mistyped member: {exc}") from exc
        if not isinstance(iss, str) or not all(type(n) is int and n >= 0 for n in (seq, iat)):
            raise SnapshotError("bad_claims", "iss must be a string, seq and iat integers")
        if not isinstance(kids, list) or not all(isinstance(k, str) for k in kids):
            raise SnapshotError("bad_claims", "revoked_kids must be a list of strings")
        try:
            checkpoint = Checkpoint.from_dict(cp) if cp is not None else None
        except CheckpointError as exc:
            raise SnapshotError("bad_claims", exc.message) from exc
        return cls(iss, seq, iat, grants, tokens, min_gen, frozenset(kids), checkpoint)


def _ids(value: Any) -> dict[str, int]:
    if not isinstance(value, dict):
        raise TypeError("expected an object of id → integer")
    if not all(isinstance(k, str) and type(v) is int and v >= 0 for k, v in value.items()):
        raise TypeError("expected an object of id → non-negative integer")
    return value


def sign_snapshot(snapshot: RevocationSnapshot, key: SigningKey) -> str:
    """The snapshot as a compact JWS of type `secondbrain-revocation+jwt`."""
    return jws.sign(snapshot.to_payload(), key, typ=SNAPSHOT_TYP)


def verify_snapshot(token: str, keys: KeySet, *, issuer: str) -> tuple[RevocationSnapshot, str]:
    """Verify a snapshot JWS; returns it with the kid that signed it.

    Refusals raise SnapshotError with the token reasons (bad_typ, bad_signature, ...)."""
    try:
        header = jws.read_header(token, max_bytes=MAX_SNAPSHOT_BYTES)
        if not jws.typ_matches(header.typ, SNAPSHOT_TYP):
            raise SnapshotError("bad_typ", f"typ {header.typ!r}")
        if header.alg != jws.ALG:
            raise SnapshotError("bad_alg", f"alg {header.alg!r}")
        key = keys.get(header.kid)
        if key is None:
            raise SnapshotError("unknown_kid", f"kid {header.kid!r}")
        payload = jws.loads(jws.verify_signature(token, key, max_bytes=MAX_SNAPSHOT_BYTES))
    except TokenError as exc:
        raise SnapshotError(exc.reason, exc.detail) from exc
    snapshot = RevocationSnapshot.from_payload(payload)
    if snapshot.iss != issuer:
        raise SnapshotError("bad_iss", f"issued by {snapshot.iss!r}")
    if snapshot.checkpoint is not None:
        try:
            verify_checkpoint(snapshot.checkpoint, keys)
        except CheckpointError as exc:
            raise SnapshotError("bad_checkpoint", exc.message) from exc
    return snapshot, header.kid


class RevocationState:
    """The newest snapshot a node holds (None until the first one arrives).

    Keeps the highest audit checkpoint too; a snapshot carrying an older or different
    one is still applied, but the offending checkpoint is kept in `checkpoint_alarm`.
    `token` is the held snapshot as it was signed, so a node can persist exactly that
    and verify it again after a restart."""

    def __init__(self) -> None:
        self.snapshot: RevocationSnapshot | None = None
        self.signed_by: str | None = None
        self.token: str | None = None
        self.checkpoint: Checkpoint | None = None
        self.checkpoint_alarm: Checkpoint | None = None

    def accept(self, token: str, keys: KeySet, *, issuer: str, now: float | None = None) -> bool:
        """Verify and apply a snapshot JWS; True if the state changed."""
        snapshot, kid = verify_snapshot(token, keys, issuer=issuer)
        changed = self.update(snapshot, signed_by=kid, now=now)
        if changed:
            self.token = token
        return changed

    def restore_checkpoint(self, checkpoint: Checkpoint, keys: KeySet) -> None:
        """Hold a checkpoint kept from an earlier run, once its signature verifies again
        (CheckpointError if not): a later snapshot carrying an older one raises the alarm."""
        verify_checkpoint(checkpoint, keys)
        self._track_checkpoint(checkpoint)

    def update(
        self, snapshot: RevocationSnapshot, *, signed_by: str, now: float | None = None
    ) -> bool:
        """Apply a verified snapshot: newer seq replaces, same seq only refreshes `iat`,
        lower seq raises RollbackError; True if the state changed (`token` is then
        cleared: only `accept` knows the signed text)."""
        now = time.time() if now is None else now
        if snapshot.iat > now + SKEW:
            raise SnapshotError("not_yet_valid", f"iat {snapshot.iat} is in the future")
        held = self.snapshot
        if held is not None:
            if signed_by in held.revoked_kids:
                raise SnapshotError("key_revoked", f"signed by revoked kid {signed_by}")
            if snapshot.seq < held.seq:
                raise RollbackError(held.seq, snapshot.seq)
            if snapshot.seq == held.seq:
                if not snapshot.same_revocations(held):
                    raise SnapshotError("conflict", f"two different snapshots for seq {held.seq}")
                if snapshot.iat <= held.iat:
                    return False
        self.snapshot, self.signed_by, self.token = snapshot, signed_by, None
        self._track_checkpoint(snapshot.checkpoint)
        return True

    def _track_checkpoint(self, offered: Checkpoint | None) -> None:
        held = self.checkpoint
        if offered is None or offered == held:
            return
        if held is not None and (
            offered.seq < held.seq or (offered.seq == held.seq and offered.hash != held.hash)
        ):
            self.checkpoint_alarm = offered
            return
        self.checkpoint = offered

    def age(self, now: float | None = None) -> float | None:
        """Seconds since the held snapshot was issued; None without one."""
        if self.snapshot is None:
            return None
        return max(0.0, (time.time() if now is None else now) - self.snapshot.iat)

    def is_stale(self, max_stale: float = DEFAULT_MAX_STALE, now: float | None = None) -> bool:
        """True without a snapshot, or when the one held is older than `max_stale`."""
        age = self.age(now)
        return age is None or age > max_stale

    @property
    def seq(self) -> int | None:
        return None if self.snapshot is None else self.snapshot.seq
