"""A node's offline verification: each refusal has its reason, in the fixed order."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, get_args

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tickets import (
    InsufficientScopeError,
    KeySet,
    RevocationState,
    SigningKey,
    TokenError,
    Verifier,
    issue,
    sign,
    sign_snapshot,
)
from tickets import testing as t
from tickets.claims import DAY, HOUR
from tickets.scopes import ToolKind, expand, role_cap
from tickets.verify import SIGNATURE_CACHE, Ticket

NOW = t.NOW


def _reason(verifier: Verifier, token: str) -> str:
    with pytest.raises(TokenError) as caught:
        verifier.verify(token)
    return caught.value.reason


def test_valid_token_round_trips_into_a_ticket(verifier: Verifier, key: SigningKey) -> None:
    ticket = verifier.verify(t.mint(key))
    assert ticket.principal == "alice"
    assert ticket.permissions == ticket.granted == {"read", "write"}
    assert ticket.vaults == ("team",)
    assert (ticket.role, ticket.client_id, ticket.kind) == ("editor", "test-client", "oauth")
    assert (ticket.jti, ticket.exp, ticket.kid) == ("jti-alice-0001", NOW + HOUR, key.kid)
    assert (ticket.grant_id, ticket.chain, ticket.stale) == (None, (), False)
    assert ticket.allows_vault("team")
    assert not ticket.allows_vault("ops")


def test_grant_token_issued_and_signed_by_the_center_verifies(
    verifier: Verifier, key: SigningKey
) -> None:
    claims = issue(
        iss=t.ISSUER,
        sub="bob",
        aud=[t.AUDIENCE],
        scope="rwd",
        vaults=["team"],
        role="admin",
        now=NOW,
        chain=["g-root", "g-child"],
    )
    ticket = verifier.verify(sign(claims.to_payload(), key, typ="at+jwt"))
    assert (ticket.grant_id, ticket.chain, ticket.kind) == (
        "g-child",
        ("g-root", "g-child"),
        "grant",
    )
    assert ticket.permissions == {"read", "write", "delete"}


def test_permissions_beyond_the_role_cap_are_dropped(verifier: Verifier) -> None:
    ticket = verifier.verify(t.mint(scope="read write delete manage", role="reader"))
    assert ticket.permissions == {"read"}


@given(
    scope=st.sampled_from(["read", "write", "read_write", "read_write_delete", "allow_all"]),
    role=st.sampled_from(["reader", "editor", "admin", "owner"]),
)
def test_a_role_caps_whatever_the_token_asks(scope: str, role: str) -> None:
    ticket = t.verifier().verify(t.mint(scope=" ".join(sorted(expand(scope))), role=role))
    assert ticket.permissions == expand(scope) & role_cap(role)
    assert ticket.allows("read") == ("read" in role_cap(role) and "read" in expand(scope))


def test_oversized_token_is_refused_before_anything_else(verifier: Verifier) -> None:
    token = t.mint(header={"typ": "JWT"}, sub="x" * 9000)
    assert _reason(verifier, token) == "bad_size"


@pytest.mark.parametrize("typ", ["JWT", "application/jwt", "secondbrain-revocation+jwt", t.DROP])
def test_wrong_or_missing_typ_is_refused(verifier: Verifier, typ: object) -> None:
    assert _reason(verifier, t.mint(header={"typ": typ})) == "bad_typ"


def test_alg_none_is_refused(verifier: Verifier) -> None:
    token = t.mint(header={"alg": "none"}, signer=t.none_signer)
    assert token.endswith(".")
    assert _reason(verifier, token) == "bad_alg"


def test_hs256_keyed_with_the_public_key_is_refused(verifier: Verifier, key: SigningKey) -> None:
    for secret in (key.public.raw, str(key.public.to_jwk()).encode()):
        token = t.mint(header={"alg": "HS256"}, signer=t.hs256_signer(secret))
        assert _reason(verifier, token) == "bad_alg"


@pytest.mark.parametrize("alg", ["EdDSA", "ES256", "RS256", "Ed448", t.DROP])
def test_any_alg_but_ed25519_is_refused(verifier: Verifier, alg: object) -> None:
    assert _reason(verifier, t.mint(header={"alg": alg})) == "bad_alg"


def test_unknown_kid_triggers_exactly_one_refresh(key: SigningKey, other_key: SigningKey) -> None:
    calls: list[int] = []

    def refresh() -> KeySet | None:
        calls.append(1)
        return None

    verifier = t.verifier(key, refresh=refresh)
    token = t.mint(other_key)
    assert _reason(verifier, token) == "unknown_kid"
    assert _reason(verifier, token) == "unknown_kid"
    assert len(calls) == 1


def test_refresh_that_brings_the_new_key_lets_the_token_through(
    key: SigningKey, other_key: SigningKey
) -> None:
    verifier = t.verifier(key, refresh=lambda: t.key_set(key, other_key))
    assert verifier.verify(t.mint(other_key)).kid == other_key.kid
    assert other_key.kid in verifier.keys


def test_refresh_is_rate_limited_per_interval(key: SigningKey, other_key: SigningKey) -> None:
    calls: list[float] = []
    verifier = t.verifier(key, refresh=lambda: calls.append(1) or None, refresh_interval=30)
    token = t.mint(other_key)
    for now in (NOW, NOW + 10, NOW + 29, NOW + 30, NOW + 31):
        with pytest.raises(TokenError):
            verifier.verify(token, now=now)
    assert len(calls) == 2


def test_token_without_kid_is_unknown_and_triggers_no_refresh(key: SigningKey) -> None:
    calls: list[int] = []
    verifier = t.verifier(key, refresh=lambda: calls.append(1) or None)
    assert _reason(verifier, t.mint(header={"kid": t.DROP})) == "unknown_kid"
    assert calls == []


def test_retired_key_verifies_until_not_after(key: SigningKey, other_key: SigningKey) -> None:
    keys = t.key_set(key).rotate(other_key.public, now=NOW - 10, keep_for=100)
    verifier = t.verifier(other_key, keys=keys, state=t.revocation_state(other_key))
    assert verifier.verify(t.mint(key)).kid == key.kid
    assert verifier.verify(t.mint(key, now=NOW + 90), now=NOW + 90).kid == key.kid
    with pytest.raises(TokenError) as caught:
        verifier.verify(t.mint(key, now=NOW + 91), now=NOW + 91)
    assert caught.value.reason == "unknown_kid"


def test_signature_by_another_key_under_our_kid_is_refused(
    verifier: Verifier, key: SigningKey, other_key: SigningKey
) -> None:
    assert _reason(verifier, t.mint(other_key, header={"kid": key.kid})) == "bad_signature"


def test_tampered_payload_is_refused(verifier: Verifier) -> None:
    header, _, signature = t.mint().split(".")
    forged = t.mint(scope="read write delete manage", role="owner").split(".")[1]
    assert _reason(verifier, f"{header}.{forged}.{signature}") == "bad_signature"


@pytest.mark.parametrize(
    "payload",
    [b'{"sub":"alice","sub":"root"}', b"[]", b'{"exp":NaN}', b"null"],
    ids=["duplicate-keys", "array", "nan", "null"],
)
def test_signed_payload_that_is_not_strict_json_is_refused(
    verifier: Verifier, payload: bytes
) -> None:
    assert _reason(verifier, t.mint(payload=payload)) == "bad_json"


def test_signed_payload_with_a_missing_claim_is_refused(verifier: Verifier) -> None:
    assert _reason(verifier, t.mint(jti=t.DROP)) == "bad_claims"


def test_wrong_issuer_is_refused(verifier: Verifier) -> None:
    assert _reason(verifier, t.mint(iss="https://evil.test")) == "bad_iss"


@pytest.mark.parametrize("aud", ["https://node-b.test/mcp", ["https://node-b.test/mcp"], "node-a"])
def test_token_for_another_resource_is_refused(verifier: Verifier, aud: Any) -> None:
    assert _reason(verifier, t.mint(aud=aud)) == "bad_aud"


@pytest.mark.parametrize(
    "aud",
    [
        ["https://node-b.test/mcp", t.AUDIENCE],
        "https://NODE-A.test/mcp/",
        "HTTPS://node-a.test/mcp",
    ],
)
def test_audience_matches_in_a_list_and_regardless_of_host_case_and_slash(
    verifier: Verifier, aud: Any
) -> None:
    assert verifier.verify(t.mint(aud=aud)).principal == "alice"


@pytest.mark.parametrize(
    ("claims", "reason"),
    [
        ({"iat": NOW - 2 * HOUR, "nbf": NOW - 2 * HOUR, "exp": NOW - HOUR}, "expired"),
        ({"iat": NOW - HOUR - 60, "nbf": NOW - HOUR - 60, "exp": NOW - 60}, "expired"),
        ({"iat": NOW + 61, "nbf": NOW + 61, "exp": NOW + HOUR}, "not_yet_valid"),
        ({"nbf": NOW + 61}, "not_yet_valid"),
    ],
    ids=["expired-an-hour-ago", "expired-exactly-skew", "iat-future", "nbf-future"],
)
def test_time_window_is_enforced_beyond_the_skew(
    verifier: Verifier, claims: dict[str, int], reason: str
) -> None:
    assert _reason(verifier, t.mint(**claims)) == reason


@pytest.mark.parametrize(
    "claims",
    [
        {"iat": NOW - HOUR - 30, "nbf": NOW - HOUR - 30, "exp": NOW - 30},
        {"iat": NOW + 59, "nbf": NOW + 59, "exp": NOW + HOUR},
        {"iat": NOW - 59 - HOUR, "nbf": NOW - 59 - HOUR, "exp": NOW - 59},
    ],
    ids=["expired-30s-ago", "issued-59s-ahead", "expired-59s-ago"],
)
def test_skew_inside_60_seconds_is_tolerated(verifier: Verifier, claims: dict[str, int]) -> None:
    assert verifier.verify(t.mint(**claims)).principal == "alice"


@pytest.mark.parametrize(
    "claims",
    [
        {"exp": NOW + HOUR + 1},
        {"client_id": t.DROP, "gid": "g", "chain": ["g"], "dep": 1, "exp": NOW + HOUR + 60},
        {"client_id": t.DROP, "gid": "g", "chain": ["g"], "dep": 1, "exp": NOW + 30},
        {"client_id": t.DROP, "exp": NOW + 90 * DAY + 1},
        {"nbf": NOW + 30, "exp": NOW + 20},
    ],
    ids=[
        "oauth-over-1h",
        "grant-over-60min",
        "grant-under-1min",
        "agent-over-90d",
        "nbf-after-exp",
    ],
)
def test_lifetime_over_the_bound_of_its_kind_is_refused(
    verifier: Verifier, claims: dict[str, Any]
) -> None:
    assert _reason(verifier, t.mint(**claims)) == "lifetime"


def test_agent_token_of_ninety_days_is_accepted(verifier: Verifier) -> None:
    ticket = verifier.verify(t.mint(client_id=t.DROP, exp=NOW + 90 * DAY))
    assert ticket.kind == "agent"


@pytest.mark.parametrize(
    "claims",
    [
        {"gid": "c", "chain": ["a", "b", "c"], "dep": 3},
        {"gid": "b", "chain": ["a", "b"], "dep": 1},
        {"gid": "b", "chain": ["b"], "dep": 2},
        {"dep": 1},
        {"gid": "b", "chain": ["b", "a"], "dep": 2},
    ],
    ids=[
        "depth-3",
        "chain-longer-than-dep",
        "dep-longer-than-chain",
        "dep-without-grant",
        "gid-not-last",
    ],
)
def test_delegation_depth_and_chain_rules_are_enforced(
    verifier: Verifier, claims: dict[str, Any]
) -> None:
    assert _reason(verifier, t.mint(**claims)) == "depth"


def _with_state(key: SigningKey, **snapshot: Any) -> Verifier:
    return t.verifier(key, state=t.revocation_state(key, **snapshot))


GRANT = {"gid": "g-child", "chain": ["g-root", "g-child"], "dep": 2, "exp": NOW + 900}


@pytest.mark.parametrize(
    ("snapshot", "claims", "reason"),
    [
        ({"tokens": {"jti-alice-0001": NOW + HOUR}}, {}, "revoked"),
        ({"grants": {"g-child": NOW + 900}}, GRANT, "revoked"),
        ({"grants": {"g-root": NOW + 900}}, GRANT, "revoked"),
        ({"min_gen": {"alice": 2}}, {}, "generation"),
    ],
    ids=["jti", "gid", "ancestor", "generation"],
)
def test_revocation_snapshot_refuses_what_it_lists(
    key: SigningKey, snapshot: dict[str, Any], claims: dict[str, Any], reason: str
) -> None:
    assert _reason(_with_state(key, **snapshot), t.mint(key, **claims)) == reason


def test_revoked_kid_is_refused_even_with_a_good_signature(
    key: SigningKey, other_key: SigningKey
) -> None:
    state = t.revocation_state(other_key, revoked_kids=frozenset({key.kid}))
    verifier = t.verifier(key, keys=t.key_set(key, other_key), state=state)
    assert _reason(verifier, t.mint(key)) == "key_revoked"


def test_generation_at_the_minimum_is_accepted(key: SigningKey) -> None:
    assert _with_state(key, min_gen={"alice": 1}).verify(t.mint(key)).principal == "alice"


def test_node_without_any_snapshot_refuses_reads_and_writes(key: SigningKey) -> None:
    for read_when_stale in (False, True):
        verifier = t.verifier(key, state=RevocationState(), read_when_stale=read_when_stale)
        assert _reason(verifier, t.mint(key, scope="read", role="reader")) == "stale"


def test_stale_snapshot_refuses_everything_by_default(key: SigningKey) -> None:
    verifier = t.verifier(key, state=t.revocation_state(key, now=NOW - 121))
    assert _reason(verifier, t.mint(key, scope="read", role="reader")) == "stale"


def test_snapshot_exactly_max_stale_old_is_still_fresh(key: SigningKey) -> None:
    verifier = t.verifier(key, state=t.revocation_state(key, now=NOW - 120))
    assert verifier.verify(t.mint(key)).stale is False


def test_stale_snapshot_with_reads_allowed_lets_reads_through_but_not_writes(
    key: SigningKey,
) -> None:
    state = t.revocation_state(key, now=NOW - 121)
    ticket = t.verifier(key, state=state, read_when_stale=True).verify(t.mint(key))
    assert ticket.stale
    assert ticket.permissions == {"read"}
    assert ticket.granted == {"read", "write"}
    ticket.require("read")
    with pytest.raises(TokenError) as caught:
        ticket.require("write")
    assert caught.value.reason == "stale"


def test_stale_snapshot_still_refuses_revoked_tokens(key: SigningKey) -> None:
    state = t.revocation_state(key, now=NOW - 500, tokens={"jti-alice-0001": NOW + HOUR})
    verifier = t.verifier(key, state=state, read_when_stale=True)
    assert _reason(verifier, t.mint(key)) == "revoked"


def test_missing_permission_is_insufficient_scope_not_a_401(verifier: Verifier) -> None:
    ticket = verifier.verify(t.mint(scope="read", role="reader"))
    with pytest.raises(InsufficientScopeError) as caught:
        ticket.require("write")
    assert caught.value.missing == {"write"}


@pytest.mark.parametrize(
    ("header", "claims", "reason"),
    [
        ({"typ": "JWT", "alg": "none"}, {}, "bad_typ"),
        ({"alg": "HS256", "kid": "nobody"}, {}, "bad_alg"),
        ({"kid": "nobody"}, {"iss": "https://evil.test"}, "unknown_kid"),
        ({}, {"iss": "https://evil.test", "aud": "https://other"}, "bad_iss"),
        ({}, {"aud": "https://other", "exp": NOW - HOUR, "iat": NOW - 2 * HOUR}, "bad_aud"),
        ({}, {"exp": NOW - HOUR, "iat": NOW - 2 * HOUR, "dep": 3}, "expired"),
        ({}, {"exp": NOW + 2 * HOUR, "dep": 3}, "lifetime"),
        ({}, {"dep": 3, "mgen": 0}, "depth"),
    ],
)
def test_checks_run_in_the_designed_order(
    verifier: Verifier, header: dict[str, Any], claims: dict[str, Any], reason: str
) -> None:
    verifier_state = t.revocation_state(min_gen={"alice": 5})
    verifier.revocation = verifier_state
    assert _reason(verifier, t.mint(header=header, **claims)) == reason


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=300))
def test_arbitrary_text_raises_only_token_error(text: str) -> None:
    with pytest.raises(TokenError):
        t.verifier().verify(text)


VALID = t.mint()


@settings(max_examples=300, deadline=None)
@given(position=st.integers(0, len(VALID) - 1), char=st.sampled_from("AQgw_-.=+/ eyJ0"))
def test_any_one_character_change_is_refused_with_a_token_error(position: int, char: str) -> None:
    mutated = VALID[:position] + char + VALID[position + 1 :]
    if mutated == VALID:
        return
    with pytest.raises(TokenError):
        t.verifier().verify(mutated)


@pytest.mark.parametrize("typ", ["application/at+jwt", "AT+JWT", "Application/At+Jwt"])
def test_typ_is_compared_as_a_media_type(verifier: Verifier, typ: str) -> None:
    assert verifier.verify(t.mint(header={"typ": typ})).principal == "alice"


# The signature cache: a token checked once is not verified again, but nothing that can
# change between two calls is remembered.


def test_a_token_checked_once_is_still_refused_once_revoked(key: SigningKey) -> None:
    state = t.revocation_state(key)
    verifier = t.verifier(key, state=state)
    token = t.mint(key)
    assert verifier.verify(token).principal == "alice"
    revoking = t.snapshot(2, tokens={"jti-alice-0001": NOW + HOUR})
    state.accept(sign_snapshot(revoking, key), t.key_set(key), issuer=t.ISSUER, now=NOW)
    assert _reason(verifier, token) == "revoked"


def test_a_token_checked_once_still_expires(key: SigningKey) -> None:
    verifier = t.verifier(key)
    token = t.mint(key)
    assert verifier.verify(token, now=NOW).principal == "alice"
    with pytest.raises(TokenError) as caught:
        verifier.verify(token, now=NOW + HOUR + 61)
    assert caught.value.reason == "expired"


def test_a_token_checked_once_is_refused_when_its_key_leaves_the_set(
    key: SigningKey, other_key: SigningKey
) -> None:
    verifier = t.verifier(key)
    token = t.mint(key)
    assert verifier.verify(token).principal == "alice"
    verifier.keys = t.key_set(other_key)
    assert _reason(verifier, token) == "unknown_kid"


def test_a_refreshed_key_set_checks_the_signature_again(key: SigningKey) -> None:
    verifier = t.verifier(key)
    token = t.mint(key)
    verifier.verify(token)
    verifier.keys = KeySet.from_jwks(t.key_set(key).to_jwks())  # as a JWKS refresh does
    assert verifier._checked[token][2] is not verifier.keys.get(key.kid)
    assert verifier.verify(token).principal == "alice"
    assert verifier._checked[token][2] is verifier.keys.get(key.kid)


def test_the_cache_stays_bounded(key: SigningKey) -> None:
    verifier = t.verifier(key)
    for number in range(SIGNATURE_CACHE + 10):
        verifier.verify(t.mint(key, jti=f"jti-{number:06d}"))
    assert len(verifier._checked) == SIGNATURE_CACHE


def test_needs_no_fetch_only_for_a_known_key_or_a_hopeless_header(
    key: SigningKey, other_key: SigningKey
) -> None:
    verifier = t.verifier(key)
    assert verifier.needs_no_fetch(t.mint(key))
    assert not verifier.needs_no_fetch(t.mint(other_key))
    assert verifier.needs_no_fetch("not.a-token")


# ---------------------------------------------------------------- may this token do this


def holding(verifier: Verifier, held: frozenset[str]) -> Ticket:
    """A verified owner's ticket, narrowed to `held` as a role cap or staleness narrows it."""
    return replace(verifier.verify(t.mint(role="owner")), permissions=held, granted=held)


def test_vault_create_needs_allow_all_and_nothing_less(verifier: Verifier) -> None:
    assert holding(verifier, expand("allow_all")).allows("vault_create")
    with pytest.raises(InsufficientScopeError) as caught:
        holding(verifier, expand("read_write_delete")).require("vault_create")
    assert caught.value.missing == {"manage"}


def test_write_only_caller_may_only_add_and_never_sees_content(verifier: Verifier) -> None:
    ticket = holding(verifier, expand("write"))
    assert ticket.allows("add")
    assert not ticket.allows("write")
    assert not ticket.allows("delete")
    assert not ticket.allows("read")
    assert not ticket.sees_content
    assert holding(verifier, expand("read_write")).sees_content


def test_an_overwrite_that_displaces_a_note_needs_delete(verifier: Verifier) -> None:
    with pytest.raises(InsufficientScopeError):
        holding(verifier, expand("read_write")).require("write", displaces=True)
    holding(verifier, expand("rwd")).require("write", displaces=True)


@given(
    held=st.frozensets(st.sampled_from(["read", "write", "delete", "manage"])),
    kind=st.sampled_from(get_args(ToolKind)),
    displaces=st.booleans(),
)
def test_allows_and_require_agree(held: frozenset[str], kind: ToolKind, displaces: bool) -> None:
    ticket = holding(t.verifier(), held)  # type: ignore[arg-type]
    if ticket.allows(kind, displaces=displaces):
        ticket.require(kind, displaces=displaces)
    else:
        with pytest.raises(InsufficientScopeError):
            ticket.require(kind, displaces=displaces)
