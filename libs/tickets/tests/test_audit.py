"""The audit chain: record hashing, checkpoints, and the first bad seq of every tampering."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from tickets import (
    CheckpointError,
    RecordError,
    SigningKey,
    audit,
    chain_verify,
    make_record,
    record_hash,
    sign_checkpoint,
    to_line,
    verify_checkpoint,
)
from tickets import testing as t


def _chain(count: int, **fields: Any) -> list[str]:
    lines, head = [], None
    for i in range(count):
        record = make_record(
            head,
            action="grant.issue",
            ts=audit.timestamp(t.NOW + i),
            actor="alice",
            subject=f"member-{i}",
            scope="read_write",
            vault="team",
            expiry=t.NOW + 900,
            **fields,
        )
        head = (record["seq"], record["hash"])
        lines.append(to_line(record))
    return lines


def _edit(line: str, rehash: bool = False, **changes: Any) -> str:
    record = {**json.loads(line), **changes}
    if rehash:
        record["hash"] = record_hash(record)
    return to_line(record)


def test_record_hash_is_sha256_of_domain_tag_and_rfc8785_json() -> None:
    record = json.loads(_chain(1)[0])
    body = {k: v for k, v in record.items() if k != "hash"}
    expected = hashlib.sha256(b"secondbrain-audit-v1\x00" + rfc8785.dumps(body)).hexdigest()
    assert record["hash"] == expected == record_hash(record)


def test_first_record_has_seq_one_and_links_to_64_zeros() -> None:
    first, second = (json.loads(line) for line in _chain(2))
    assert (first["seq"], first["prev_hash"]) == (1, "0" * 64)
    assert (second["seq"], second["prev_hash"]) == (2, first["hash"])


def test_record_carries_every_field_and_optional_ones_only_when_given() -> None:
    plain = json.loads(_chain(1)[0])
    assert set(plain) == audit.FIELDS
    assert (plain["v"], plain["reason"]) == (1, None)
    delegated = json.loads(_chain(1, issued_by="bob", via_grant="g1")[0])
    assert set(delegated) == audit.FIELDS | {"issued_by", "via_grant"}


def test_a_record_with_path_rules_verifies_by_the_fast_path_and_the_slow_one() -> None:
    rules = '{"team":{"exclude":[],"read":["projects/acme"],"write":["projects/acme/inbox"]}}'
    line = _chain(1, paths=rules)[0]
    assert json.loads(line)["paths"] == rules
    assert audit._CANONICAL.fullmatch(line) is not None
    verifier = audit.ChainVerifier()
    verifier.feed(line)
    assert verifier.finish().ok


def test_line_is_rfc8785_canonical_json() -> None:
    line = _chain(1, reason='Überprüfung "quoted"\n')[0]
    assert line.encode() == rfc8785.dumps(json.loads(line))


def test_timestamps_have_one_fixed_form() -> None:
    assert audit.timestamp(1767225600.5) == "2026-01-01T00:00:00.500000Z"


def test_unknown_field_and_token_like_values_are_refused() -> None:
    with pytest.raises(RecordError) as caught:
        make_record(None, action="x", password="hunter2")
    assert caught.value.field == "password"
    with pytest.raises(RecordError, match="looks like a token"):
        make_record(None, action="token.issue", object=t.mint())


def test_valid_chain_verifies_and_reports_its_head() -> None:
    lines = _chain(50)
    report = chain_verify(lines)
    assert report.ok
    assert report.records == 50
    assert report.head == (50, json.loads(lines[-1])["hash"])


def test_empty_log_is_a_valid_empty_chain() -> None:
    assert chain_verify([]) == audit.ChainReport(0, None)


@pytest.mark.parametrize(
    "field", ["actor", "subject", "scope", "vault", "expiry", "ts", "action", "reason"]
)
def test_edited_field_is_reported_at_its_seq(field: str) -> None:
    lines = _chain(10)
    lines[4] = _edit(lines[4], **{field: "mallory" if field != "expiry" else 1})
    report = chain_verify(lines)
    assert (report.first_bad_seq, report.problem, report.line) == (5, "hash_mismatch", 5)


def test_edited_record_with_a_recomputed_hash_breaks_the_next_link() -> None:
    lines = _chain(10)
    lines[4] = _edit(lines[4], rehash=True, actor="mallory")
    report = chain_verify(lines)
    assert (report.first_bad_seq, report.problem) == (6, "prev_mismatch")


def test_deleted_line_is_reported_at_the_missing_seq() -> None:
    lines = _chain(10)
    del lines[6]
    report = chain_verify(lines)
    assert (report.first_bad_seq, report.problem, report.records) == (7, "seq_gap", 6)


def test_deleted_first_line_is_reported_at_seq_one() -> None:
    assert chain_verify(_chain(3)[1:]).first_bad_seq == 1


def test_swapped_lines_are_reported_at_the_earlier_seq() -> None:
    lines = _chain(10)
    lines[2], lines[3] = lines[3], lines[2]
    report = chain_verify(lines)
    assert (report.first_bad_seq, report.problem) == (3, "seq_gap")


def test_duplicated_line_is_reported_at_the_seq_after_it() -> None:
    lines = _chain(10)
    lines.insert(5, lines[4])
    report = chain_verify(lines)
    assert (report.first_bad_seq, report.problem) == (6, "seq_repeat")


def test_wrong_genesis_is_reported_at_seq_one() -> None:
    lines = _chain(3)
    lines[0] = _edit(lines[0], rehash=True, prev_hash="1" * 64)
    report = chain_verify(lines)
    assert (report.first_bad_seq, report.problem) == (1, "bad_genesis")


def test_truncated_tail_after_a_signed_checkpoint_is_reported(key: SigningKey) -> None:
    lines = _chain(10)
    checkpoint = sign_checkpoint(key, 10, json.loads(lines[-1])["hash"])
    assert chain_verify(lines, checkpoints=[checkpoint], keys=t.key_set(key)).ok
    report = chain_verify(lines[:7], checkpoints=[checkpoint], keys=t.key_set(key))
    assert (report.first_bad_seq, report.problem, report.records) == (8, "truncated", 7)


def test_chain_rewritten_under_a_checkpoint_is_reported(key: SigningKey) -> None:
    lines = _chain(10)
    checkpoint = sign_checkpoint(key, 5, json.loads(lines[4])["hash"])
    rewritten, head = [], None
    for line in lines:
        record = {**json.loads(line), "prev_hash": head or "0" * 64}
        record["actor"] = "mallory" if record["seq"] == 3 else record["actor"]
        record["hash"] = record_hash(record)
        head = record["hash"]
        rewritten.append(to_line(record))
    assert chain_verify(rewritten).ok
    report = chain_verify(rewritten, checkpoints=[checkpoint], keys=t.key_set(key))
    assert (report.first_bad_seq, report.problem) == (5, "checkpoint_mismatch")


@pytest.mark.parametrize(
    "bad",
    ["not json", "[]", '{"seq": 1}', "null", b"\xff\xfe"],
    ids=["text", "array", "missing-fields", "null", "not-utf8"],
)
def test_unreadable_line_is_a_bad_record_at_its_seq(bad: str | bytes) -> None:
    lines: list[str | bytes] = [*_chain(3)]
    lines.insert(2, bad)
    report = chain_verify(lines)
    assert (report.first_bad_seq, report.problem, report.line) == (3, "bad_record", 3)


def test_duplicate_keys_in_a_line_are_a_bad_record() -> None:
    lines = _chain(2)
    lines[1] = lines[1][:-1] + ',"actor":"mallory"}'
    assert chain_verify(lines).problem == "bad_record"


def test_extra_field_is_a_bad_record() -> None:
    lines = _chain(2)
    lines[1] = _edit(lines[1], rehash=True, password="x")
    assert chain_verify(lines).problem == "bad_record"


def test_non_canonical_but_faithful_lines_still_verify() -> None:
    lines = [
        json.dumps(dict(reversed(json.loads(line).items())), indent=None) for line in _chain(5)
    ]
    assert " " in lines[0]
    assert chain_verify(lines).ok


def test_bytes_lines_with_newlines_and_blank_lines_verify() -> None:
    lines = [f"{line}\n".encode() for line in _chain(3)] + [b"\n"]
    assert chain_verify(lines).ok


def test_range_export_verifies_after_a_known_head() -> None:
    lines = _chain(10)
    head = json.loads(lines[3])
    assert chain_verify(lines[4:], after=(head["seq"], head["hash"])).ok
    report = chain_verify(lines[5:], after=(head["seq"], head["hash"]))
    assert (report.first_bad_seq, report.problem) == (5, "seq_gap")


def test_checkpoint_signature_verifies_against_the_key_set(
    key: SigningKey, other_key: SigningKey
) -> None:
    checkpoint = sign_checkpoint(key, 3, "ab" * 32)
    verify_checkpoint(checkpoint, t.key_set(key))
    assert audit.Checkpoint.from_dict(checkpoint.to_dict()) == checkpoint
    with pytest.raises(CheckpointError) as caught:
        verify_checkpoint(checkpoint, t.key_set(other_key))
    assert caught.value.reason == "unknown_kid"
    forged = audit.Checkpoint(4, checkpoint.hash, checkpoint.kid, checkpoint.sig)
    with pytest.raises(CheckpointError) as caught:
        verify_checkpoint(forged, t.key_set(key))
    assert caught.value.reason == "bad_signature"


def test_checkpoints_need_keys_and_a_bad_one_stops_verification(key: SigningKey) -> None:
    checkpoint = sign_checkpoint(key, 1, "ab" * 32)
    with pytest.raises(CheckpointError, match="unverified"):
        chain_verify(_chain(1), checkpoints=[checkpoint])
    with pytest.raises(CheckpointError):
        chain_verify(_chain(1), checkpoints=[checkpoint], keys=t.key_set(t.fixed_key(7)))


@pytest.mark.parametrize(
    "value",
    [
        {"seq": 1},
        {"seq": "1", "hash": "ab" * 32, "kid": "k", "sig": "s"},
        {"seq": 1, "hash": "AB" * 32, "kid": "k", "sig": "s"},
    ],
)
def test_malformed_checkpoint_is_refused(value: dict[str, Any]) -> None:
    with pytest.raises(CheckpointError):
        audit.Checkpoint.from_dict(value)


safe_ints = st.integers(-(2**53) + 1, 2**53 - 1)
FREE_FIELDS = ["actor", "subject", "reason", "object", "expiry", "via_grant"]
VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**15) + 1, 10**15 - 1), st.text(max_size=20)
)
RECORDS = st.fixed_dictionaries({}, optional=dict.fromkeys(FREE_FIELDS, VALUES))


def _line(fields: dict[str, Any]) -> tuple[dict[str, Any], str]:
    record = make_record(None, action="x.y", ts="2026-01-01T00:00:00.000000Z")
    record.update(fields)
    record["hash"] = record_hash(record)
    return record, to_line(record)


def _jcs_body(line: str) -> bytes:
    return rfc8785.dumps({k: v for k, v in json.loads(line).items() if k != "hash"})


@settings(max_examples=300, deadline=None)
@given(fields=RECORDS)
def test_fast_path_takes_every_canonical_line_and_hashes_the_rfc8785_bytes(
    fields: dict[str, Any],
) -> None:
    record, line = _line(fields)
    assert audit._CANONICAL.fullmatch(line) is not None
    assert audit._read(line) == (1, "0" * 64, record["hash"], _jcs_body(line))
    assert chain_verify([line]).ok


ENCODERS = [
    json.dumps,
    lambda r: json.dumps(r, separators=(",", ":")),
    lambda r: json.dumps(r, separators=(",", ":"), sort_keys=True),
    lambda r: json.dumps(r, separators=(",", ":"), sort_keys=True, ensure_ascii=False),
]


@settings(max_examples=300, deadline=None)
@given(fields=RECORDS, encoder=st.sampled_from(ENCODERS))
def test_fast_path_never_hashes_bytes_other_than_rfc8785s(
    fields: dict[str, Any], encoder: Any
) -> None:
    record, _ = _line(fields)
    line = encoder(record)
    if audit._CANONICAL.fullmatch(line) is not None:
        assert audit._read(line)[3] == _jcs_body(line)
    assert chain_verify([line]).ok


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ('"actor":"alice"', '"actor": "alice"'),
        ('"actor":"alice"', '"actor":"\\u0061lice"'),
        ('"actor":"alice"', '"actor":"al\\/ice"'),
        ('"actor":"alice"', '"actor":"al\\u000aice"'),
        ('"actor":"alice"', '"actor":"al\\u001Fice"'),
        ('"actor":"alice"', '"actor":"\\u00e9"'),
        ('"expiry":1767226500', '"expiry":-0'),
        ('"expiry":1767226500', '"expiry":1767226500.0'),
        ('"expiry":1767226500', '"expiry":9007199254740991'),
        ('"expiry":1767226500', '"expiry":{"at":1}'),
        ('"actor":"alice"', '"actor":"alice","actor":"alice"'),
        ('"v":1', '"v":2'),
    ],
    ids=[
        "space",
        "escaped-ascii",
        "escaped-slash",
        "long-newline",
        "uppercase-hex",
        "escaped-non-ascii",
        "minus-zero",
        "float",
        "16-digits",
        "nested",
        "duplicate",
        "v2",
    ],
)
def test_fast_path_declines_every_non_canonical_spelling(old: str, new: str) -> None:
    line = _chain(1)[0]
    assert old in line
    assert audit._CANONICAL.fullmatch(line.replace(old, new)) is None


@pytest.mark.parametrize("field", ["v", "seq", "prev_hash", "hash"])
def test_chain_fields_cannot_be_set_by_the_caller(field: str) -> None:
    with pytest.raises(RecordError) as caught:
        make_record(None, action="x", **{field: 1})
    assert caught.value.field == field
