"""Token signing and verification rates, and audit-chain verification over 1,000,000 records.

The chain is generated in memory in chunks (bounded memory) and fed to one streaming
ChainVerifier; only the feeding is timed. A second, small run feeds non-canonical lines
so every record takes the RFC 8785 path, and the ratio of the two is printed.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterator

import rfc8785

from tickets import audit, issue, sign
from tickets import testing as t
from tickets.keys import b64url_decode

TOKENS = 5_000
RECORDS = 1_000_000
CHUNK = 100_000
SLOW_RECORDS = 20_000

# Keys in RFC 8785 order, split around "hash" so a line is built without re-encoding.
_BEFORE = '{{"action":"grant.issue","actor":"member-{m}","expiry":{expiry}'
_AFTER = (
    '"object":"grant:{seq:012d}","parent":null,"prev_hash":"{prev}",'
    '"reason":"weekly sync for the team","request_id":null,"scope":"read_write",'
    '"seq":{seq},"subject":"agent-{m}","ts":"{ts}","v":1,"vault":"team"}}'
)


def rate(count: int, work: Callable[[], object]) -> float:
    start = time.perf_counter()
    for _ in range(count):
        work()
    return count / (time.perf_counter() - start)


def bench_tokens() -> None:
    key = t.fixed_key()
    verifier = t.verifier(key)

    def mint() -> str:
        claims = issue(
            iss=t.ISSUER,
            sub="alice",
            aud=t.AUDIENCE,
            scope="read_write",
            vaults=["team"],
            role="editor",
            now=t.NOW,
            chain=["g-root", "g-child"],
        )
        return sign(claims.to_payload(), key, typ="at+jwt")

    token = mint()
    signing_input, _, signature = token.rpartition(".")
    raw = (b64url_decode(signature), signing_input.encode())
    signed = rate(TOKENS, mint)
    fresh = [mint() for _ in range(TOKENS)]  # each jti differs: nothing is cached
    unseen = iter(fresh)
    verified = rate(TOKENS, lambda: verifier.verify(next(unseen)))
    cached = rate(TOKENS, lambda: verifier.verify(token))
    floor = rate(TOKENS, lambda: key.public.verify(*raw))
    print(f"tokens ({TOKENS:,} each, {len(token)} bytes):")
    print(f"  issue + sign:          {signed:12,.0f} tokens/s")
    print(f"  verify, first sight:   {verified:12,.0f} tokens/s (every check, signature included)")
    print(
        f"  verify, seen before:   {cached:12,.0f} tokens/s (signature cached; the rest rechecked)"
    )
    print(f"  bare Ed25519 verify:   {floor:12,.0f} signatures/s (the floor)")
    print(f"  first-sight verification over the bare signature check: {floor / verified:.2f}x")
    print(f"  repeated token over first sight: {cached / verified:.1f}x faster")


def chain_lines(start: int, count: int, prev: str) -> tuple[list[str], str]:
    """`count` canonical audit lines from seq `start`, linked to `prev`."""
    lines = []
    for seq in range(start, start + count):
        m = seq % 97
        before = _BEFORE.format(m=m, expiry=t.NOW + seq)
        after = _AFTER.format(seq=seq, prev=prev, m=m, ts=audit.timestamp(t.NOW + seq))
        body = f"{before},{after}".encode()
        prev = hashlib.sha256(audit.DOMAIN_TAG + body).hexdigest()
        lines.append(f'{before},"hash":"{prev}",{after}')
    return lines, prev


def check_generator() -> None:
    """The hand-built lines must be exactly what the library writes and hashes."""
    lines, _ = chain_lines(1, 100, audit.GENESIS_HASH)
    for line in lines:
        record = json.loads(line)
        assert line.encode() == rfc8785.dumps(record)
        assert record["hash"] == audit.record_hash(record)


def chunks(total: int) -> Iterator[list[str]]:
    prev, seq = audit.GENESIS_HASH, 1
    while seq <= total:
        lines, prev = chain_lines(seq, min(CHUNK, total - seq + 1), prev)
        seq += len(lines)
        yield lines


def timed_feed(verifier: audit.ChainVerifier, lines: list[str]) -> float:
    feed = verifier.feed
    start = time.perf_counter()
    for line in lines:
        feed(line)
    return time.perf_counter() - start


def bench_audit() -> None:
    check_generator()
    verifier = audit.ChainVerifier()
    elapsed = sum(timed_feed(verifier, lines) for lines in chunks(RECORDS))
    report = verifier.finish()
    assert report.ok, report
    assert report.records == RECORDS
    fast = RECORDS / elapsed

    slow_verifier = audit.ChainVerifier()
    sloppy = [json.dumps(json.loads(line)) for line in next(chunks(SLOW_RECORDS))]
    slow = SLOW_RECORDS / timed_feed(slow_verifier, sloppy)
    assert slow_verifier.finish().ok
    print(f"audit chain ({RECORDS:,} records, streamed in chunks of {CHUNK:,}):")
    print(f"  verify, canonical lines:  {fast:12,.0f} records/s  ({elapsed:.2f} s)")
    print(f"  verify, RFC 8785 path:    {slow:12,.0f} records/s  ({SLOW_RECORDS:,} records)")
    print(f"  fast path over RFC 8785 path: {fast / slow:.1f}x")


def main() -> None:
    bench_tokens()
    bench_audit()


if __name__ == "__main__":
    main()
