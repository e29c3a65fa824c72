"""The signed revocation snapshot and a node's state: signature, rollback, staleness."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tickets import (
    CheckpointError,
    RevocationSnapshot,
    RevocationState,
    RollbackError,
    SigningKey,
    SnapshotError,
    TokenError,
    jws,
    sign_checkpoint,
    sign_snapshot,
    verify_snapshot,
)
from tickets import testing as t
from tickets.keys import KeySet

NOW = t.NOW
HEAD = "ab" * 32


def _accept(
    state: RevocationState, key: SigningKey, snapshot: RevocationSnapshot, now: int = NOW
) -> bool:
    return state.accept(sign_snapshot(snapshot, key), t.key_set(key), issuer=t.ISSUER, now=now)


def test_snapshot_round_trips_through_its_signature(key: SigningKey) -> None:
    snapshot = t.snapshot(
        7,
        grants={"g1": NOW + 60},
        tokens={"j1": NOW + 60},
        min_gen={"alice": 3},
        revoked_kids=frozenset({"old-kid"}),
        checkpoint=sign_checkpoint(key, 42, HEAD),
    )
    token = sign_snapshot(snapshot, key)
    assert jws.read_header(token).typ == "secondbrain-revocation+jwt"
    assert verify_snapshot(token, t.key_set(key), issuer=t.ISSUER) == (snapshot, key.kid)


def test_access_token_verifier_refuses_a_snapshot(key: SigningKey) -> None:
    with pytest.raises(TokenError) as caught:
        t.verifier(key).verify(sign_snapshot(t.snapshot(), key))
    assert caught.value.reason == "bad_typ"


def test_snapshot_verification_refuses_an_access_token(key: SigningKey) -> None:
    with pytest.raises(SnapshotError) as caught:
        verify_snapshot(t.mint(key), t.key_set(key), issuer=t.ISSUER)
    assert caught.value.reason == "bad_typ"


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda k, o: sign_snapshot(t.snapshot(), o), "unknown_kid"),
        (
            lambda k, o: t.compact(_header(k), jws.dumps(t.snapshot().to_payload()), o.sign),
            "bad_signature",
        ),
        (lambda k, o: sign_snapshot(RevocationSnapshot("https://evil.test", 1, NOW), k), "bad_iss"),
        (lambda k, o: t.compact(_header(k), b'{"seq":"1"}', k.sign), "bad_claims"),
        (lambda k, o: t.compact(_header(k), b'{"seq":1,"seq":2}', k.sign), "bad_json"),
        (
            lambda k, o: sign_snapshot(t.snapshot(checkpoint=sign_checkpoint(o, 1, HEAD)), k),
            "bad_checkpoint",
        ),
    ],
    ids=[
        "unknown-key",
        "bad-signature",
        "wrong-issuer",
        "mistyped",
        "duplicate-keys",
        "foreign-checkpoint",
    ],
)
def test_bad_snapshot_is_refused_with_its_reason(
    key: SigningKey, other_key: SigningKey, make: object, reason: str
) -> None:
    assert callable(make)
    with pytest.raises(SnapshotError) as caught:
        verify_snapshot(make(key, other_key), t.key_set(key), issuer=t.ISSUER)
    assert caught.value.reason == reason


def _header(key: SigningKey) -> dict[str, str]:
    return {"alg": "Ed25519", "typ": "secondbrain-revocation+jwt", "kid": key.kid}


def test_newer_snapshot_replaces_the_held_one(key: SigningKey) -> None:
    state = RevocationState()
    assert _accept(state, key, t.snapshot(1))
    assert _accept(state, key, t.snapshot(2, tokens={"j": NOW + 60}))
    assert state.seq == 2
    assert state.snapshot is not None
    assert "j" in state.snapshot.tokens


def test_rollback_to_a_lower_seq_is_refused_and_the_state_kept(key: SigningKey) -> None:
    state = RevocationState()
    _accept(state, key, t.snapshot(5, tokens={"j": NOW + 60}))
    with pytest.raises(RollbackError) as caught:
        _accept(state, key, t.snapshot(4, iat=NOW + 10), now=NOW + 10)
    assert (caught.value.held_seq, caught.value.offered_seq, caught.value.reason) == (
        5,
        4,
        "rollback",
    )
    assert state.seq == 5


def test_same_seq_with_a_later_iat_only_refreshes_the_age(key: SigningKey) -> None:
    state = RevocationState()
    _accept(state, key, t.snapshot(3))
    assert state.age(NOW + 100) == 100
    assert _accept(state, key, t.snapshot(3, iat=NOW + 90), now=NOW + 100)
    assert state.age(NOW + 100) == 10
    assert not _accept(state, key, t.snapshot(3, iat=NOW + 50), now=NOW + 100)
    assert state.age(NOW + 100) == 10


def test_two_different_snapshots_for_one_seq_are_a_conflict(key: SigningKey) -> None:
    state = RevocationState()
    _accept(state, key, t.snapshot(3))
    with pytest.raises(SnapshotError) as caught:
        _accept(state, key, t.snapshot(3, iat=NOW + 1, tokens={"j": NOW}), now=NOW + 1)
    assert caught.value.reason == "conflict"


def test_snapshot_from_the_future_is_refused(key: SigningKey) -> None:
    with pytest.raises(SnapshotError) as caught:
        _accept(RevocationState(), key, t.snapshot(1, iat=NOW + 61))
    assert caught.value.reason == "not_yet_valid"


def test_snapshot_signed_by_a_key_it_revoked_is_refused(
    key: SigningKey, other_key: SigningKey
) -> None:
    state = RevocationState()
    keys = t.key_set(key, other_key)
    state.accept(
        sign_snapshot(t.snapshot(1, revoked_kids=frozenset({other_key.kid})), key),
        keys,
        issuer=t.ISSUER,
        now=NOW,
    )
    with pytest.raises(SnapshotError) as caught:
        state.accept(sign_snapshot(t.snapshot(2), other_key), keys, issuer=t.ISSUER, now=NOW)
    assert caught.value.reason == "key_revoked"


def test_staleness_follows_the_snapshot_age(key: SigningKey) -> None:
    state = RevocationState()
    assert state.age(NOW) is None
    assert state.is_stale(120, NOW)
    _accept(state, key, t.snapshot(1))
    assert not state.is_stale(120, NOW + 120)
    assert state.is_stale(120, NOW + 121)
    assert state.age(NOW - 30) == 0


def test_checkpoint_rollback_is_flagged_while_revocations_still_apply(key: SigningKey) -> None:
    state = RevocationState()
    newer, older = sign_checkpoint(key, 10, HEAD), sign_checkpoint(key, 9, "cd" * 32)
    _accept(state, key, t.snapshot(1, checkpoint=newer))
    _accept(state, key, t.snapshot(2, checkpoint=older, tokens={"j": NOW + 60}))
    assert (state.seq, state.checkpoint, state.checkpoint_alarm) == (2, newer, older)


def test_a_different_hash_at_the_same_checkpoint_seq_is_flagged(key: SigningKey) -> None:
    state = RevocationState()
    _accept(state, key, t.snapshot(1, checkpoint=sign_checkpoint(key, 10, HEAD)))
    forked = sign_checkpoint(key, 10, "cd" * 32)
    _accept(state, key, t.snapshot(2, checkpoint=forked))
    assert state.checkpoint_alarm == forked


def test_snapshot_payload_names_its_members() -> None:
    payload = t.snapshot(4, min_gen={"bob": 2}).to_payload()
    assert set(payload) == {
        "iss",
        "seq",
        "iat",
        "revoked_grants",
        "revoked_tokens",
        "min_gen",
        "revoked_kids",
        "checkpoint",
    }
    assert RevocationSnapshot.from_payload(payload) == t.snapshot(4, min_gen={"bob": 2})


def test_state_without_keys_for_the_snapshot_refuses_it(key: SigningKey) -> None:
    with pytest.raises(SnapshotError):
        RevocationState().accept(
            sign_snapshot(t.snapshot(), key), KeySet(), issuer=t.ISSUER, now=NOW
        )


def test_snapshot_with_ten_thousand_revoked_grants_round_trips(key: SigningKey) -> None:
    grants = {f"grant-{i:05d}-{'x' * 20}": NOW + i for i in range(10_000)}
    snapshot = t.snapshot(9, grants=grants)
    token = sign_snapshot(snapshot, key)
    assert len(token) > jws.MAX_TOKEN_BYTES
    assert verify_snapshot(token, t.key_set(key), issuer=t.ISSUER)[0] == snapshot


def test_the_state_keeps_the_signed_text_of_the_snapshot_it_holds(key: SigningKey) -> None:
    state = RevocationState()
    first = sign_snapshot(t.snapshot(1), key)
    assert state.accept(first, t.key_set(key), issuer=t.ISSUER, now=NOW)
    assert state.token == first
    older_iat = sign_snapshot(t.snapshot(1, iat=NOW - 5), key)
    assert not state.accept(older_iat, t.key_set(key), issuer=t.ISSUER, now=NOW)
    assert state.token == first  # nothing changed, so the held text stays
    state.update(t.snapshot(2), signed_by=key.kid, now=NOW)
    assert state.token is None  # applied without its signed text: nothing to persist


def test_a_restored_checkpoint_makes_an_older_one_an_alarm(key: SigningKey) -> None:
    state = RevocationState()
    state.restore_checkpoint(sign_checkpoint(key, 10, HEAD), t.key_set(key))
    older = sign_checkpoint(key, 9, "cd" * 32)
    _accept(state, key, t.snapshot(1, checkpoint=older))
    assert state.checkpoint is not None
    assert (state.checkpoint.seq, state.checkpoint_alarm) == (10, older)


def test_a_restored_checkpoint_must_verify_again(key: SigningKey, other_key: SigningKey) -> None:
    state = RevocationState()
    with pytest.raises(CheckpointError) as unknown:
        state.restore_checkpoint(sign_checkpoint(other_key, 10, HEAD), t.key_set(key))
    forged = replace(sign_checkpoint(key, 10, HEAD), seq=11)
    with pytest.raises(CheckpointError) as bad:
        state.restore_checkpoint(forged, t.key_set(key))
    assert (unknown.value.reason, bad.value.reason) == ("unknown_kid", "bad_signature")
    assert state.checkpoint is None
