"""Ed25519 keys: the center's signing key and the public key set every node trusts.

The signing key comes from exactly 32 secret bytes (base64url or hex, nothing else).
Every public key is named by its RFC 7638 thumbprint, and a retired key stays in the
set until `not_after`, when the last token it signed has expired.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
import secrets
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from joserfc.jwk import OKPKey

from tickets.errors import JWKError, SecretError

SECRET_BYTES = 32
_B64URL = re.compile(r"[A-Za-z0-9_-]*")
_HEX = re.compile(r"(?:[0-9A-Fa-f]{2})+")


def b64url_encode(data: bytes) -> str:
    """Unpadded base64url, as JOSE writes it."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    """Strict unpadded base64url: no padding, no other alphabet, canonical final bits.

    Raises ValueError, so one token string can never have two spellings."""
    if not _B64URL.fullmatch(text) or len(text) % 4 == 1:
        raise ValueError("not unpadded base64url")
    data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if b64url_encode(data) != text:
        raise ValueError("non-canonical base64url")
    return data


def parse_secret(text: str) -> bytes:
    """Decode a signing secret given as 64 hex digits or 43 base64url characters."""
    value = text.strip()
    if _HEX.fullmatch(value) and len(value) != 44:
        data = bytes.fromhex(value)
        if len(data) != SECRET_BYTES:
            raise SecretError(f"hex of {len(data)} bytes, not {SECRET_BYTES}")
        return data
    unpadded = value[:-1] if len(value) == 44 and value.endswith("=") else value
    try:
        data = b64url_decode(unpadded)
    except (ValueError, binascii.Error) as exc:
        raise SecretError(f"neither hex nor base64url ({len(value)} characters)") from exc
    if len(data) != SECRET_BYTES:
        raise SecretError(f"decodes to {len(data)} bytes, not {SECRET_BYTES}")
    return data


def thumbprint(raw_public: bytes) -> str:
    """RFC 7638 JWK thumbprint (SHA-256, base64url) of an Ed25519 public key."""
    members = {"crv": "Ed25519", "kty": "OKP", "x": b64url_encode(raw_public)}
    canonical = json.dumps(members, separators=(",", ":"), sort_keys=True)
    return b64url_encode(hashlib.sha256(canonical.encode("ascii")).digest())


@dataclass(frozen=True)
class PublicKey:
    """An Ed25519 public key, its `kid`, and `not_after` once it is retired."""

    raw: bytes
    not_after: int | None = None
    kid: str = field(init=False)
    _native: Ed25519PublicKey = field(init=False, repr=False, compare=False)
    _jose: OKPKey = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if len(self.raw) != SECRET_BYTES:
            raise JWKError(f"an Ed25519 public key has 32 bytes, not {len(self.raw)}")
        try:
            native = Ed25519PublicKey.from_public_bytes(self.raw)
        except ValueError as exc:
            raise JWKError("not an Ed25519 public key") from exc
        object.__setattr__(self, "kid", thumbprint(self.raw))
        object.__setattr__(self, "_native", native)
        object.__setattr__(self, "_jose", OKPKey.import_key(native))

    @property
    def jose_key(self) -> OKPKey:
        return self._jose

    @property
    def active(self) -> bool:
        return self.not_after is None

    def usable_at(self, now: float) -> bool:
        return self.not_after is None or now <= self.not_after

    def verify(self, signature: bytes, data: bytes) -> bool:
        try:
            self._native.verify(signature, data)
        except InvalidSignature:
            return False
        return True

    def to_jwk(self) -> dict[str, Any]:
        jwk: dict[str, Any] = {
            "kty": "OKP",
            "crv": "Ed25519",
            "x": b64url_encode(self.raw),
            "kid": self.kid,
            "alg": "Ed25519",
            "use": "sig",
        }
        if self.not_after is not None:
            jwk["not_after"] = self.not_after
        return jwk

    @classmethod
    def from_jwk(cls, jwk: Mapping[str, Any]) -> PublicKey:
        """Load one public JWK; private members, other curves and a wrong kid are refused."""
        if not isinstance(jwk, Mapping):
            raise JWKError("a JWK is a JSON object")
        if "d" in jwk:
            raise JWKError("private key material in a public key set")
        if jwk.get("kty") != "OKP" or jwk.get("crv") != "Ed25519":
            raise JWKError("only kty OKP with crv Ed25519 is accepted")
        if jwk.get("alg", "Ed25519") != "Ed25519" or jwk.get("use", "sig") != "sig":
            raise JWKError("alg must be Ed25519 and use must be sig")
        x = jwk.get("x")
        try:
            raw = b64url_decode(x) if isinstance(x, str) else b""
        except ValueError as exc:
            raise JWKError("x is not base64url") from exc
        not_after = jwk.get("not_after")
        if not_after is not None and (type(not_after) is not int or not_after < 0):
            raise JWKError("not_after must be a non-negative integer")
        key = cls(raw, not_after)
        if jwk.get("kid", key.kid) != key.kid:
            raise JWKError(f"kid {jwk.get('kid')!r} is not the RFC 7638 thumbprint {key.kid}")
        return key


class SigningKey:
    """The center's Ed25519 private key. Its repr never shows the secret."""

    __slots__ = ("_jose", "_private", "public")

    def __init__(self, secret: bytes) -> None:
        if len(secret) != SECRET_BYTES:
            raise SecretError(f"{len(secret)} bytes given")
        self._private = Ed25519PrivateKey.from_private_bytes(secret)
        raw = self._private.public_key().public_bytes_raw()
        self.public = PublicKey(raw)
        self._jose = OKPKey.import_key(self._private)

    @classmethod
    def from_secret(cls, text: str) -> SigningKey:
        """Load `SECONDBRAIN_CENTER_SECRET`: 32 bytes as base64url or hex."""
        return cls(parse_secret(text))

    @classmethod
    def generate(cls) -> SigningKey:
        return cls(secrets.token_bytes(SECRET_BYTES))

    @property
    def kid(self) -> str:
        return self.public.kid

    @property
    def jose_key(self) -> OKPKey:
        return self._jose

    def sign(self, data: bytes) -> bytes:
        return self._private.sign(data)

    def export_secret(self) -> str:
        """The secret as base64url, for `key rotate` to show exactly once."""
        return b64url_encode(self._private.private_bytes_raw())

    def __repr__(self) -> str:
        return f"SigningKey(kid={self.kid!r})"


class KeySet:
    """The public keys a verifier trusts, by kid: active ones and retired ones."""

    def __init__(self, keys: Iterable[PublicKey] = ()) -> None:
        self._keys: dict[str, PublicKey] = {}
        for key in keys:
            if key.kid in self._keys:
                raise JWKError(f"kid {key.kid} appears twice")
            self._keys[key.kid] = key

    def get(self, kid: str, now: float | None = None) -> PublicKey | None:
        """The key named `kid`, or None; a retired key past `not_after` counts as gone."""
        key = self._keys.get(kid)
        if key is None or (now is not None and not key.usable_at(now)):
            return None
        return key

    @property
    def active(self) -> tuple[PublicKey, ...]:
        return tuple(k for k in self._keys.values() if k.active)

    def __contains__(self, kid: object) -> bool:
        return kid in self._keys

    def __iter__(self) -> Iterator[PublicKey]:
        return iter(self._keys.values())

    def __len__(self) -> int:
        return len(self._keys)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, KeySet) and self._keys == other._keys

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"KeySet({list(self._keys.values())!r})"

    def rotate(self, new: PublicKey, *, now: int, keep_for: int) -> KeySet:
        """Add `new` as the active key and retire the current ones at `now + keep_for`.

        `keep_for` must cover the longest token lifetime plus clock skew."""
        kept = [k if not k.active else replace(k, not_after=now + keep_for) for k in self]
        return KeySet([*kept, new])

    def prune(self, now: float) -> KeySet:
        """Drop retired keys whose tokens have all expired."""
        return KeySet(k for k in self if k.usable_at(now))

    def to_jwks(self) -> dict[str, Any]:
        return {"keys": [k.to_jwk() for k in self]}

    @classmethod
    def from_jwks(cls, document: Mapping[str, Any]) -> KeySet:
        """Load a JWKS document (`{"keys": [...]}`), refusing anything but Ed25519 keys."""
        keys = document.get("keys") if isinstance(document, Mapping) else None
        if not isinstance(keys, list):
            raise JWKError('a JWKS document is an object with a "keys" array')
        return cls(PublicKey.from_jwk(jwk) for jwk in keys)
