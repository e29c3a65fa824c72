"""The closed registry of error codes: complete for the library, used by every node error."""

from __future__ import annotations

import inspect

import pytest

import vault_core
from vault_core import errors as core_errors
from vault_node import errors
from vault_node.errors import ERROR_CODES, NodeError


def test_every_vault_core_error_code_is_in_the_registry() -> None:
    classes = [
        c
        for _, c in inspect.getmembers(core_errors, inspect.isclass)
        if issubclass(c, vault_core.VaultError)
    ]
    assert {c.code for c in classes} <= ERROR_CODES
    assert vault_core.ERROR_CODES <= ERROR_CODES


def test_every_node_error_class_carries_a_registered_code() -> None:
    classes = [
        c for _, c in inspect.getmembers(errors, inspect.isclass) if issubclass(c, NodeError)
    ]
    assert {c.code for c in classes} <= ERROR_CODES


def test_an_unregistered_code_cannot_be_raised() -> None:
    with pytest.raises(AssertionError):
        errors.ToolError("x", "made_up_code")


def test_the_permission_error_names_what_is_missing() -> None:
    denied = errors.InsufficientPermissionError({"read", "write"}, {"read"}, tool="note_edit")
    assert denied.message == (
        "note_edit needs the write permission, which your token does not hold (it has read); "
        "ask for a grant with scope read_write"
    )
    blind = errors.InsufficientPermissionError({"read"}, {"write"}, blind=("note_create",))
    assert "it has write" in blind.message
    assert "blind" in blind.message
    assert "only note_create" in blind.message
    assert denied.code == "forbidden"


def test_a_config_error_lists_every_problem_on_its_own_line() -> None:
    error = errors.ConfigError(["a: bad", "b: worse"])
    assert str(error) == "invalid configuration:\n  a: bad\n  b: worse"
