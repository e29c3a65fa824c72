"""Golden vectors in tests/vectors/center_tokens.json — tokens a real center issued — each
give exactly their verdict at a node, and a center today still issues tokens of the
recorded shape (same header, same claim names), so the file cannot silently go stale."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tickets import KeySet, RevocationState, SigningKey, TokenError, Verifier
from tickets.keys import b64url_decode

HERE = Path(__file__).resolve().parent
VECTORS = HERE.parents[2] / "tests" / "vectors" / "center_tokens.json"
DOCUMENT: dict[str, Any] = json.loads(VECTORS.read_text(encoding="utf-8"))


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_center_vectors", HERE / "make_vectors.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _verdict(document: dict[str, Any], vector: dict[str, Any]) -> dict[str, Any]:
    keys = KeySet.from_jwks(document["jwks"])
    now = vector.get("now", document["now"])
    state = RevocationState()
    snapshot = vector.get("revocation", document["revocation"])
    if snapshot is not None:
        state.accept(snapshot, keys, issuer=document["issuer"], now=document["now"])
    verifier = Verifier(
        keys=keys,
        issuer=document["issuer"],
        audience=vector.get("audience", document["audience"]),
        revocation=state,
        skew=document["skew"],
        max_stale=document["max_stale"],
        clock=lambda: now,
    )
    try:
        ticket = verifier.verify(vector["token"])
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
            "exp": ticket.exp,
            "kind": ticket.kind,
            "stale": ticket.stale,
        },
    }


@pytest.mark.parametrize(
    "vector", DOCUMENT["vectors"], ids=[v["name"] for v in DOCUMENT["vectors"]]
)
def test_a_center_issued_vector_gives_exactly_its_verdict(vector: dict[str, Any]) -> None:
    assert _verdict(DOCUMENT, vector) == vector["expect"]


def test_the_vectors_cover_what_a_centers_state_can_refuse() -> None:
    reasons = {v["expect"].get("reason") for v in DOCUMENT["vectors"]} - {None}
    wanted = {"bad_aud", "expired", "bad_signature", "unknown_kid", "revoked", "generation"}
    assert wanted | {"stale"} <= reasons
    kinds = {v["expect"]["ticket"]["kind"] for v in DOCUMENT["vectors"] if v["expect"]["ok"]}
    assert kinds == {"agent", "grant"}


def test_the_vector_key_is_the_published_test_only_key() -> None:
    key = SigningKey(bytes.fromhex(DOCUMENT["test_secret_hex"]))
    assert key.kid in KeySet.from_jwks(DOCUMENT["jwks"])
    assert "TEST-ONLY" in DOCUMENT["warning"]


def _shape(token: str) -> tuple[list[str], list[str]]:
    header, payload = (json.loads(b64url_decode(part)) for part in token.split(".")[:2])
    return sorted(header), sorted(payload)


@pytest.mark.asyncio
async def test_a_center_today_issues_what_the_vectors_recorded() -> None:
    fresh = await _generator().build()
    recorded = {v["name"]: v for v in DOCUMENT["vectors"]}
    assert [v["name"] for v in fresh["vectors"]] == list(recorded)
    for vector in fresh["vectors"]:
        old = recorded[vector["name"]]
        assert _verdict(fresh, vector) == vector["expect"], vector["name"]
        assert vector["expect"].get("reason") == old["expect"].get("reason"), vector["name"]
        if vector["expect"]["ok"]:
            assert _shape(vector["token"]) == _shape(old["token"]), vector["name"]
