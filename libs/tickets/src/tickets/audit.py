"""The hash-chained audit record (docs/design.md#audit-log): hashing, checkpoints, verification.

`hash = SHA-256(DOMAIN_TAG ‖ RFC 8785 JSON of the record without hash)` and each record
names its predecessor's hash, the first one 64 zeros. Verification streams line by line
and reports the first bad `seq`; a line already in canonical form skips RFC 8785.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import rfc8785

from tickets.errors import CheckpointError, RecordError
from tickets.keys import KeySet, SigningKey, b64url_decode, b64url_encode

VERSION = 1
DOMAIN_TAG = b"secondbrain-audit-v1\x00"
CHECKPOINT_TAG = b"secondbrain-audit-checkpoint-v1\x00"
GENESIS_HASH = "0" * 64
FIRST_SEQ = 1
FIELDS = frozenset(
    {"v", "seq", "ts", "prev_hash", "hash", "action", "actor", "subject", "scope", "vault"}
    | {"expiry", "parent", "reason", "request_id", "object"}
)
OPTIONAL_FIELDS = frozenset({"issued_by", "via_grant", "channel", "paths"})
"""Left out unless given; `channel` names where a change was made (`console`: the web console),
`paths` the path rules of a member, grant, request or token that has some (JSON text)."""
ALL_FIELDS = FIELDS | OPTIONAL_FIELDS
_CONTENT_FIELDS = ALL_FIELDS - {"v", "seq", "ts", "prev_hash", "hash", "action"}
Value = str | int | None
_HEX64 = re.compile(r"[0-9a-f]{64}")
_TOKEN_LIKE = re.compile(r"eyJ[\w-]{8,}\.[\w-]+\.")


def canonical(record: Mapping[str, Any]) -> bytes:
    """RFC 8785 canonical JSON of `record`."""
    try:
        return rfc8785.dumps(record)
    except rfc8785.CanonicalizationError as exc:
        raise RecordError("record", f"not canonicalizable: {exc}") from exc


def record_hash(record: Mapping[str, Any]) -> str:
    """The chain hash of a record (its own `hash` member, if any, is left out)."""
    body = {k: v for k, v in record.items() if k != "hash"}
    return hashlib.sha256(DOMAIN_TAG + canonical(body)).hexdigest()


def timestamp(now: float | None = None) -> str:
    """`ts` in the fixed form 2026-11-20T10:15:03.123456Z (UTC, microseconds)."""
    moment = datetime.fromtimestamp(time.time() if now is None else now, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def make_record(
    head: tuple[int, str] | None, *, action: str, ts: str | None = None, **fields: Value
) -> dict[str, Any]:
    """The record that follows `head` (seq, hash of the last record; None for the first).

    Fields not given are null; `issued_by`, `via_grant`, `channel` and `paths` are left out
    unless given.
    A value that looks like a token is refused: no record ever holds one."""
    unknown = set(fields) - _CONTENT_FIELDS
    if unknown:
        raise RecordError(sorted(unknown)[0], "not an audit field the caller may set")
    for name, value in fields.items():
        if isinstance(value, str) and _TOKEN_LIKE.search(value):
            raise RecordError(name, "looks like a token; record its jti or grant id instead")
    seq, prev = head if head is not None else (FIRST_SEQ - 1, GENESIS_HASH)
    record: dict[str, Any] = dict.fromkeys(FIELDS - {"hash"})
    record.update(fields, v=VERSION, seq=seq + 1, ts=ts or timestamp(), prev_hash=prev)
    record["action"] = action
    record["hash"] = record_hash(record)
    return record


def to_line(record: Mapping[str, Any]) -> str:
    """The record as one canonical NDJSON line (without the newline)."""
    return canonical(record).decode("utf-8")


@dataclass(frozen=True)
class Checkpoint:
    """An Ed25519-signed head of the chain: `seq` and the `hash` of that record."""

    seq: int
    hash: str
    kid: str
    sig: str

    def to_dict(self) -> dict[str, Any]:
        return {"seq": self.seq, "hash": self.hash, "kid": self.kid, "sig": self.sig}

    @classmethod
    def from_dict(cls, value: Mapping[str, Any]) -> Checkpoint:
        if not isinstance(value, Mapping) or set(value) != {"seq", "hash", "kid", "sig"}:
            raise CheckpointError("malformed", "a checkpoint has exactly seq, hash, kid, sig")
        seq, head, kid, sig = value["seq"], value["hash"], value["kid"], value["sig"]
        if type(seq) is not int or seq < 0 or not isinstance(head, str):
            raise CheckpointError("malformed", "seq must be an integer and hash a string")
        if not _HEX64.fullmatch(head) or not isinstance(kid, str) or not isinstance(sig, str):
            raise CheckpointError("malformed", "hash must be 64 hex digits, kid and sig strings")
        return cls(seq, head, kid, sig)


def _checkpoint_message(seq: int, head: str) -> bytes:
    return CHECKPOINT_TAG + f"{seq}\n{head}\n".encode("ascii")


def sign_checkpoint(key: SigningKey, seq: int, head: str) -> Checkpoint:
    """Sign (seq, head hash) with the center's key."""
    if not _HEX64.fullmatch(head):
        raise CheckpointError("malformed", "head hash must be 64 lowercase hex digits")
    sig = b64url_encode(key.sign(_checkpoint_message(seq, head)))
    return Checkpoint(seq, head, key.kid, sig)


def verify_checkpoint(checkpoint: Checkpoint, keys: KeySet) -> None:
    """Raise CheckpointError unless a known key (retired ones too) signed it."""
    key = keys.get(checkpoint.kid)
    if key is None:
        raise CheckpointError("unknown_kid", f"no key {checkpoint.kid}")
    try:
        signature = b64url_decode(checkpoint.sig)
    except ValueError as exc:
        raise CheckpointError("bad_signature", "sig is not base64url") from exc
    if not key.verify(signature, _checkpoint_message(checkpoint.seq, checkpoint.hash)):
        raise CheckpointError("bad_signature", f"checkpoint at seq {checkpoint.seq}")


PROBLEMS = (
    "bad_record",
    "seq_gap",
    "seq_repeat",
    "bad_genesis",
    "prev_mismatch",
    "hash_mismatch",
    "checkpoint_mismatch",
    "truncated",
)
"""What `chain_verify` reports: an unreadable or incomplete line; a seq missing (deleted,
or moved later) or seen again (duplicated, or moved earlier); a first record not linked
to 64 zeros; a broken link; an edited record; a record that differs from its signed
checkpoint; a log that ends before its last checkpoint."""


@dataclass(frozen=True)
class ChainReport:
    """The outcome: `ok`, or the first bad `seq` with the problem and its line number."""

    records: int
    head: tuple[int, str] | None
    first_bad_seq: int | None = None
    problem: str | None = None
    line: int | None = None
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.problem is None


class _BadLine(Exception):  # noqa: N818 - internal control flow, never escapes this module
    def __init__(self, problem: str, detail: str) -> None:
        super().__init__(detail)
        self.problem = problem
        self.detail = detail


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    record = dict(pairs)
    if len(record) != len(pairs):
        raise ValueError("duplicate keys")
    return record


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _check_fields(record: Any) -> None:
    if type(record) is not dict:
        raise _BadLine("bad_record", "a line is one JSON object")
    keys = record.keys()
    if not keys >= FIELDS or not keys <= ALL_FIELDS:
        raise _BadLine("bad_record", f"fields differ from v{VERSION}: {sorted(keys ^ FIELDS)}")
    version, seq, digest = record["v"], record["seq"], record["hash"]
    if type(version) is not int or version != VERSION or type(seq) is not int:
        raise _BadLine("bad_record", f"v must be {VERSION} and seq an integer")
    if not isinstance(digest, str):
        raise _BadLine("bad_record", "hash must be a string")
    if not _HEX64.fullmatch(digest) or not isinstance(record["prev_hash"], str):
        raise _BadLine("bad_record", "hash must be 64 lowercase hex digits")


def _canonical_pattern() -> re.Pattern[str]:
    """A record line exactly as RFC 8785 writes it, for the v1 fields in sorted order.

    Strings escape only `"`, `\\` and control characters (short forms where they exist,
    else lowercase \\u00xx), integers have at most 15 digits, no floats or nesting: a
    line that matches is its own canonical form, so the hashed bytes are the line minus
    its hash member. Anything else takes the RFC 8785 path."""
    string = r'"[^"\\\x00-\x1f]*(?:\\(?:["\\bfnrt]|u00(?:0[0-7bef]|1[0-9a-f]))[^"\\\x00-\x1f]*)*"'
    integer = r"(?:0|-?[1-9][0-9]{0,14})"
    special = {
        "hash": r'"(?P<hash>[0-9a-f]{64})"',
        "prev_hash": r'"(?P<prev>[0-9a-f]{64})"',
        "seq": rf"(?P<seq>{integer})",
        "v": str(VERSION),
    }
    members = []
    for name in sorted(ALL_FIELDS):
        member = f',"{name}":{special.get(name, f"(?:{string}|null|true|false|{integer})")}'
        if name == "hash":
            member = f"(?P<cut>{member})"
        members.append(f"(?:{member})?" if name in OPTIONAL_FIELDS else member)
    return re.compile("{" + "".join(members)[1:] + "}")


_CANONICAL = _canonical_pattern()


def _read(text: str) -> tuple[int, str, str, bytes]:
    """(seq, prev_hash, hash, hashed bytes) of one line, or _BadLine."""
    match = _CANONICAL.fullmatch(text)
    try:
        if match is not None:
            start, end = match.span("cut")
            body = (text[:start] + text[end:]).encode("utf-8")
            return int(match["seq"]), match["prev"], match["hash"], body
        record = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_refuse_constant)
        _check_fields(record)
        body = canonical({k: v for k, v in record.items() if k != "hash"})
    except (ValueError, RecursionError, RecordError) as exc:
        raise _BadLine("bad_record", f"not a strict JSON record: {exc}"[:200]) from exc
    return record["seq"], record["prev_hash"], record["hash"], body


class ChainVerifier:
    """Streaming verification: `feed` each line in order, then `finish`.

    `after` (seq, hash) starts the chain after a known record instead of at genesis, for
    a seq-range export; `checkpoints` (already verified) pin seq → hash."""

    def __init__(
        self, *, checkpoints: Iterable[Checkpoint] = (), after: tuple[int, str] | None = None
    ) -> None:
        self._marks = {cp.seq: cp.hash for cp in checkpoints}
        self._at_genesis = after is None
        last_seq, self.head_hash = after or (FIRST_SEQ - 1, GENESIS_HASH)
        self.next_seq = last_seq + 1
        self.records = 0
        self.lines = 0
        self._failure: _BadLine | None = None

    def feed(self, line: str | bytes) -> bool:
        """Check one line; False once the chain is broken (later lines are ignored)."""
        if self._failure is not None:
            return False
        self.lines += 1
        try:
            text = line.decode("utf-8") if isinstance(line, bytes) else line
            text = text.rstrip("\r\n")
            if text:
                self._link(*_read(text))
        except UnicodeDecodeError:
            self._failure = _BadLine("bad_record", "line is not UTF-8")
        except _BadLine as bad:
            self._failure = bad
        return self._failure is None

    def _link(self, seq: int, prev: str, digest: str, body: bytes) -> None:
        expected = self.next_seq
        if seq != expected:
            problem = "seq_gap" if seq > expected else "seq_repeat"
            raise _BadLine(problem, f"seq {seq} where {expected} was expected")
        if prev != self.head_hash:
            genesis = self._at_genesis and seq == FIRST_SEQ
            raise _BadLine("bad_genesis" if genesis else "prev_mismatch", "prev_hash breaks")
        if hashlib.sha256(DOMAIN_TAG + body).hexdigest() != digest:
            raise _BadLine("hash_mismatch", "the record was changed after it was hashed")
        if self._marks.get(seq, digest) != digest:
            raise _BadLine("checkpoint_mismatch", "differs from the signed checkpoint")
        self.next_seq, self.head_hash = seq + 1, digest
        self.records += 1

    def finish(self) -> ChainReport:
        head = (self.next_seq - 1, self.head_hash) if self.records else None
        failure = self._failure
        if failure is None and max(self._marks, default=0) >= self.next_seq:
            failure = _BadLine("truncated", f"a checkpoint covers seq {max(self._marks)}")
        if failure is None:
            return ChainReport(self.records, head)
        line = self.lines if failure.problem != "truncated" else None
        return ChainReport(self.records, head, self.next_seq, failure.problem, line, failure.detail)


def chain_verify(
    lines: Iterable[str | bytes],
    *,
    checkpoints: Iterable[Checkpoint] = (),
    keys: KeySet | None = None,
    after: tuple[int, str] | None = None,
) -> ChainReport:
    """Verify an audit log (an iterable of NDJSON lines, e.g. an open file).

    Checkpoint signatures are checked against `keys` first (CheckpointError if one fails);
    then every line, stopping at the first bad `seq`."""
    pinned = list(checkpoints)
    if pinned and keys is None:
        raise CheckpointError("unverified", "pass the key set that signed the checkpoints")
    for checkpoint in pinned:
        verify_checkpoint(checkpoint, keys or KeySet())
    verifier = ChainVerifier(checkpoints=pinned, after=after)
    feed = verifier.feed
    for line in lines:
        if not feed(line):
            break
    return verifier.finish()
