"""The claim set: its three kinds, their lifetime bounds, delegation depth, strict types."""

from __future__ import annotations

from typing import Any

import pytest

from tickets import Claims, ClaimsError, issue
from tickets import testing as t
from tickets.claims import DAY, HOUR, MINUTE, new_jti, plain_id


def _issue(**overrides: Any) -> Claims:
    arguments: dict[str, Any] = {
        "iss": t.ISSUER,
        "sub": "alice",
        "aud": t.AUDIENCE,
        "scope": "read_write",
        "vaults": ["team"],
        "role": "editor",
        "now": t.NOW,
        "mgen": 3,
    }
    return issue(**{**arguments, **overrides})


@pytest.mark.parametrize(
    ("overrides", "kind", "lifetime"),
    [
        ({"client_id": "claude"}, "oauth", HOUR),
        ({"chain": ["g-root"]}, "grant", 15 * MINUTE),
        ({"chain": ["g-root"], "client_id": "claude"}, "grant", 15 * MINUTE),
        ({}, "agent", 30 * DAY),
    ],
)
def test_the_kind_follows_from_the_claims_with_its_default_lifetime(
    overrides: dict[str, Any], kind: str, lifetime: int
) -> None:
    claims = _issue(**overrides)
    assert claims.kind == kind
    assert claims.exp - claims.iat == lifetime


@pytest.mark.parametrize(
    ("overrides", "seconds"),
    [
        ({"client_id": "claude"}, HOUR + 1),
        ({"chain": ["g"]}, 59),
        ({"chain": ["g"]}, HOUR + 1),
        ({}, 90 * DAY + 1),
        ({}, 0),
    ],
    ids=["oauth-over-1h", "grant-under-1min", "grant-over-60min", "agent-over-90d", "zero"],
)
def test_lifetime_outside_the_kinds_bound_is_refused(
    overrides: dict[str, Any], seconds: int
) -> None:
    with pytest.raises(ClaimsError) as caught:
        _issue(lifetime=seconds, **overrides)
    assert caught.value.claim == "exp"


@pytest.mark.parametrize(("kind", "overrides"), [("agent", {}), ("grant", {"chain": ["g"]})])
def test_lifetime_at_the_upper_bound_is_accepted(kind: str, overrides: dict[str, Any]) -> None:
    bound = 90 * DAY if kind == "agent" else HOUR
    assert _issue(lifetime=bound, **overrides).lifetime == bound


def test_chain_sets_grant_id_and_depth() -> None:
    claims = _issue(chain=["g-root", "g-child"])
    assert (claims.gid, claims.chain, claims.dep) == ("g-child", ("g-root", "g-child"), 2)
    assert claims.depth_problem() is None


def test_delegation_deeper_than_two_is_refused() -> None:
    with pytest.raises(ClaimsError, match="depth 3 exceeds 2"):
        _issue(chain=["a", "b", "c"])


def test_scope_beyond_the_role_cap_is_refused_at_issue() -> None:
    with pytest.raises(ClaimsError, match="exceeds the cap of role editor"):
        _issue(scope="allow_all")


def test_payload_round_trips_and_a_single_audience_is_a_string() -> None:
    claims = _issue(chain=["g"], client_id="claude")
    payload = claims.to_payload()
    assert payload["aud"] == t.AUDIENCE
    assert payload["scope"] == "read write"
    assert Claims.from_payload(payload) == claims
    several = _issue(aud=[t.AUDIENCE, "https://node-b.test/mcp"]).to_payload()
    assert several["aud"] == [t.AUDIENCE, "https://node-b.test/mcp"]


def test_a_token_without_grant_carries_no_chain_claims() -> None:
    payload = _issue().to_payload()
    assert not {"gid", "chain", "dep", "client_id"} & set(payload)


@pytest.mark.parametrize(
    ("change", "claim"),
    [
        ({"sub": t.DROP}, "sub"),
        ({"sub": ""}, "sub"),
        ({"exp": 1.5e9}, "exp"),
        ({"exp": True}, "exp"),
        ({"iat": -1}, "iat"),
        ({"aud": []}, "aud"),
        ({"aud": [1]}, "aud"),
        ({"vaults": ["*", "team"]}, "vaults"),
        ({"vaults": []}, "vaults"),
        ({"role": "superuser"}, "role"),
        ({"scope": "read_write"}, "scope"),
        ({"scope": ["read"]}, "scope"),
        ({"mgen": t.DROP}, "mgen"),
        ({"chain": "g"}, "chain"),
        ({"client_id": None}, "client_id"),
    ],
)
def test_a_missing_or_mistyped_claim_is_named(change: dict[str, object], claim: str) -> None:
    with pytest.raises(ClaimsError) as caught:
        Claims.from_payload(t.claims(**change))
    assert caught.value.claim == claim


def test_unknown_claims_are_ignored() -> None:
    assert Claims.from_payload(t.claims(auth_time=1, acr="1")).sub == "alice"


def test_all_vaults_is_a_star_alone() -> None:
    claims = Claims.from_payload(t.claims(vaults=["*"]))
    assert claims.allows_vault("anything")
    assert not Claims.from_payload(t.claims()).allows_vault("ops")


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"dep": 1}, "chain has 0 grants but dep is 1"),
        ({"gid": "g", "chain": ["g"], "dep": 3}, "depth 3 exceeds 2"),
        ({"gid": "g", "chain": ["x", "g"], "dep": 1}, "chain has 2 grants"),
        ({"gid": "g", "chain": ["g", "x"], "dep": 2}, "gid is not the last"),
        ({"gid": "g", "chain": ["g", "g"], "dep": 2}, "repeats"),
        ({"chain": ["g"], "dep": 1}, "gid is not the last"),
    ],
)
def test_depth_problems_are_described(change: dict[str, object], problem: str) -> None:
    found = Claims.from_payload(t.claims(**change)).depth_problem()
    assert found is not None
    assert problem in found


def test_an_id_never_begins_with_a_dash_so_a_command_line_takes_it() -> None:
    assert plain_id("-abc") == "Aabc"
    assert plain_id("xyz") == "xyz"
    assert not any(new_jti().startswith("-") for _ in range(2000))
