"""The primary's lease: signed by the center, verified offline by the replica it names."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace

import pytest

from tickets import KeySet, SigningKey, TokenError, jws
from tickets import testing as t
from tickets.keys import b64url_decode, b64url_encode
from tickets.leases import LEASE_SKEW, LEASE_TYP, Lease, sign_lease, verify_lease

REPLICA = "https://node-b.test/mcp"
LEASE = Lease(
    iss=t.ISSUER, aud=REPLICA, sub="node-a", vault="team", epoch=3, iat=t.NOW, exp=t.NOW + 10
)


def _verify(token: str, keys: KeySet, **options: object) -> Lease:
    settings: dict[str, object] = {"issuer": t.ISSUER, "audience": REPLICA, "now": t.NOW + 1}
    settings.update(options)
    return verify_lease(token, keys, **settings)  # type: ignore[arg-type]


def _reason(token: str, keys: KeySet, **options: object) -> str:
    with pytest.raises(TokenError) as caught:
        _verify(token, keys, **options)
    return caught.value.reason


def _forge(key: SigningKey, header: Mapping[str, object], payload: Mapping[str, object]) -> str:
    return t.compact(header, jws.dumps(payload), key.sign)


def test_a_signed_lease_verifies_with_the_public_keys_and_names_its_claims(
    key: SigningKey, keys: KeySet
) -> None:
    token = sign_lease(LEASE, key)
    header = json.loads(b64url_decode(token.split(".")[0]))
    assert header == {"alg": "Ed25519", "typ": "sb-lease+jwt", "kid": key.kid}
    payload = json.loads(b64url_decode(token.split(".")[1]))
    assert sorted(payload) == ["aud", "epoch", "exp", "iat", "iss", "sub", "vault"]
    assert _verify(token, keys) == LEASE


def test_the_audience_compares_as_a_resource_url(key: SigningKey, keys: KeySet) -> None:
    token = sign_lease(LEASE, key)
    assert _verify(token, keys, audience="HTTPS://Node-B.test/mcp/") == LEASE


def test_a_tampered_lease_is_refused(key: SigningKey, keys: KeySet) -> None:
    head, body, signature = sign_lease(LEASE, key).split(".")
    later = json.loads(b64url_decode(body)) | {"epoch": 4}
    forged = f"{head}.{b64url_encode(jws.dumps(later))}.{signature}"
    assert _reason(forged, keys) == "bad_signature"


def test_a_lease_signed_by_an_untrusted_key_is_refused(other_key: SigningKey, keys: KeySet) -> None:
    assert _reason(sign_lease(LEASE, other_key), keys) == "unknown_kid"


def test_a_retired_key_past_its_end_no_longer_signs_leases(key: SigningKey) -> None:
    retired = KeySet([replace(key.public, not_after=t.NOW)])
    assert _reason(sign_lease(LEASE, key), retired) == "unknown_kid"


def test_an_expired_lease_is_refused_after_the_skew(key: SigningKey, keys: KeySet) -> None:
    token = sign_lease(LEASE, key)
    assert _verify(token, keys, now=LEASE.exp + LEASE_SKEW - 1) == LEASE
    assert _reason(token, keys, now=LEASE.exp + LEASE_SKEW) == "expired"
    assert _reason(token, keys, now=LEASE.exp, skew=0) == "expired"


def test_a_lease_from_the_future_is_refused(key: SigningKey, keys: KeySet) -> None:
    token = sign_lease(LEASE, key)
    assert _reason(token, keys, now=LEASE.iat - LEASE_SKEW - 1) == "not_yet_valid"


def test_a_lease_for_another_replica_or_issuer_is_refused(key: SigningKey, keys: KeySet) -> None:
    token = sign_lease(LEASE, key)
    assert _reason(token, keys, audience="https://node-c.test/mcp") == "bad_aud"
    assert _reason(token, keys, issuer="https://other-center.test") == "bad_iss"


def test_an_access_token_is_not_a_lease(key: SigningKey, keys: KeySet) -> None:
    assert _reason(t.mint(key), keys) == "bad_typ"
    header = {"alg": "Ed25519", "typ": LEASE_TYP, "kid": key.kid}
    assert _reason(t.mint(key, header=header), keys) == "bad_claims"


@pytest.mark.parametrize(
    ("change", "detail"),
    [
        ({"epoch": 0}, "epoch starts at 1"),
        ({"epoch": "3"}, "integers"),
        ({"epoch": True}, "integers"),
        ({"exp": t.NOW}, "after iat"),
        ({"vault": "../team"}, "vault name"),
        ({"sub": ""}, "non-empty strings"),
        ({"aud": [REPLICA]}, "non-empty strings"),
        ({"role": "primary"}, "not allowed"),
    ],
)
def test_a_lease_with_bad_claims_is_refused(
    key: SigningKey, keys: KeySet, change: dict[str, object], detail: str
) -> None:
    header = {"alg": "Ed25519", "typ": LEASE_TYP, "kid": key.kid}
    token = _forge(key, header, LEASE.to_payload() | change)
    with pytest.raises(TokenError, match=detail) as caught:
        _verify(token, keys)
    assert caught.value.reason == "bad_claims"


def test_a_missing_claim_is_refused(key: SigningKey, keys: KeySet) -> None:
    header = {"alg": "Ed25519", "typ": LEASE_TYP, "kid": key.kid}
    payload = LEASE.to_payload()
    del payload["epoch"]
    assert _reason(_forge(key, header, payload), keys) == "bad_claims"


def test_the_center_cannot_sign_a_lease_it_would_refuse(key: SigningKey) -> None:
    with pytest.raises(TokenError, match="epoch"):
        sign_lease(replace(LEASE, epoch=0), key)


def test_other_algorithms_and_oversized_leases_are_refused(key: SigningKey, keys: KeySet) -> None:
    none = {"alg": "none", "typ": LEASE_TYP, "kid": key.kid}
    assert _reason(_forge(key, none, LEASE.to_payload()), keys) == "bad_alg"
    assert _reason("a." * 1200 + "b", keys) == "bad_size"
