"""The package's public surface: `__all__` names exactly what `vault_core` exports."""

from __future__ import annotations

import vault_core
from vault_core import errors


def test_all_lists_exactly_the_public_names() -> None:
    public = {
        name
        for name in vars(vault_core)
        if not name.startswith("_") and not isinstance(getattr(vault_core, name), type(vault_core))
    }
    assert set(vault_core.__all__) == public


def test_every_error_code_is_in_the_closed_registry() -> None:
    classes = [
        obj for obj in vars(errors).values()
        if isinstance(obj, type) and issubclass(obj, errors.VaultError)
    ]  # fmt: skip
    assert len(classes) > 15
    assert {cls.code for cls in classes} <= errors.ERROR_CODES
