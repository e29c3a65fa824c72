"""The package's public API: `__all__` lists exactly the public names it exports."""

from __future__ import annotations

import inspect
import sys

import tickets


def test_all_matches_the_public_names() -> None:
    public = {
        name
        for name, value in vars(tickets).items()
        if not name.startswith("_") and not inspect.ismodule(value)
    }
    assert set(tickets.__all__) == public
    assert len(tickets.__all__) == len(set(tickets.__all__))


def test_every_exported_name_resolves() -> None:
    for name in tickets.__all__:
        assert getattr(tickets, name) is not None


def test_the_library_imports_no_http_client() -> None:
    for module in list(sys.modules):
        if module.startswith("tickets"):
            source = inspect.getsource(sys.modules[module]) if sys.modules[module].__file__ else ""
            assert "httpx" not in source
            assert "urllib.request" not in source
