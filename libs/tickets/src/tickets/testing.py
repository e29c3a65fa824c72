"""Test helpers other packages reuse: throw-away keys, signed revocation state, and `mint`
for tokens that are valid or deliberately broken in any header member or claim.

For tests only. The fixed keys here are public and must never sign anything real.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import subprocess
import sys
from collections.abc import Callable, Mapping
from typing import Any, Final

from tickets import jws
from tickets.keys import KeySet, SigningKey, b64url_encode
from tickets.revocation import RevocationSnapshot, RevocationState, sign_snapshot
from tickets.verify import Verifier

ISSUER: Final = "https://center.test"
AUDIENCE: Final = "https://node-a.test/mcp"
NOW: Final = 1_767_225_600
"""2026-01-01T00:00:00Z, the fixed clock of tests and golden vectors."""


class _Drop:
    def __repr__(self) -> str:
        return "DROP"


DROP: Final = _Drop()
"""Pass as a header member or claim value to leave it out of the token."""

Signer = Callable[[bytes], bytes]


def fixed_key(index: int = 0) -> SigningKey:
    """A deterministic, PUBLIC test-only key: sha256(b"secondbrain TEST-ONLY key <index>")."""
    return SigningKey(hashlib.sha256(f"secondbrain TEST-ONLY key {index}".encode()).digest())


def throwaway_key() -> SigningKey:
    """A fresh random key for one test."""
    return SigningKey.generate()


def key_set(*keys: SigningKey) -> KeySet:
    return KeySet(key.public for key in keys)


def none_signer(_: bytes) -> bytes:
    """The empty signature of `alg: none`."""
    return b""


def hs256_signer(secret: bytes) -> Signer:
    """HMAC-SHA256 keyed with `secret` — e.g. the public key, for alg-confusion tests."""
    return lambda data: hmac.new(secret, data, hashlib.sha256).digest()


def claims(now: int = NOW, **overrides: object) -> dict[str, Any]:
    """A valid OAuth access-token claim set for AUDIENCE, with `overrides` applied."""
    payload: dict[str, Any] = {
        "iss": ISSUER,
        "sub": "alice",
        "aud": AUDIENCE,
        "iat": now,
        "nbf": now,
        "exp": now + 3600,
        "jti": "jti-alice-0001",
        "scope": "read write",
        "vaults": ["team"],
        "role": "editor",
        "mgen": 1,
        "client_id": "test-client",
    }
    return _apply(payload, overrides)


def _apply(base: dict[str, Any], overrides: Mapping[str, object]) -> dict[str, Any]:
    merged = {**base, **overrides}
    return {name: value for name, value in merged.items() if value is not DROP}


def compact(header: Mapping[str, Any], payload: bytes, signer: Signer) -> str:
    """Assemble a compact JWS by hand, so header and payload may be anything at all."""
    encoded = json.dumps(header, separators=(",", ":")).encode()
    signing_input = f"{b64url_encode(encoded)}.{b64url_encode(payload)}"
    return f"{signing_input}.{b64url_encode(signer(signing_input.encode('ascii')))}"


def mint(
    key: SigningKey | None = None,
    *,
    now: int = NOW,
    header: Mapping[str, object] | None = None,
    payload: bytes | None = None,
    signer: Signer | None = None,
    **overrides: object,
) -> str:
    """A token signed by `key` (default `fixed_key()`), valid unless told otherwise.

    `header` overrides header members, `overrides` claims (DROP removes either);
    `payload` replaces the claim JSON with raw bytes; `signer` replaces the signature."""
    key = key or fixed_key()
    members = _apply({"alg": jws.ALG, "typ": jws.ACCESS_TOKEN_TYP, "kid": key.kid}, header or {})
    body = payload if payload is not None else jws.dumps(claims(now, **overrides))
    return compact(members, body, signer or key.sign)


def snapshot(seq: int = 1, *, iat: int = NOW, **fields: Any) -> RevocationSnapshot:
    """A revocation snapshot from ISSUER; `fields` set grants, tokens, min_gen, ..."""
    return RevocationSnapshot(iss=ISSUER, seq=seq, iat=iat, **fields)


def revocation_state(
    key: SigningKey | None = None, *, now: int = NOW, **fields: Any
) -> RevocationState:
    """A node's state holding one freshly signed snapshot (see `snapshot`)."""
    key = key or fixed_key()
    state = RevocationState()
    state.accept(
        sign_snapshot(snapshot(iat=now, **fields), key), key_set(key), issuer=ISSUER, now=now
    )
    return state


def verifier(
    key: SigningKey | None = None,
    *,
    state: RevocationState | None = None,
    now: int = NOW,
    **options: Any,
) -> Verifier:
    """A Verifier for ISSUER/AUDIENCE trusting `key`, with a fresh state and a clock at `now`."""
    key = key or fixed_key()
    return Verifier(
        keys=options.pop("keys", key_set(key)),
        issuer=ISSUER,
        audience=AUDIENCE,
        revocation=state if state is not None else revocation_state(key, now=now),
        clock=lambda: now,
        **options,
    )


_LOADED = """
import json, sys
from {module} import main
sys.argv = [{module!r}, *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
print(json.dumps(sorted({{m.split(".")[0] for m in sys.modules}})))
"""


def cli_imports(
    module: str, args: list[str], env: Mapping[str, str] | None = None, cwd: str | None = None
) -> tuple[str, set[str]]:
    """Run the CLI `module`'s `main` with `args` in a fresh interpreter: what it printed,
    and the top-level packages it had imported by the end (what a verb costs to start)."""
    done = subprocess.run(  # noqa: S603 — our own interpreter, a module tests name
        [sys.executable, "-c", _LOADED.format(module=module), *args],
        env=None if env is None else dict(env),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    *printed, modules = done.stdout.strip().splitlines()
    return "\n".join(printed), set(json.loads(modules))
