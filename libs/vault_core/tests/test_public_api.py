"""The package's public surface: `__all__` names exactly what `vault_core` exports."""

from __future__ import annotations

import importlib
import types

import pytest

import vault_core
from vault_core import errors

FACES = ("vault_core", "vault_core.index", "vault_core.search", "vault_core.git", "vault_core.ops")


@pytest.mark.parametrize("name", FACES)
def test_all_lists_exactly_the_public_names(name: str) -> None:
    """Every name a face gathers is in its `__all__`; a module listed there is one of the
    package's own (a namespace the services call into, like `vault_core.edit`)."""
    face = importlib.import_module(name)
    listed = set(face.__all__)
    modules = {n for n in listed if isinstance(getattr(face, n), types.ModuleType)}
    public = {
        n
        for n in vars(face)
        if not n.startswith("_") and not isinstance(getattr(face, n), types.ModuleType)
    }
    assert listed - modules == public
    assert all(getattr(face, n).__name__.startswith(f"{vault_core.__name__}.") for n in modules)


def test_every_error_code_is_in_the_closed_registry() -> None:
    classes = [
        obj for obj in vars(errors).values()
        if isinstance(obj, type) and issubclass(obj, errors.VaultError)
    ]  # fmt: skip
    assert len(classes) > 15
    assert {cls.code for cls in classes} <= errors.ERROR_CODES
