"""Golden vectors in tests/vectors/tokens.json: each gives exactly its expected verdict."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tickets import REASONS, KeySet, RevocationState, SigningKey, TokenError, Verifier

HERE = Path(__file__).resolve().parent
VECTORS = HERE.parents[2] / "tests" / "vectors" / "tokens.json"
DOCUMENT: dict[str, Any] = json.loads(VECTORS.read_text(encoding="utf-8"))


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_vectors", HERE / "make_vectors.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _verifier(vector: dict[str, Any]) -> Verifier:
    keys = KeySet.from_jwks(DOCUMENT["jwks"])
    state = RevocationState()
    snapshot = vector.get("revocation", DOCUMENT["revocation"])
    if snapshot is not None:
        state.accept(snapshot, keys, issuer=DOCUMENT["issuer"], now=DOCUMENT["now"])
    return Verifier(
        keys=keys,
        issuer=DOCUMENT["issuer"],
        audience=DOCUMENT["audience"],
        revocation=state,
        skew=DOCUMENT["skew"],
        max_stale=DOCUMENT["max_stale"],
        read_when_stale=vector.get("read_when_stale", DOCUMENT["read_when_stale"]),
        clock=lambda: DOCUMENT["now"],
    )


def _verdict(vector: dict[str, Any]) -> dict[str, Any]:
    try:
        ticket = _verifier(vector).verify(vector["token"])
    except TokenError as exc:
        return {"ok": False, "reason": exc.reason}
    return {
        "ok": True,
        "ticket": {
            "principal": ticket.principal,
            "permissions": sorted(ticket.permissions),
            "vaults": list(ticket.vaults),
            "grant_id": ticket.grant_id,
            "chain": list(ticket.chain),
            "role": ticket.role,
            "client_id": ticket.client_id,
            "jti": ticket.jti,
            "exp": ticket.exp,
            "kind": ticket.kind,
            "stale": ticket.stale,
        },
    }


@pytest.mark.parametrize(
    "vector", DOCUMENT["vectors"], ids=[v["name"] for v in DOCUMENT["vectors"]]
)
def test_vector_gives_exactly_its_expected_result(vector: dict[str, Any]) -> None:
    assert _verdict(vector) == vector["expect"]


def test_vectors_cover_every_refusal_reason() -> None:
    reasons = {v["expect"].get("reason") for v in DOCUMENT["vectors"]} - {None}
    assert reasons == set(REASONS)


def test_vector_file_is_what_the_generator_writes() -> None:
    assert _generator().render() == VECTORS.read_text(encoding="utf-8")


def test_vector_keys_are_the_published_test_only_keys() -> None:
    secrets = DOCUMENT["test_secrets_hex"]
    signing = SigningKey(bytes.fromhex(secrets["signing"]))
    assert signing.kid in KeySet.from_jwks(DOCUMENT["jwks"])
    assert "TEST-ONLY" in DOCUMENT["warning"]
