"""Write tests/vectors/tokens.json: golden access-token vectors and their expected verdicts.

Deterministic (Ed25519 signatures are, and every jti and time is fixed), so running it
again must reproduce the file byte for byte; test_vectors.py checks both. The keys are
derived from public strings: TEST-ONLY, never use them for anything real.

    .venv/bin/python libs/tickets/tests/make_vectors.py
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tickets import SigningKey, sign_snapshot
from tickets import testing as t
from tickets.claims import DAY, HOUR
from tickets.keys import b64url_decode, b64url_encode

OUTPUT = Path(__file__).resolve().parents[3] / "tests" / "vectors" / "tokens.json"
NOW = t.NOW
KEY, OTHER, REVOKED = t.fixed_key(0), t.fixed_key(1), t.fixed_key(2)
GRANT = {"client_id": t.DROP, "gid": "g-child", "chain": ["g-root", "g-child"], "dep": 2}
GRANT_EXP = {"exp": NOW + 900}


def _ok(**ticket: Any) -> dict[str, Any]:
    base = {
        "principal": "alice",
        "permissions": ["read", "write"],
        "vaults": ["team"],
        "grant_id": None,
        "chain": [],
        "role": "editor",
        "client_id": "test-client",
        "jti": "jti-alice-0001",
        "exp": NOW + HOUR,
        "kind": "oauth",
        "stale": False,
    }
    return {"ok": True, "ticket": {**base, **ticket}}


def _no(reason: str) -> dict[str, Any]:
    return {"ok": False, "reason": reason}


def _snapshot(iat: int = NOW) -> str:
    return sign_snapshot(
        t.snapshot(
            1,
            iat=iat,
            tokens={"jti-revoked": NOW + HOUR},
            grants={"g-revoked-root": NOW + HOUR, "g-revoked": NOW + HOUR},
            min_gen={"carol": 5},
            revoked_kids=frozenset({REVOKED.kid}),
        ),
        KEY,
    )


def _valid() -> list[tuple[str, str, dict[str, Any]]]:
    old = {"iat": NOW - HOUR - 30, "nbf": NOW - HOUR - 30, "exp": NOW - 30}
    return [
        ("valid_oauth", t.mint(KEY), _ok()),
        (
            "valid_grant_depth_2",
            t.mint(KEY, **GRANT, **GRANT_EXP),
            _ok(
                grant_id="g-child",
                chain=["g-root", "g-child"],
                client_id=None,
                exp=NOW + 900,
                kind="grant",
            ),
        ),
        (
            "valid_agent_90_days",
            t.mint(KEY, client_id=t.DROP, exp=NOW + 90 * DAY),
            _ok(client_id=None, exp=NOW + 90 * DAY, kind="agent"),
        ),
        ("valid_expired_inside_skew", t.mint(KEY, **old), _ok(exp=NOW - 30)),
        (
            "valid_role_caps_scope",
            t.mint(KEY, scope="read write delete manage", role="reader"),
            _ok(permissions=["read"], role="reader"),
        ),
    ]


def _sloppy(last: str) -> str:
    """The same final base64url character with a padding bit set: same bytes, new text."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    return alphabet[alphabet.index(last) ^ 1]


def _header_and_signature() -> list[tuple[str, str, dict[str, Any]]]:
    good = t.mint(KEY)
    header, _, signature = good.split(".")
    forged = t.mint(KEY, scope="read write delete manage", role="owner").split(".")[1]
    short = b64url_encode(b64url_decode(signature)[:60])
    return [
        ("bad_size", t.mint(KEY, sub="x" * 9000), _no("bad_size")),
        ("malformed_two_segments", good.rsplit(".", 1)[0], _no("malformed")),
        ("malformed_non_canonical_base64", good[:-1] + _sloppy(good[-1]), _no("malformed")),
        (
            "malformed_embedded_jwk",
            t.mint(KEY, header={"jwk": KEY.public.to_jwk()}),
            _no("malformed"),
        ),
        ("bad_typ", t.mint(KEY, header={"typ": "JWT"}), _no("bad_typ")),
        ("bad_typ_missing", t.mint(KEY, header={"typ": t.DROP}), _no("bad_typ")),
        ("bad_alg_none", t.mint(KEY, header={"alg": "none"}, signer=t.none_signer), _no("bad_alg")),
        (
            "bad_alg_hs256_public_key",
            t.mint(KEY, header={"alg": "HS256"}, signer=t.hs256_signer(KEY.public.raw)),
            _no("bad_alg"),
        ),
        ("bad_alg_eddsa", t.mint(KEY, header={"alg": "EdDSA"}), _no("bad_alg")),
        ("unknown_kid", t.mint(OTHER), _no("unknown_kid")),
        ("bad_signature_other_key", t.mint(OTHER, header={"kid": KEY.kid}), _no("bad_signature")),
        ("bad_signature_tampered_payload", f"{header}.{forged}.{signature}", _no("bad_signature")),
        ("bad_signature_truncated", f"{header}.{good.split('.')[1]}.{short}", _no("bad_signature")),
    ]


def _claims() -> list[tuple[str, str, dict[str, Any]]]:
    late = {"iat": NOW + 61, "nbf": NOW + 61, "exp": NOW + HOUR}
    return [
        (
            "bad_json_duplicate_keys",
            t.mint(KEY, payload=b'{"sub":"alice","sub":"root"}'),
            _no("bad_json"),
        ),
        ("bad_json_not_an_object", t.mint(KEY, payload=b'["alice"]'), _no("bad_json")),
        ("bad_claims_missing_jti", t.mint(KEY, jti=t.DROP), _no("bad_claims")),
        ("bad_iss", t.mint(KEY, iss="https://evil.test"), _no("bad_iss")),
        ("bad_aud", t.mint(KEY, aud="https://node-b.test/mcp"), _no("bad_aud")),
        (
            "expired",
            t.mint(KEY, iat=NOW - 2 * HOUR, nbf=NOW - 2 * HOUR, exp=NOW - HOUR),
            _no("expired"),
        ),
        ("not_yet_valid", t.mint(KEY, **late), _no("not_yet_valid")),
        ("lifetime_oauth_over_1h", t.mint(KEY, exp=NOW + HOUR + 1), _no("lifetime")),
        ("lifetime_grant_over_60min", t.mint(KEY, **GRANT, exp=NOW + HOUR + 60), _no("lifetime")),
        (
            "lifetime_agent_over_90d",
            t.mint(KEY, client_id=t.DROP, exp=NOW + 90 * DAY + 1),
            _no("lifetime"),
        ),
        (
            "depth_3",
            t.mint(KEY, **{**GRANT, "chain": ["a", "b", "g-child"], "dep": 3}, **GRANT_EXP),
            _no("depth"),
        ),
        ("depth_chain_mismatch", t.mint(KEY, **{**GRANT, "dep": 1}, **GRANT_EXP), _no("depth")),
    ]


def _revocation() -> list[tuple[str, str, dict[str, Any]]]:
    revoked_grant = {**GRANT, "gid": "g-revoked", "chain": ["g-root", "g-revoked"]}
    revoked_root = {**GRANT, "chain": ["g-revoked-root", "g-child"]}
    return [
        ("revoked_jti", t.mint(KEY, jti="jti-revoked"), _no("revoked")),
        ("revoked_gid", t.mint(KEY, **revoked_grant, **GRANT_EXP), _no("revoked")),
        ("revoked_ancestor", t.mint(KEY, **revoked_root, **GRANT_EXP), _no("revoked")),
        ("generation_below_minimum", t.mint(KEY, sub="carol", mgen=4), _no("generation")),
        ("key_revoked", t.mint(REVOKED), _no("key_revoked")),
    ]


def _staleness() -> list[dict[str, Any]]:
    token = t.mint(KEY)
    return [
        {"name": "stale_no_snapshot", "token": token, "revocation": None, "expect": _no("stale")},
        {
            "name": "stale_old_snapshot",
            "token": token,
            "revocation": _snapshot(NOW - 121),
            "expect": _no("stale"),
        },
        {
            "name": "stale_read_allowed",
            "token": token,
            "revocation": _snapshot(NOW - 121),
            "read_when_stale": True,
            "expect": _ok(permissions=["read"], stale=True),
        },
    ]


def build() -> dict[str, Any]:
    """The whole vector document."""
    groups = _valid() + _header_and_signature() + _claims() + _revocation()
    vectors = [{"name": n, "token": token, "expect": e} for n, token, e in groups]
    return {
        "description": "secondbrain access-token verification vectors; verify each at `now`",
        "warning": "TEST-ONLY keys derived from public strings; never use them for anything real",
        "test_secrets_hex": {
            "signing": _secret(KEY),
            "other": _secret(OTHER),
            "revoked": _secret(REVOKED),
        },
        "jwks": t.key_set(KEY, REVOKED).to_jwks(),
        "issuer": t.ISSUER,
        "audience": t.AUDIENCE,
        "now": NOW,
        "skew": 60,
        "max_stale": 120,
        "read_when_stale": False,
        "revocation": _snapshot(),
        "vectors": vectors + _staleness(),
    }


def _secret(key: SigningKey) -> str:
    return b64url_decode(key.export_secret()).hex()


def render() -> str:
    return json.dumps(build(), indent=2, ensure_ascii=False) + "\n"


def main() -> None:
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(render(), encoding="utf-8")
    print(f"wrote {len(build()['vectors'])} vectors to {OUTPUT}")


if __name__ == "__main__":
    main()
