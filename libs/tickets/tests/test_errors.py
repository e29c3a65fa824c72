"""The error hierarchy: drawn in the docstring, rooted in TicketsError, fields carried."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import tickets
from tickets import errors

SOURCE = Path(tickets.__file__).parent


def _error_classes() -> dict[str, type[errors.TicketsError]]:
    return {
        name: value
        for name, value in vars(errors).items()
        if inspect.isclass(value) and issubclass(value, errors.TicketsError)
    }


def test_docstring_tree_names_every_error_and_nothing_else() -> None:
    doc = errors.__doc__ or ""
    drawn = set(re.findall(r"(?:├── |└── |^\s{4})([A-Z]\w+Error)\b", doc, re.MULTILINE))
    assert drawn == set(_error_classes())


def test_tree_indentation_matches_the_class_hierarchy() -> None:
    doc = errors.__doc__ or ""
    for line in doc.splitlines():
        match = re.match(r"^(\s*(?:│\s+|\s{4})*)(?:├── |└── )([A-Z]\w+Error)", line)
        if match:
            depth = len(match.group(1)) // 4  # the docstring's own indent counts as one
            cls = _error_classes()[match.group(2)]
            assert len(cls.__mro__) - len(errors.TicketsError.__mro__) == depth, match.group(2)


def test_every_error_is_a_tickets_error_with_a_message() -> None:
    samples = [
        errors.SecretError("short"),
        errors.JWKError("no x"),
        errors.ClaimsError("exp", "missing"),
        errors.TokenError("expired", "exp 1"),
        errors.SnapshotError("bad_typ"),
        errors.RollbackError(5, 4),
        errors.UnknownScopeError("rwx"),
        errors.UnknownRoleError("root"),
        errors.ScopeExceededError({"read"}, {"read", "write"}),
        errors.InsufficientScopeError({"write"}, {"read"}),
        errors.RecordError("object", "token"),
        errors.CheckpointError("bad_signature"),
    ]
    assert {type(e) for e in samples} | {
        errors.TicketsError,
        errors.ScopeError,
        errors.AuditError,
    } == set(_error_classes().values())
    for error in samples:
        assert isinstance(error, errors.TicketsError)
        assert error.message == str(error)
        assert error.message


def test_errors_carry_their_fields() -> None:
    assert errors.TokenError("bad_aud", "aud x").reason == "bad_aud"
    assert errors.ClaimsError("exp", "missing").claim == "exp"
    assert errors.RollbackError(5, 4).offered_seq == 4
    assert errors.InsufficientScopeError({"write", "read"}, {"read"}).missing == {"write"}


def test_every_reason_the_code_raises_is_a_declared_reason() -> None:
    raised: set[str] = set()
    for path in SOURCE.glob("*.py"):
        text = path.read_text()
        raised |= set(re.findall(r'_refuse\(\s*"(\w+)"', text))
        raised |= set(re.findall(r'TokenError\(\s*"(\w+)"', text))
        raised |= set(re.findall(r'return "(\w+)", f"', text))
    assert raised == set(errors.REASONS)


def test_no_broad_exception_handler_in_the_library() -> None:
    broad = ("except " + "Exception", "except" + ":", "except " + "BaseException")
    for path in SOURCE.glob("*.py"):
        text = path.read_text()
        assert not [b for b in broad if b in text], path.name
