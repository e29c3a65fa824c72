"""Names, roles and scopes of principals, checked without a database."""

from __future__ import annotations

import pytest

from center.errors import InvalidArgumentError
from center.principals import (
    OPERATOR,
    VAULT_NAME,
    Principal,
    check_member_id,
    check_vaults,
    role_and_scope,
    role_for,
)
from vault_core import paths


def test_the_vault_name_rule_is_the_nodes_rule() -> None:
    assert VAULT_NAME.pattern == paths.VAULT_NAME.pattern


@pytest.mark.parametrize("name", ["a", "A-z_0", "x" * 64])
def test_member_ids_are_1_to_64_safe_characters(name: str) -> None:
    assert check_member_id(name) == name


@pytest.mark.parametrize(
    "name", ["", "x" * 65, "a b", "a/b", "é", "center-admin", "sbm_abc", "sbn_x"]
)
def test_bad_or_reserved_member_ids_are_refused(name: str) -> None:
    with pytest.raises(InvalidArgumentError):
        check_member_id(name)


def test_vault_lists_are_sorted_names_or_star_alone() -> None:
    assert check_vaults(["ops", "team", "ops"]) == ["ops", "team"]
    assert check_vaults(["*"]) == ["*"]
    for bad in ([], ["*", "team"], ["Team"], ["../x"]):
        with pytest.raises(InvalidArgumentError):
            check_vaults(bad)


@pytest.mark.parametrize(
    ("role", "scope", "expected"),
    [
        (None, None, ("reader", "read")),
        (None, "rw", ("editor", "read_write")),
        (None, "write", ("editor", "write")),
        (None, "read+write+delete", ("admin", "read_write_delete")),
        (None, "all", ("owner", "allow_all")),
        ("owner", None, ("owner", "read")),
        ("Admin", "read_write", ("admin", "read_write")),
    ],
)
def test_roles_and_scopes_default_as_seed_001_says(
    role: str | None, scope: str | None, expected: tuple[str, str]
) -> None:
    assert role_and_scope(role, scope) == expected


def test_a_scope_above_the_role_cap_is_refused() -> None:
    with pytest.raises(InvalidArgumentError, match="exceeds the cap of role reader"):
        role_and_scope("reader", "read_write")


def test_unknown_roles_and_scopes_are_argument_errors() -> None:
    with pytest.raises(InvalidArgumentError, match="role"):
        role_and_scope("boss", None)
    with pytest.raises(InvalidArgumentError, match="scope"):
        role_and_scope(None, "everything")


def test_role_for_is_the_lowest_covering_role() -> None:
    assert [role_for(s) for s in ("read", "write", "read_write_delete", "allow_all")] == [
        "reader",
        "editor",
        "admin",
        "owner",
    ]


def test_the_operator_owns_every_vault() -> None:
    assert OPERATOR.is_operator
    assert OPERATOR.manages("anything")
    assert OPERATOR.permissions == {"read", "write", "delete", "manage"}


def test_only_admins_and_owners_manage_their_vaults() -> None:
    editor = Principal("e", "editor", "read_write", ("team",))
    admin = Principal("a", "admin", "read", ("team",))
    assert not editor.manages("team")
    assert admin.manages("team")
    assert not admin.manages("ops")


def test_permissions_are_capped_by_the_role() -> None:
    assert Principal("p", "reader", "allow_all", ("*",)).permissions == {"read"}
