"""Wire scopes, aliases, role caps, narrowing and the permissions each kind of tool needs."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tickets import (
    PERMISSIONS,
    ROLES,
    SCOPES,
    ScopeExceededError,
    UnknownRoleError,
    UnknownScopeError,
    narrow,
    parse_role,
    parse_scope,
)
from tickets import scopes as s

permission_sets = st.frozensets(st.sampled_from(PERMISSIONS))
scope_names = st.sampled_from(SCOPES)
roles = st.sampled_from(ROLES)


def test_each_wire_scope_expands_to_its_atomic_permissions() -> None:
    assert {name: s.expand(name) for name in SCOPES} == {
        "read": {"read"},
        "write": {"write"},
        "read_write": {"read", "write"},
        "read_write_delete": {"read", "write", "delete"},
        "allow_all": {"read", "write", "delete", "manage"},
    }


@pytest.mark.parametrize(
    ("text", "scope"),
    [
        ("r", "read"),
        ("rw", "read_write"),
        ("RWD", "read_write_delete"),
        ("all", "allow_all"),
        ("w", "write"),
        ("read+write+delete", "read_write_delete"),
        ("Read-Write", "read_write"),
        (" allow all ", "allow_all"),
        ("read_write", "read_write"),
    ],
)
def test_cli_aliases_and_spellings_name_a_wire_scope(text: str, scope: str) -> None:
    assert parse_scope(text) == scope


@pytest.mark.parametrize("text", ["", "admin", "read,write", "*", "delete", "manage"])
def test_unknown_scope_is_refused_with_the_valid_names(text: str) -> None:
    with pytest.raises(UnknownScopeError, match="read_write_delete") as caught:
        parse_scope(text)
    assert caught.value.value == text


def test_roles_cap_scopes_as_the_design_fixes() -> None:
    assert {role: s.scope_name(s.role_cap(role)) for role in ROLES} == {
        "reader": "read",
        "editor": "read_write",
        "admin": "read_write_delete",
        "owner": "allow_all",
    }


def test_unknown_role_is_refused() -> None:
    with pytest.raises(UnknownRoleError):
        parse_role("superuser")
    assert parse_role(" Owner ") == "owner"


def test_an_editor_asking_for_allow_all_gets_read_write() -> None:
    assert s.expand("allow_all") & s.role_cap("editor") == {"read", "write"}
    assert not s.expand("read_write_delete") <= s.role_cap("editor")


def test_narrowing_to_more_than_the_parent_names_the_excess() -> None:
    with pytest.raises(ScopeExceededError) as caught:
        narrow("read_write", "rwd")
    assert caught.value.extra == {"delete"}
    assert "delete not held" in caught.value.message


def test_write_only_is_not_narrower_than_read() -> None:
    with pytest.raises(ScopeExceededError):
        narrow("read", "write")
    assert narrow("read_write", "write") == {"write"}


def test_scope_claim_lists_atomic_permissions_in_canonical_order() -> None:
    assert s.to_claim(["manage", "read", "delete", "write"]) == "read write delete manage"
    assert s.from_claim("write  read") == {"read", "write"}
    with pytest.raises(UnknownScopeError):
        s.from_claim("read read_write")


@pytest.mark.parametrize(
    ("kind", "displaces", "needed"),
    [
        ("read", False, {"read"}),
        ("add", False, {"write"}),
        ("add", True, {"read", "write", "delete"}),
        ("write", False, {"read", "write"}),
        ("write", True, {"read", "write", "delete"}),
        ("delete", False, {"read", "write", "delete"}),
        ("vault_create", False, {"read", "write", "delete", "manage"}),
    ],
)
def test_tool_kinds_need_the_permissions_of_the_matrix(
    kind: s.ToolKind, displaces: bool, needed: set[str]
) -> None:
    assert s.needed(kind, displaces=displaces) == needed


@given(parent=permission_sets, child=permission_sets)
def test_narrow_never_yields_more_than_the_parent(
    parent: frozenset[str], child: frozenset[str]
) -> None:
    if child <= parent:
        assert narrow(parent, child) == child
    else:
        with pytest.raises(ScopeExceededError) as caught:
            narrow(parent, child)
        assert caught.value.extra == child - parent
        assert caught.value.extra


@given(low=roles, high=roles)
def test_role_caps_grow_with_the_role(low: str, high: str) -> None:
    if ROLES.index(low) <= ROLES.index(high):
        assert s.role_cap(low) <= s.role_cap(high)


@given(scope=scope_names, other=scope_names)
def test_bundles_nest_except_write_only(scope: str, other: str) -> None:
    order = ["read", "read_write", "read_write_delete", "allow_all"]
    if scope in order and other in order and order.index(scope) <= order.index(other):
        assert s.expand(scope) <= s.expand(other)
    assert s.scope_name(s.expand(scope)) == scope


@given(held=permission_sets)
def test_scope_claim_round_trips(held: frozenset[str]) -> None:
    assert s.from_claim(s.to_claim(held)) == held
