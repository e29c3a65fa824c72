"""Compact JWS with the algorithm pinned to Ed25519, typed headers and strict JSON.

No header is trusted before it passed an allow-list, and a payload is parsed only from
the exact bytes whose signature verified; nothing is re-serialized before checking.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, NoReturn

from joserfc import jws
from joserfc.errors import JoseError

from tickets.errors import Reason, TokenError
from tickets.keys import PublicKey, SigningKey, b64url_decode

ALG = "Ed25519"
"""The one accepted `alg`: RFC 9864's fully specified name for EdDSA over Ed25519.
The polymorphic `EdDSA` is refused like any other value (joserfc deprecates it)."""

ACCESS_TOKEN_TYP = "at+jwt"  # noqa: S105 - RFC 9068 media type, not a secret
MAX_TOKEN_BYTES = 8 * 1024
HEADER_NAMES = frozenset({"alg", "typ", "kid"})


@dataclass(frozen=True)
class Header:
    """The protected header of a compact JWS; absent members are empty strings."""

    alg: str
    typ: str
    kid: str


def typ_matches(actual: str, expected: str) -> bool:
    """`typ` is a media type: compared case-insensitively, `application/` optional
    (RFC 7515 §4.1.9, RFC 9068 §4)."""
    return actual.lower().removeprefix("application/") == expected.lower()


@cache
def _registry(max_bytes: int) -> jws.JWSRegistry:
    registry = jws.JWSRegistry(algorithms=[ALG])
    registry.max_payload_length = max_bytes
    return registry


def dumps(payload: Mapping[str, Any]) -> bytes:
    """Compact, key-sorted UTF-8 JSON; NaN and Infinity are refused."""
    text = json.dumps(
        payload, separators=(",", ":"), sort_keys=True, ensure_ascii=False, allow_nan=False
    )
    return text.encode("utf-8")


def sign(payload: Mapping[str, Any] | bytes, key: SigningKey, *, typ: str) -> str:
    """Sign `payload` (a claim set, or exact bytes) as a compact JWS with `typ` and `kid`."""
    body = payload if isinstance(payload, bytes) else dumps(payload)
    header = {"alg": ALG, "typ": typ, "kid": key.kid}
    return jws.serialize_compact(header, body, key.jose_key, registry=_registry(MAX_TOKEN_BYTES))


def _refuse(reason: Reason, detail: str, cause: BaseException | None = None) -> NoReturn:
    raise TokenError(reason, detail) from cause


def read_header(token: str, *, max_bytes: int = MAX_TOKEN_BYTES) -> Header:
    """Check size and shape, then decode the header strictly (reasons bad_size, malformed)."""
    if not isinstance(token, str) or not 0 < len(token) <= max_bytes:
        _refuse("bad_size", f"token must be 1 to {max_bytes} characters")
    parts = token.split(".")
    if len(parts) != 3 or not token.isascii():
        _refuse("malformed", "not a compact JWS (three base64url segments)")
    try:
        decoded = [b64url_decode(segment) for segment in parts]
        header = loads(decoded[0])
    except (ValueError, TokenError) as exc:
        _refuse("malformed", "a segment is not strict base64url or the header not JSON", exc)
    unknown = set(header) - HEADER_NAMES
    if unknown:
        _refuse("malformed", f"header members not allowed: {sorted(unknown)}")
    values = [header.get(name, "") for name in ("alg", "typ", "kid")]
    if not all(isinstance(v, str) for v in values):
        _refuse("malformed", "alg, typ and kid must be strings")
    return Header(*values)


def verify_signature(token: str, key: PublicKey, *, max_bytes: int = MAX_TOKEN_BYTES) -> bytes:
    """Verify the signature with joserfc and return the exact signed payload bytes."""
    try:
        obj = jws.deserialize_compact(token, key.jose_key, registry=_registry(max_bytes))
    except JoseError as exc:
        _refuse("bad_signature", f"signature does not verify with kid {key.kid}", exc)
    return obj.payload


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        names = [name for name, _ in pairs]
        raise ValueError(f"duplicate keys {sorted({n for n in names if names.count(n) > 1})}")
    return result


def _no_constants(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


def loads(data: bytes) -> dict[str, Any]:
    """Strict JSON object: UTF-8, no duplicate keys, no NaN/Infinity (reason bad_json)."""
    try:
        value = json.loads(
            data.decode("utf-8"), object_pairs_hook=_no_duplicates, parse_constant=_no_constants
        )
    except (ValueError, RecursionError) as exc:
        _refuse("bad_json", str(exc)[:200], exc)
    if not isinstance(value, dict):
        _refuse("bad_json", f"payload is a JSON {type(value).__name__}, not an object")
    return value


__all__ = [
    "ACCESS_TOKEN_TYP",
    "ALG",
    "HEADER_NAMES",
    "MAX_TOKEN_BYTES",
    "Header",
    "dumps",
    "loads",
    "read_header",
    "sign",
    "typ_matches",
    "verify_signature",
]
