"""Fixtures for the vault-core tests: a vault in tmp_path with a fixed clock."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from vault_core.index.store import Index
from vault_core.testing import make_vault
from vault_core.vault import Vault

Build = Callable[..., Index]
SECOND = 1_000_000_000
T0 = 1_700_000_000 * SECOND  # 2023-11-14T22:13:20Z


@pytest.fixture
def vault(tmp_path: Path) -> Vault:
    return make_vault(tmp_path)


@pytest.fixture
def build_index(tmp_path: Path) -> Iterator[Build]:
    """A reconciled index over `files`. `mtimes` (path → seconds after T0) pins mtimes;
    with `pin_all`, every other file is pinned at T0."""
    opened: list[Index] = []

    def _build(
        files: dict[str, str | bytes],
        mtimes: dict[str, int] | None = None,
        *,
        pin_all: bool = False,
    ) -> Index:
        vault = make_vault(tmp_path, files)
        pinned = {**dict.fromkeys(files, 0), **(mtimes or {})} if pin_all else (mtimes or {})
        for rel, seconds in pinned.items():
            stamp = T0 + seconds * SECOND
            os.utime(vault.root.joinpath(*rel.split("/")), ns=(stamp, stamp))
        index = Index.open(vault.root, vault.name)
        opened.append(index)
        index.reconcile()
        return index

    yield _build
    for index in opened:
        index.close()
