"""Compact JWS: Ed25519 only, an allow-listed header, exact signed bytes, strict JSON."""

from __future__ import annotations

import json

import pytest

from tickets import SigningKey, TokenError, jws
from tickets import testing as t
from tickets.keys import b64url_decode, b64url_encode


def _reason(call: object) -> str:
    assert callable(call)
    with pytest.raises(TokenError) as caught:
        call()
    return caught.value.reason


def test_signed_payload_comes_back_byte_for_byte(key: SigningKey) -> None:
    body = b'{"z":1,  "a":"\xc3\xa4"}'
    token = jws.sign(body, key, typ="example+jwt")
    assert jws.verify_signature(token, key.public) == body


def test_header_names_the_algorithm_type_and_key_and_nothing_else(key: SigningKey) -> None:
    token = jws.sign({"a": 1}, key, typ="at+jwt")
    header = json.loads(b64url_decode(token.split(".")[0]))
    assert header == {"alg": "Ed25519", "typ": "at+jwt", "kid": key.kid}
    assert jws.read_header(token) == jws.Header("Ed25519", "at+jwt", key.kid)


def test_claim_sets_are_signed_as_compact_sorted_json(key: SigningKey) -> None:
    token = jws.sign({"b": 2, "a": "ä"}, key, typ="at+jwt")
    assert b64url_decode(token.split(".")[1]) == '{"a":"ä","b":2}'.encode()


def test_dumps_refuses_nan() -> None:
    with pytest.raises(ValueError, match="JSON compliant"):
        jws.dumps({"x": float("nan")})


@pytest.mark.parametrize("token", ["", "x" * (jws.MAX_TOKEN_BYTES + 1)], ids=["empty", "9-KiB"])
def test_token_outside_the_size_limit_is_refused_first(token: str) -> None:
    assert _reason(lambda: jws.read_header(token)) == "bad_size"


def _segments(header: object) -> str:
    return f"{b64url_encode(json.dumps(header).encode())}.e30.AAAA"


@pytest.mark.parametrize(
    "token",
    [
        "a.b",
        "a.b.c.d",
        "eyJ9.e30.AAAA",
        "e30=.e30.AAAA",
        "e30.e30.AAA+",
        "e30.e30.AAB",
        "ä.e30.AAAA",
        _segments([1, 2]),
        _segments({"alg": "Ed25519", "jwk": {"kty": "OKP"}}),
        _segments({"alg": "Ed25519", "crit": ["b64"], "b64": False}),
        _segments({"alg": 25519}),
        b64url_encode(b'{"alg":"Ed25519","alg":"none"}') + ".e30.AAAA",
    ],
    ids=[
        "two-segments",
        "four-segments",
        "header-not-json",
        "padded-base64",
        "standard-base64",
        "non-canonical-base64",
        "non-ascii",
        "header-array",
        "embedded-jwk",
        "crit-b64",
        "alg-number",
        "duplicate-alg",
    ],
)
def test_token_that_is_not_a_strict_compact_jws_is_malformed(token: str) -> None:
    assert _reason(lambda: jws.read_header(token)) == "malformed"


def test_tampered_payload_fails_the_signature(key: SigningKey) -> None:
    header, _, signature = t.mint(key).split(".")
    forged = b64url_encode(jws.dumps(t.claims(sub="mallory")))
    token = f"{header}.{forged}.{signature}"
    assert _reason(lambda: jws.verify_signature(token, key.public)) == "bad_signature"


def test_signature_by_another_key_fails(key: SigningKey, other_key: SigningKey) -> None:
    token = t.mint(other_key, header={"kid": key.kid})
    assert _reason(lambda: jws.verify_signature(token, key.public)) == "bad_signature"


def test_truncated_signature_fails(key: SigningKey) -> None:
    token = t.mint(key)
    assert _reason(lambda: jws.verify_signature(token[:-4], key.public)) == "bad_signature"


@pytest.mark.parametrize(
    "payload",
    [
        b'{"sub":"alice","sub":"mallory"}',
        b'{"exp":NaN}',
        b'{"exp":Infinity}',
        b'["sub"]',
        b'"alice"',
        b"\xff\xfe{}",
        b'{"a":' + b"[" * 5000,
        b'{"a":1} trailing',
    ],
    ids=["duplicate", "nan", "infinity", "array", "string", "not-utf8", "deep", "trailing"],
)
def test_payload_that_is_not_one_strict_json_object_is_refused(payload: bytes) -> None:
    assert _reason(lambda: jws.loads(payload)) == "bad_json"


def test_duplicate_keys_are_refused_even_when_nested() -> None:
    with pytest.raises(TokenError, match="duplicate keys"):
        jws.loads(b'{"a":{"b":1,"b":2}}')
