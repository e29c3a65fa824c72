"""The helpers other packages' tests reuse: fixed keys, mint, broken tokens, state."""

from __future__ import annotations

import json

import pytest

from tickets import SigningKey, TokenError
from tickets import testing as t
from tickets.keys import b64url_decode


def _parts(token: str) -> tuple[dict[str, object], bytes]:
    header, payload, _ = token.split(".")
    return json.loads(b64url_decode(header)), b64url_decode(payload)


def test_fixed_keys_are_deterministic_and_distinct() -> None:
    assert t.fixed_key(0).kid == t.fixed_key(0).kid
    assert t.fixed_key(0).kid != t.fixed_key(1).kid
    assert t.throwaway_key().kid != t.throwaway_key().kid


def test_minted_token_is_valid_by_default(key: SigningKey) -> None:
    assert t.verifier(key).verify(t.mint(key)).principal == "alice"


def test_mint_is_deterministic_for_equal_inputs(key: SigningKey) -> None:
    assert t.mint(key, sub="bob") == t.mint(key, sub="bob")


def test_drop_removes_header_members_and_claims(key: SigningKey) -> None:
    header, payload = _parts(t.mint(key, header={"typ": t.DROP}, exp=t.DROP))
    assert "typ" not in header
    assert "exp" not in json.loads(payload)


def test_header_and_claim_overrides_reach_the_token(key: SigningKey) -> None:
    header, payload = _parts(t.mint(key, header={"alg": "HS256", "x5u": "u"}, sub="bob"))
    assert header == {"alg": "HS256", "typ": "at+jwt", "kid": key.kid, "x5u": "u"}
    assert json.loads(payload)["sub"] == "bob"


def test_raw_payload_and_custom_signer_allow_any_breakage(key: SigningKey) -> None:
    token = t.mint(key, payload=b"not json", signer=t.none_signer)
    assert token.endswith(".")
    assert _parts(token)[1] == b"not json"


def test_revocation_state_holds_a_fresh_signed_snapshot(key: SigningKey) -> None:
    state = t.revocation_state(key, tokens={"j": t.NOW})
    assert state.seq == 1
    assert state.signed_by == key.kid
    assert not state.is_stale(120, t.NOW)


def test_verifier_clock_is_fixed(key: SigningKey) -> None:
    verifier = t.verifier(key, now=t.NOW + 7200)
    with pytest.raises(TokenError) as caught:
        verifier.verify(t.mint(key))
    assert caught.value.reason == "expired"
