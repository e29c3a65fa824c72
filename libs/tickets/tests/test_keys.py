"""Signing secrets, RFC 7638 key ids, public JWKs and the rotating key set."""

from __future__ import annotations

import base64
import hashlib
import json

import pytest
from joserfc.jwk import OKPKey

from tickets import JWKError, KeySet, PublicKey, SecretError, SigningKey, parse_secret, thumbprint
from tickets.keys import b64url_decode, b64url_encode

SECRET = bytes(range(32))
# RFC 8037 Appendix A.1-A.3: an Ed25519 key pair and its RFC 7638 thumbprint.
RFC8037_D = "nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A"
RFC8037_X = "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"
RFC8037_THUMBPRINT = "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"


@pytest.mark.parametrize(
    "text",
    [
        SECRET.hex(),
        SECRET.hex().upper(),
        base64.urlsafe_b64encode(SECRET).decode().rstrip("="),
        base64.urlsafe_b64encode(SECRET).decode(),
        f"  {SECRET.hex()}\n",
    ],
    ids=["hex", "HEX", "base64url", "base64url-padded", "hex-with-newline"],
)
def test_secret_parses_from_hex_and_base64url(text: str) -> None:
    assert parse_secret(text) == SECRET


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (SECRET.hex()[:-2], "hex of 31 bytes"),
        (bytes(33).hex(), "hex of 33 bytes"),
        (b64url_encode(bytes(range(200, 231))), "decodes to 31 bytes"),
        (base64.b64encode(b"\xfb" * 32).decode(), "neither hex nor base64url"),
        ("correct horse battery staple", "neither hex nor base64url"),
        ("", "decodes to 0 bytes"),
        ("g" * 64, "decodes to 48 bytes"),
    ],
    ids=[
        "hex-too-short",
        "hex-too-long",
        "31-bytes",
        "standard-base64",
        "garbage",
        "empty",
        "hexlike",
    ],
)
def test_secret_that_is_not_32_bytes_of_hex_or_base64url_is_refused(
    text: str, problem: str
) -> None:
    with pytest.raises(SecretError) as caught:
        parse_secret(text)
    assert problem in caught.value.problem
    assert "32 bytes" in caught.value.message


def test_non_canonical_base64url_is_refused() -> None:
    canonical = b64url_encode(bytes(32))
    sloppy = canonical[:-1] + "B"  # same bytes, non-zero padding bits
    assert base64.urlsafe_b64decode(sloppy + "=") == bytes(32)
    with pytest.raises(ValueError, match="non-canonical"):
        b64url_decode(sloppy)
    with pytest.raises(SecretError):
        parse_secret(sloppy)


def test_signing_key_round_trips_its_secret_and_never_shows_it() -> None:
    key = SigningKey.from_secret(SECRET.hex())
    assert parse_secret(key.export_secret()) == SECRET
    assert SECRET.hex() not in repr(key)
    assert key.export_secret() not in repr(key)
    assert key.kid in repr(key)


def test_signing_key_refuses_a_secret_of_the_wrong_length() -> None:
    with pytest.raises(SecretError):
        SigningKey(bytes(31))


def test_rfc8037_key_pair_gives_the_rfcs_public_key_and_thumbprint() -> None:
    key = SigningKey(b64url_decode(RFC8037_D))
    assert key.public.to_jwk()["x"] == RFC8037_X
    assert key.kid == RFC8037_THUMBPRINT


def test_kid_is_the_rfc7638_thumbprint_computed_independently() -> None:
    key = SigningKey(SECRET)
    x = base64.urlsafe_b64encode(key.public.raw).decode().rstrip("=")
    canonical = '{"crv":"Ed25519","kty":"OKP","x":"' + x + '"}'
    digest = hashlib.sha256(canonical.encode()).digest()
    expected = base64.urlsafe_b64encode(digest).decode().rstrip("=")
    assert key.kid == expected == thumbprint(key.public.raw)
    assert OKPKey.import_key(key.public.to_jwk()).thumbprint() == expected


def test_public_jwk_round_trips_without_private_material() -> None:
    public = SigningKey(SECRET).public
    jwk = public.to_jwk()
    assert "d" not in jwk
    assert jwk == {**jwk, "kty": "OKP", "crv": "Ed25519", "alg": "Ed25519", "use": "sig"}
    assert PublicKey.from_jwk(json.loads(json.dumps(jwk))) == public


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"d": "secret"}, "private key material"),
        ({"crv": "X25519"}, "only kty OKP"),
        ({"kty": "EC"}, "only kty OKP"),
        ({"alg": "EdDSA"}, "alg must be Ed25519"),
        ({"use": "enc"}, "use must be sig"),
        ({"x": "not base64!"}, "x is not base64url"),
        ({"x": b64url_encode(bytes(31))}, "32 bytes"),
        ({"kid": "someone-else"}, "not the RFC 7638 thumbprint"),
        ({"not_after": True}, "not_after"),
        ({"not_after": -1}, "not_after"),
    ],
)
def test_public_jwk_with_a_bad_member_is_refused(change: dict[str, object], problem: str) -> None:
    jwk = {**SigningKey(SECRET).public.to_jwk(), **change}
    with pytest.raises(JWKError, match=problem):
        PublicKey.from_jwk(jwk)


def test_rotation_keeps_the_old_key_until_its_tokens_expire(key: SigningKey) -> None:
    new = SigningKey(SECRET)
    rotated = KeySet([key.public]).rotate(new.public, now=1000, keep_for=3660)
    assert [k.kid for k in rotated.active] == [new.kid]
    assert rotated.get(key.kid, now=4660) is not None
    assert rotated.get(key.kid, now=4661) is None
    assert key.kid not in rotated.prune(4661)
    assert new.kid in rotated.prune(10**9)


def test_jwks_document_round_trips_with_retired_keys(key: SigningKey) -> None:
    rotated = KeySet([key.public]).rotate(SigningKey(SECRET).public, now=1000, keep_for=60)
    document = json.loads(json.dumps(rotated.to_jwks()))
    assert [k.get("not_after") for k in document["keys"]] == [1060, None]
    assert KeySet.from_jwks(document) == rotated


@pytest.mark.parametrize("document", [{}, {"keys": {}}, [], {"keys": [{"kty": "oct"}]}])
def test_jwks_document_that_is_not_a_set_of_ed25519_keys_is_refused(document: object) -> None:
    with pytest.raises(JWKError):
        KeySet.from_jwks(document)  # type: ignore[arg-type]


def test_key_set_refuses_the_same_kid_twice(key: SigningKey) -> None:
    with pytest.raises(JWKError, match="twice"):
        KeySet([key.public, key.public])


def test_public_key_verifies_only_its_own_signatures(
    key: SigningKey, other_key: SigningKey
) -> None:
    signature = key.sign(b"message")
    assert key.public.verify(signature, b"message")
    assert not key.public.verify(signature, b"messagE")
    assert not other_key.public.verify(signature, b"message")
