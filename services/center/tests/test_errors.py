"""The error hierarchy: drawn in the docstring, one status and one stable code per class."""

from __future__ import annotations

import inspect

from center import errors


def _classes() -> list[type[errors.CenterError]]:
    return [
        cls
        for _, cls in inspect.getmembers(errors, inspect.isclass)
        if issubclass(cls, errors.CenterError)
    ]


def test_every_error_class_is_drawn_in_the_module_tree() -> None:
    tree = errors.__doc__ or ""
    missing = [cls.__name__ for cls in _classes() if cls.__name__ not in tree]
    assert missing == []


def test_every_http_error_has_its_own_code() -> None:
    codes = [cls.code for cls in _classes() if cls is not errors.CenterError]
    assert len(codes) == len(set(codes))


def test_statuses_follow_the_seed_semantics() -> None:
    assert errors.InvalidArgumentError("f", "p").status == 400
    assert errors.UnauthorizedError("m").status == 401
    assert errors.ForbiddenError("m").status == 403
    assert errors.NotFoundError("grant", "g").status == 404
    assert errors.ExistsError("member", "a").status == 409
    assert errors.LimitError("m").status == 429
    assert errors.RestartRequiredError("r").status == 503
    assert errors.AuditChainError(3, "hash_mismatch").status == 503


def test_errors_carry_their_fields() -> None:
    missing = errors.NotFoundError("grant", "g1")
    assert (missing.kind, missing.ident) == ("grant", "g1")
    broken = errors.AuditChainError(7, "seq_gap", "seq 8 where 7 was expected")
    assert (broken.seq, broken.problem) == (7, "seq_gap")
    assert "seq 7" in broken.message


def test_messages_say_what_to_do_next() -> None:
    assert "restart" in errors.RestartRequiredError("audit append failed").message
    assert "list them" in errors.NotFoundError("member", "x").message
